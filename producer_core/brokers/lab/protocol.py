"""The Kafka wire details the lab facade needs, as pure functions on frames (sans-I/O).

A frame here is one request or response without its 4-byte length prefix. Requests are
only read (api key, version, correlation id, and for a few APIs a field of the body);
they are forwarded unchanged. Responses that name brokers are decoded and re-encoded with
aiokafka's protocol structures so they describe the lab's N-node view:

* ApiVersions: versions capped so every response the facade must rewrite is one it can
  decode and encode (Metadata v0-5, FindCoordinator v0-1, CreateTopics and DeleteTopics
  v0-3, DescribeCluster v0-1), and APIs that name brokers but are not rewritten hidden;
* Metadata: brokers = the lab's nodes, controller = node 1, each partition's leader from
  the layout with replicas = ISR = [leader];
* FindCoordinator: the coordinator the layout picks for the key;
* DescribeCluster: the lab's nodes and controller;
* CreateTopics / DeleteTopics: the per-backend answers merged into one.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from io import BytesIO
from typing import Any

from aiokafka.protocol.admin import (
    ApiVersionResponse_v0,
    ApiVersionResponse_v1,
    ApiVersionResponse_v2,
    CreateTopicsResponse_v0,
    CreateTopicsResponse_v1,
    CreateTopicsResponse_v2,
    CreateTopicsResponse_v3,
    DeleteTopicsResponse_v0,
    DeleteTopicsResponse_v1,
    DeleteTopicsResponse_v2,
    DeleteTopicsResponse_v3,
)
from aiokafka.protocol.api import Response
from aiokafka.protocol.coordination import (
    FindCoordinatorRequest_v0,
    FindCoordinatorRequest_v1,
    FindCoordinatorResponse_v0,
    FindCoordinatorResponse_v1,
)
from aiokafka.protocol.metadata import (
    MetadataRequest_v0,
    MetadataRequest_v1,
    MetadataRequest_v2,
    MetadataRequest_v3,
    MetadataRequest_v4,
    MetadataRequest_v5,
    MetadataResponse_v0,
    MetadataResponse_v1,
    MetadataResponse_v2,
    MetadataResponse_v3,
    MetadataResponse_v4,
    MetadataResponse_v5,
)
from aiokafka.protocol.types import (
    CompactArray,
    CompactString,
    Int8,
    Int16,
    Int32,
    Schema,
    TaggedFields,
    UnsignedVarInt32,
)

from producer_core.brokers.lab.layout import Layout

API_PRODUCE = 0
API_FETCH = 1
API_METADATA = 3
API_FIND_COORDINATOR = 10
API_API_VERSIONS = 18
API_CREATE_TOPICS = 19
API_DELETE_TOPICS = 20
API_CREATE_PARTITIONS = 37
API_ELECT_LEADERS = 43
API_ALTER_PARTITION_REASSIGNMENTS = 45
API_LIST_PARTITION_REASSIGNMENTS = 46
API_DESCRIBE_CLUSTER = 60
API_DESCRIBE_TOPIC_PARTITIONS = 75

#: Highest version the facade can decode and re-encode, per API it rewrites.
VERSION_CAPS = {
    API_METADATA: 5,
    API_FIND_COORDINATOR: 1,
    API_CREATE_TOPICS: 3,
    API_DELETE_TOPICS: 3,
    API_DESCRIBE_CLUSTER: 1,
}
#: APIs that name brokers or change the partition layout and are not rewritten: a backend
#: would answer with its own single-node view, so clients are told they do not exist.
HIDDEN_APIS = frozenset({
    API_CREATE_PARTITIONS, API_ELECT_LEADERS, API_ALTER_PARTITION_REASSIGNMENTS,
    API_LIST_PARTITION_REASSIGNMENTS, API_DESCRIBE_TOPIC_PARTITIONS,
})
#: APIs applied to every backend (the facade merges their answers).
FAN_OUT_APIS = frozenset({API_CREATE_TOPICS, API_DELETE_TOPICS})

TOPIC_ALREADY_EXISTS = 36
UNKNOWN_TOPIC_OR_PARTITION = 3

#: First request version with a flexible (v2, tagged) header, for the APIs whose request
#: body the facade reads.
_FLEXIBLE_REQUEST_FROM = {API_PRODUCE: 9, API_METADATA: 9, API_FIND_COORDINATOR: 3}

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_REQUEST_HEAD = struct.Struct(">hhih")  # api_key, api_version, correlation_id, client_id len


class ProtocolError(Exception):
    """A frame the facade cannot handle (malformed, or a version it did not allow)."""


# ------------------------------------------------------------------------------ requests


@dataclass(frozen=True)
class RequestInfo:
    api_key: int
    api_version: int
    correlation_id: int
    header_end: int  # end of the header up to client_id (tagged fields not included)

    def body_offset(self, frame: bytes) -> int:
        """Where the request body starts (needs the API's flexible-header threshold)."""
        flexible_from = _FLEXIBLE_REQUEST_FROM.get(self.api_key)
        if flexible_from is None:
            raise ProtocolError(f"body offset of api key {self.api_key} is not known")
        if self.api_version < flexible_from:
            return self.header_end
        buf = BytesIO(frame)
        buf.seek(self.header_end)
        Tags.decode(buf)
        return buf.tell()


def parse_request(frame: bytes) -> RequestInfo:
    """Read the request header fields every request shares."""
    if len(frame) < _REQUEST_HEAD.size:
        raise ProtocolError(f"request frame of {len(frame)} bytes is shorter than a header")
    api_key, api_version, correlation_id, client_len = _REQUEST_HEAD.unpack_from(frame)
    header_end = _REQUEST_HEAD.size + max(client_len, 0)
    if header_end > len(frame):
        raise ProtocolError("request header runs past the end of its frame")
    return RequestInfo(api_key, api_version, correlation_id, header_end)


def expects_response(info: RequestInfo, frame: bytes) -> bool:
    """False only for a Produce request with acks=0, which brokers never answer."""
    if info.api_key != API_PRODUCE:
        return True
    buf = BytesIO(frame)
    buf.seek(info.body_offset(frame))
    if info.api_version >= 9:
        CompactString().decode(buf)  # transactional_id
    elif info.api_version >= 3:
        _skip_string(buf)
    (acks,) = _INT16.unpack(buf.read(2))
    return acks != 0


_METADATA_REQUESTS = [MetadataRequest_v0, MetadataRequest_v1, MetadataRequest_v2,
                      MetadataRequest_v3, MetadataRequest_v4, MetadataRequest_v5]


def metadata_topics(info: RequestInfo, frame: bytes) -> list[str] | None:
    """Topics a Metadata request names (None or [] for "all" or "none")."""
    check_version(info.api_key, info.api_version)
    request = _METADATA_REQUESTS[info.api_version].decode(frame[info.body_offset(frame):])
    return list(request.topics) if request.topics else None


def coordinator_key(info: RequestInfo, frame: bytes) -> str:
    """The group id or transactional id a FindCoordinator request asks about."""
    check_version(info.api_key, info.api_version)
    body = frame[info.body_offset(frame):]
    if info.api_version == 0:
        return FindCoordinatorRequest_v0.decode(body).consumer_group or ""
    return FindCoordinatorRequest_v1.decode(body).coordinator_key or ""


def _skip_string(buf: BytesIO) -> None:
    (length,) = _INT16.unpack(buf.read(2))
    if length > 0:
        buf.seek(length, 1)


# ----------------------------------------------------------------------------- responses


class Tags(TaggedFields):
    """Tagged fields kept as raw bytes. aiokafka 0.14's ``TaggedFields.encode`` leaves out
    each field's length, so re-encoding a non-empty tag buffer needs this fix."""

    @classmethod
    def encode(cls, value: dict[int, bytes]) -> bytes:
        out = [UnsignedVarInt32.encode(len(value))]
        for tag in sorted(value):
            data = value[tag]
            out += [UnsignedVarInt32.encode(tag), UnsignedVarInt32.encode(len(data)), data]
        return b"".join(out)


class ApiVersionsResponse_v3(Response):
    API_KEY = API_API_VERSIONS
    API_VERSION = 3
    SCHEMA = Schema(
        ("error_code", Int16),
        ("api_versions", CompactArray(("api_key", Int16), ("min_version", Int16),
                                      ("max_version", Int16), ("tags", Tags))),
        ("throttle_time_ms", Int32),
        ("tags", Tags),
    )


_DESCRIBE_CLUSTER_BROKERS = CompactArray(
    ("broker_id", Int32), ("host", CompactString()), ("port", Int32),
    ("rack", CompactString()), ("tags", Tags),
)


class DescribeClusterResponse_v0(Response):
    API_KEY = API_DESCRIBE_CLUSTER
    API_VERSION = 0
    SCHEMA = Schema(
        ("throttle_time_ms", Int32), ("error_code", Int16), ("error_message", CompactString()),
        ("cluster_id", CompactString()), ("controller_id", Int32),
        ("brokers", _DESCRIBE_CLUSTER_BROKERS), ("cluster_authorized_operations", Int32),
        ("tags", Tags),
    )


class DescribeClusterResponse_v1(Response):
    API_KEY = API_DESCRIBE_CLUSTER
    API_VERSION = 1
    SCHEMA = Schema(
        ("throttle_time_ms", Int32), ("error_code", Int16), ("error_message", CompactString()),
        ("endpoint_type", Int8), ("cluster_id", CompactString()), ("controller_id", Int32),
        ("brokers", _DESCRIBE_CLUSTER_BROKERS), ("cluster_authorized_operations", Int32),
        ("tags", Tags),
    )


_RESPONSES: dict[int, list[type[Response]]] = {
    API_METADATA: [MetadataResponse_v0, MetadataResponse_v1, MetadataResponse_v2,
                   MetadataResponse_v3, MetadataResponse_v4, MetadataResponse_v5],
    API_FIND_COORDINATOR: [FindCoordinatorResponse_v0, FindCoordinatorResponse_v1],
    API_CREATE_TOPICS: [CreateTopicsResponse_v0, CreateTopicsResponse_v1,
                        CreateTopicsResponse_v2, CreateTopicsResponse_v3],
    API_DELETE_TOPICS: [DeleteTopicsResponse_v0, DeleteTopicsResponse_v1,
                        DeleteTopicsResponse_v2, DeleteTopicsResponse_v3],
    API_DESCRIBE_CLUSTER: [DescribeClusterResponse_v0, DescribeClusterResponse_v1],
}
#: Responses whose header carries tagged fields, among those the facade rewrites
#: (ApiVersions never does, whatever its version).
_FLEXIBLE_RESPONSES = frozenset({API_DESCRIBE_CLUSTER})

REWRITTEN_APIS = frozenset({API_API_VERSIONS, *_RESPONSES})


def check_version(api_key: int, api_version: int) -> None:
    cap = VERSION_CAPS.get(api_key)
    if cap is not None and api_version > cap:
        raise ProtocolError(
            f"the client sent api key {api_key} version {api_version}, above the v{cap} the "
            "facade advertised in ApiVersions and can rewrite"
        )


def _decode_exact(cls: type[Response], body: bytes) -> Any:
    buf = BytesIO(body)
    try:
        decoded = cls.decode(buf)
    except Exception as exc:  # struct.error, ValueError, UnicodeDecodeError...
        raise ProtocolError(f"cannot decode {cls.__name__}: {exc}") from exc
    if buf.tell() != len(body):
        raise ProtocolError(
            f"{cls.__name__} left {len(body) - buf.tell()} bytes undecoded (wrong version?)"
        )
    return decoded


def _split(api_key: int, frame: bytes) -> tuple[bytes, bytes]:
    """Response header (correlation id, plus tagged fields when flexible) and body."""
    if api_key in _FLEXIBLE_RESPONSES:
        buf = BytesIO(frame)
        buf.seek(4)
        Tags.decode(buf)
        end = buf.tell()
    else:
        end = 4
    return frame[:end], frame[end:]


def rewrite_response(
    info: RequestInfo, frame: bytes, layout: Layout, key: str | None = None
) -> bytes:
    """The response ``frame`` to request ``info`` as the lab's clients must see it."""
    api_key, version = info.api_key, info.api_version
    if api_key not in REWRITTEN_APIS:
        return frame
    if api_key == API_API_VERSIONS:
        return frame[:4] + cap_api_versions(version, frame[4:])
    check_version(api_key, version)
    header, body = _split(api_key, frame)
    response = _decode_exact(_RESPONSES[api_key][version], body)
    if api_key == API_METADATA:
        _rewrite_metadata(response, version, layout)
    elif api_key == API_FIND_COORDINATOR:
        _rewrite_coordinator(response, layout, key or "")
    elif api_key == API_DESCRIBE_CLUSTER:
        _rewrite_describe_cluster(response, layout)
    return header + response.encode()


def cap_api_versions(version: int, body: bytes) -> bytes:
    """ApiVersions body with rewritten APIs capped and hidden APIs left out."""
    if len(body) < 2 or _INT16.unpack_from(body)[0] != 0:
        # An error (e.g. UNSUPPORTED_VERSION, answered in the v0 layout): pass it on; the
        # client retries with a version it can use, and that answer is capped.
        return body
    cls = [ApiVersionResponse_v0, ApiVersionResponse_v1, ApiVersionResponse_v2][version] \
        if version < 3 else ApiVersionsResponse_v3
    response = _decode_exact(cls, body)
    entries = []
    for entry in response.api_versions:
        api_key, low, high = entry[0], entry[1], entry[2]
        if api_key in HIDDEN_APIS:
            continue
        cap = VERSION_CAPS.get(api_key)
        if cap is not None:
            if low > cap:
                continue
            high = min(high, cap)
        entries.append((api_key, low, high, *entry[3:]))
    response.api_versions = entries
    return response.encode()


def _rewrite_metadata(response: Any, version: int, layout: Layout) -> None:
    nodes = layout.nodes
    if version == 0:
        response.brokers = [(n.node_id, n.host, n.port) for n in nodes]
    else:
        response.brokers = [(n.node_id, n.host, n.port, None) for n in nodes]
        response.controller_id = layout.controller.node_id
    topics = []
    for topic in response.topics:
        name, partitions = topic[1], topic[-1]
        rewritten = []
        for partition in partitions:
            error_code, index, leader = partition[0], partition[1], partition[2]
            if leader >= 0:
                leader = layout.leader(name, index)
                replicas = [leader]
            else:
                replicas = []
            fields = [error_code, index, leader, replicas, list(replicas)]
            if version >= 5:
                fields.append([])  # offline_replicas
            rewritten.append(tuple(fields))
        topics.append((*topic[:-1], rewritten))
    response.topics = topics


def _rewrite_coordinator(response: Any, layout: Layout, key: str) -> None:
    if response.error_code != 0:
        return
    node = layout.coordinator(key)
    response.coordinator_id, response.host, response.port = node.node_id, node.host, node.port


def _rewrite_describe_cluster(response: Any, layout: Layout) -> None:
    if response.error_code != 0:
        return
    response.controller_id = layout.controller.node_id
    response.brokers = [(n.node_id, n.host, n.port, None, {}) for n in layout.nodes]


def merge_topic_results(info: RequestInfo, frames: Sequence[bytes]) -> bytes:
    """One CreateTopics/DeleteTopics response from every backend's answer to it.

    Per topic: the first real error any backend reported; else "already exists" (create)
    or "unknown topic" (delete) only if every backend said so; else success, since the
    topic now is (or is no longer) on every backend. The first frame is the template.
    """
    check_version(info.api_key, info.api_version)
    cls = _RESPONSES[info.api_key][info.api_version]
    field = "topic_errors" if info.api_key == API_CREATE_TOPICS else "topic_error_codes"
    benign = TOPIC_ALREADY_EXISTS if info.api_key == API_CREATE_TOPICS else (
        UNKNOWN_TOPIC_OR_PARTITION)
    decoded = [_decode_exact(cls, frame[4:]) for frame in frames]
    answers: dict[str, list[tuple[Any, ...]]] = {}
    for response in decoded:
        for entry in getattr(response, field):
            answers.setdefault(entry[0], []).append(entry)
    merged = []
    for entry in getattr(decoded[0], field):
        seen = answers[entry[0]]
        errors = [e for e in seen if e[1] not in (0, benign)]
        if errors:
            merged.append(errors[0])
        elif all(e[1] == benign for e in seen) and len(seen) == len(frames):
            merged.append(entry)
        else:
            merged.append((entry[0], 0, *([None] * (len(entry) - 2))))
    setattr(decoded[0], field, merged)
    return frames[0][:4] + decoded[0].encode()
