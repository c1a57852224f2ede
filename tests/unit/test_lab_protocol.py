"""The lab's pure parts: frame parsing, response rewriting, layout, delay model, state file."""

from __future__ import annotations

import os
import statistics
import struct

import pytest
from aiokafka.protocol.admin import (
    ApiVersionResponse_v0,
    ApiVersionResponse_v2,
    CreateTopicsResponse_v0,
    CreateTopicsResponse_v3,
    DeleteTopicsResponse_v1,
)
from aiokafka.protocol.api import RequestHeader_v1
from aiokafka.protocol.coordination import (
    FindCoordinatorRequest_v0,
    FindCoordinatorRequest_v1,
    FindCoordinatorResponse_v0,
    FindCoordinatorResponse_v1,
)
from aiokafka.protocol.metadata import (
    MetadataRequest_v1,
    MetadataRequest_v5,
    MetadataResponse_v0,
    MetadataResponse_v1,
    MetadataResponse_v5,
)
from aiokafka.protocol.produce import ProduceRequest_v0, ProduceRequest_v3

from producer_core.brokers.lab import protocol
from producer_core.brokers.lab.delay import DelayModel
from producer_core.brokers.lab.layout import Layout, Node
from producer_core.brokers.lab.protocol import (
    ApiVersionsResponse_v3,
    DescribeClusterResponse_v1,
    ProtocolError,
    Tags,
)
from producer_core.brokers.lab.state import process_alive, read_state, remove_state, write_state
from producer_core.errors import UsageError

LAYOUT = Layout([Node(1, "127.0.0.1", 9001), Node(2, "127.0.0.1", 9002),
                 Node(3, "127.0.0.1", 9003)])
TANSU = [(111, "127.0.0.1", 40111)]


def request_frame(struct_obj, correlation_id: int = 42) -> bytes:
    return RequestHeader_v1(struct_obj, correlation_id, "test").encode() + struct_obj.encode()


def info_for(frame: bytes) -> protocol.RequestInfo:
    return protocol.parse_request(frame)


def response_frame(correlation_id: int, body: bytes) -> bytes:
    return struct.pack(">i", correlation_id) + body


# ------------------------------------------------------------------------------ requests


def test_request_header_fields_and_body():
    frame = request_frame(MetadataRequest_v5(["a", "b"], True), correlation_id=7)
    info = info_for(frame)
    assert (info.api_key, info.api_version, info.correlation_id) == (3, 5, 7)
    assert protocol.metadata_topics(info, frame) == ["a", "b"]
    every = request_frame(MetadataRequest_v1(None))
    assert protocol.metadata_topics(info_for(every), every) is None
    with pytest.raises(ProtocolError):
        protocol.parse_request(b"\x00\x03")


def test_versions_above_the_cap_are_refused():
    frame = request_frame(MetadataRequest_v5([], False))
    frame = frame[:2] + struct.pack(">h", 9) + frame[4:]  # claim v9
    with pytest.raises(ProtocolError, match="above the v5"):
        protocol.metadata_topics(info_for(frame), frame)


@pytest.mark.parametrize("acks", [0, 1, -1])
def test_produce_acks_zero_expects_no_response(acks):
    v0 = request_frame(ProduceRequest_v0(acks, 1000, []))
    v3 = request_frame(ProduceRequest_v3("txn-id", acks, 1000, []))
    # v9: flexible header (tag buffer after client_id), compact nullable transactional_id
    v9 = (struct.pack(">hhih", 0, 9, 5, 4) + b"test" + b"\x00"
          + b"\x00" + struct.pack(">hi", acks, 1000) + b"\x01\x00")
    for frame in (v0, v3, v9):
        assert protocol.expects_response(info_for(frame), frame) is (acks != 0)


def test_coordinator_key_from_find_coordinator_v0_and_v1():
    for request in (FindCoordinatorRequest_v0("group-a"), FindCoordinatorRequest_v1("group-a", 0)):
        frame = request_frame(request)
        assert protocol.coordinator_key(info_for(frame), frame) == "group-a"


# ----------------------------------------------------------------------------- responses


def test_tags_encode_with_lengths_and_round_trip():
    from io import BytesIO

    tags = {0: b"ab", 3: b""}
    encoded = Tags.encode(tags)
    assert encoded == b"\x02\x00\x02ab\x03\x00"
    assert Tags.decode(BytesIO(encoded)) == tags


ENTRIES = [(0, 0, 11), (3, 0, 12), (10, 0, 6), (19, 0, 7), (20, 0, 6), (60, 0, 1),
           (75, 0, 0), (46, 0, 0), (18, 0, 4)]
CAPPED = [(0, 0, 11), (3, 0, 5), (10, 0, 1), (19, 0, 3), (20, 0, 3), (60, 0, 1), (18, 0, 4)]


def test_api_versions_are_capped_and_hidden_apis_left_out():
    body = ApiVersionResponse_v0(0, ENTRIES).encode()
    assert ApiVersionResponse_v0.decode(protocol.cap_api_versions(0, body)).api_versions == CAPPED
    body = ApiVersionResponse_v2(0, ENTRIES, 0).encode()
    assert ApiVersionResponse_v2.decode(protocol.cap_api_versions(2, body)).api_versions == CAPPED


def test_api_versions_v3_keeps_its_tagged_fields():
    features = {0: b"\x01\x02\x03"}
    body = ApiVersionsResponse_v3(0, [(*e, {}) for e in ENTRIES], 0, features).encode()
    capped = ApiVersionsResponse_v3.decode(protocol.cap_api_versions(3, body))
    assert [e[:3] for e in capped.api_versions] == CAPPED
    assert capped.tags == features
    # an error (e.g. UNSUPPORTED_VERSION) passes unchanged, whatever its layout
    error = ApiVersionResponse_v0(35, [(18, 0, 4)]).encode()
    assert protocol.cap_api_versions(5, error) == error


def _tansu_metadata(version: int):
    partitions = [(0, p, 111, [111], [111]) + (([],) if version >= 5 else ()) for p in range(5)]
    partitions[4] = (5, 4, -1, [], []) + (([],) if version >= 5 else ())  # leader unknown
    if version == 0:
        return MetadataResponse_v0(TANSU, [(0, "t", partitions)])
    brokers = [(*b, None) for b in TANSU]
    if version == 1:
        return MetadataResponse_v1(brokers, 111, [(0, "t", False, partitions)])
    return MetadataResponse_v5(0, brokers, "tansu", 111, [(0, "t", False, partitions)])


@pytest.mark.parametrize("version", [0, 1, 5])
def test_metadata_names_the_lab_nodes_and_layout_leaders(version):
    from aiokafka.protocol.metadata import MetadataRequest

    frame = request_frame(MetadataRequest([]).prepare({3: (version, version)}), 9)
    info = info_for(frame)
    cls = type(_tansu_metadata(version))
    out = protocol.rewrite_response(info, response_frame(9, _tansu_metadata(version).encode()),
                                    LAYOUT)
    assert out[:4] == struct.pack(">i", 9)
    response = cls.decode(out[4:]).to_object()
    assert [(b["node_id"], b["port"]) for b in response["brokers"]] == [
        (1, 9001), (2, 9002), (3, 9003)]
    if version:
        assert response["controller_id"] == 1
    parts = response["topics"][0]["partitions"]
    assert [p["leader"] for p in parts] == [1, 2, 3, 1, -1]
    assert all(p["replicas"] == p["isr"] == [p["leader"]] for p in parts[:4])
    assert parts[4]["replicas"] == [] and parts[4]["error_code"] == 5


def test_assignment_overrides_round_robin():
    layout = Layout(LAYOUT.nodes, {"hot": [2, 2, 3]})
    assert [layout.leader("hot", p) for p in range(6)] == [2, 2, 3, 2, 2, 3]
    assert [layout.leader("other", p) for p in range(4)] == [1, 2, 3, 1]
    with pytest.raises(UsageError, match=r"\[7\] are not nodes"):
        Layout(LAYOUT.nodes, {"bad": [1, 7]})
    assert layout.coordinator("g") == layout.coordinator("g") in LAYOUT.nodes


@pytest.mark.parametrize("version", [0, 1])
def test_find_coordinator_points_at_the_layouts_coordinator(version):
    if version == 0:
        request, body = FindCoordinatorRequest_v0("g1"), FindCoordinatorResponse_v0(
            0, 111, "127.0.0.1", 40111)
    else:
        request, body = FindCoordinatorRequest_v1("g1", 0), FindCoordinatorResponse_v1(
            0, 0, None, 111, "127.0.0.1", 40111)
    info = info_for(request_frame(request))
    out = protocol.rewrite_response(info, response_frame(42, body.encode()), LAYOUT, "g1")
    decoded = type(body).decode(out[4:])
    node = LAYOUT.coordinator("g1")
    assert (decoded.coordinator_id, decoded.port) == (node.node_id, node.port)


def test_describe_cluster_lists_the_lab_nodes():
    body = DescribeClusterResponse_v1(0, 0, None, 1, "tansu", 111,
                                       [(111, "127.0.0.1", 40111, None, {})], -2**31, {})
    frame = response_frame(5, b"\x00" + body.encode())  # flexible header: empty tag buffer
    info = protocol.RequestInfo(60, 1, 5, 0)
    out = protocol.rewrite_response(info, frame, LAYOUT)
    assert out[:5] == struct.pack(">i", 5) + b"\x00"
    decoded = DescribeClusterResponse_v1.decode(out[5:])
    assert decoded.controller_id == 1 and decoded.cluster_id == "tansu"
    assert [b[:3] for b in decoded.brokers] == [(n.node_id, n.host, n.port) for n in LAYOUT.nodes]


def _create(version: int, *answers: tuple[int, str | None]) -> list[bytes]:
    frames = []
    for code, message in answers:
        if version == 0:
            body = CreateTopicsResponse_v0([("t", code)])
        else:
            body = CreateTopicsResponse_v3(0, [("t", code, message)])
        frames.append(response_frame(1, body.encode()))
    return frames


@pytest.mark.parametrize(("answers", "expected"), [
    ([(0, None)] * 3, (0, None)),
    ([(36, "exists")] * 3, (36, "exists")),
    ([(0, None), (36, "exists"), (0, None)], (0, None)),
    ([(0, None), (37, "bad partitions"), (36, "exists")], (37, "bad partitions")),
])
def test_create_topics_answers_are_merged(answers, expected):
    info = protocol.RequestInfo(19, 3, 1, 0)
    merged = CreateTopicsResponse_v3.decode(
        protocol.merge_topic_results(info, _create(3, *answers))[4:])
    assert merged.topic_errors == [("t", *expected)]
    info0 = protocol.RequestInfo(19, 0, 1, 0)
    merged0 = CreateTopicsResponse_v0.decode(
        protocol.merge_topic_results(info0, _create(0, *answers))[4:])
    assert merged0.topic_errors == [("t", expected[0])]


def test_delete_topics_answers_are_merged():
    info = protocol.RequestInfo(20, 1, 1, 0)
    frames = [response_frame(1, DeleteTopicsResponse_v1(0, [("t", code)]).encode())
              for code in (0, 3, 0)]
    merged = DeleteTopicsResponse_v1.decode(protocol.merge_topic_results(info, frames)[4:])
    assert merged.topic_error_codes == [("t", 0)]


def test_a_response_of_the_wrong_shape_is_an_error_not_garbage():
    info = info_for(request_frame(MetadataRequest_v5([], False)))
    with pytest.raises(ProtocolError, match="undecoded|cannot decode"):
        protocol.rewrite_response(info, response_frame(42, _tansu_metadata(1).encode()), LAYOUT)


def test_other_responses_pass_unchanged():
    info = protocol.RequestInfo(0, 8, 3, 0)
    assert protocol.rewrite_response(info, b"\x00\x00\x00\x03anything", LAYOUT) == (
        b"\x00\x00\x00\x03anything")


# --------------------------------------------------------------------------------- delay


def test_no_delay_releases_at_the_reply_time():
    clock = DelayModel().connection()
    assert clock.release_at(1.0) == 1.0 and clock.release_at(1.5) == 1.5


def test_constant_delay_is_added_to_each_reply_and_keeps_order():
    clock = DelayModel(rtt_ms=10).connection()
    assert clock.release_at(1.0) == pytest.approx(1.010)
    assert clock.release_at(1.001) == pytest.approx(1.011)  # overlaps: not 1.020


def test_jitter_is_uniform_around_the_round_trip_and_never_reorders():
    model = DelayModel(rtt_ms=20, jitter_ms=10, seed=3)
    samples = [model.sample_s() * 1000 for _ in range(20_000)]
    assert min(samples) >= 10 and max(samples) <= 30
    assert statistics.mean(samples) == pytest.approx(20, abs=0.2)
    assert statistics.pstdev(samples) == pytest.approx(20 / 12 ** 0.5, rel=0.05)  # uniform
    clock = model.connection()
    releases = [clock.release_at(i * 0.001) for i in range(1000)]
    assert releases == sorted(releases)
    assert all(r >= i * 0.001 + 0.010 for i, r in enumerate(releases))


@pytest.mark.parametrize(("rtt", "jitter", "fragment"), [
    (-1, 0, "out of range"), (20_000, 0, "out of range"), (5, 6, "must be between 0"),
    (5, -1, "must be between 0"),
])
def test_delay_settings_are_validated(rtt, jitter, fragment):
    with pytest.raises(UsageError, match=fragment):
        DelayModel(rtt, jitter)


# ---------------------------------------------------------------------------- state file


def test_state_file_round_trip_and_guarded_removal(tmp_path):
    path = tmp_path / "lab.json"
    write_state({"pid": 123, "pid_start": 1, "bootstrap": "127.0.0.1:1"}, path)
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert read_state(path)["bootstrap"] == "127.0.0.1:1"
    remove_state(pid=456, path=path)  # another process's file: left alone
    assert path.exists()
    remove_state(pid=123, path=path)
    assert not path.exists() and read_state(path) is None


def test_process_alive_checks_the_command_line():
    assert process_alive(os.getpid())
    assert process_alive(os.getpid(), "python") or process_alive(os.getpid(), "pytest")
    assert not process_alive(os.getpid(), "no-such-marker-in-a-cmdline")
    assert not process_alive(2 ** 22 + 1)
