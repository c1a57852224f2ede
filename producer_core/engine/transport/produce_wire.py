"""ProduceRequest encoding and ProduceResponse decoding in a few C-level calls.

aiokafka encodes a request field by field through its generic `Schema` types: for a
request of 1,000 partitions that is ~10,000 Python calls and 8-16 ms of a blocked event
loop, and decoding the response's 1,000 partition entries another 2-5 ms (issue 23,
docs/findings/performance.md). The produce wire format is fixed (v3-v7: one schema), so the
request is joined from the built record batches with one `struct.pack` per partition,
and the response's fixed-size partition entries are read with `struct.iter_unpack`.
The bytes and the decoded response are the same as aiokafka's (tests/unit/test_send_path.py);
older versions (< 3, no idempotence) fall back to aiokafka's own encoding.
"""

from __future__ import annotations

import struct
from io import BytesIO
from typing import Any

from aiokafka.protocol.produce import ProduceRequest as AiokafkaProduceRequest

_HEAD = struct.Struct(">hii")
"""required_acks, timeout, topic count."""
_COUNT = struct.Struct(">i")
_PARTITION = struct.Struct(">ii")
"""partition index and the record set's length."""
_SHORT = struct.Struct(">h")
_THROTTLE = struct.Struct(">i")
_ENTRY_V3 = struct.Struct(">ihqq")
"""partition, error_code, offset (base), timestamp (log append time)."""
_ENTRY_V5 = struct.Struct(">ihqqq")
"""... and log_start_offset (v5 on)."""
FAST_FROM = 3
"""The first version with the transactional id; v3-v7 share one request schema."""


def _string(value: str | None) -> bytes:
    if value is None:
        return _SHORT.pack(-1)
    encoded = value.encode("utf-8")
    return _SHORT.pack(len(encoded)) + encoded


def encode_produce(transactional_id: str | None, acks: int, timeout_ms: int,
                   topics: list[tuple[str, list[tuple[int, bytes]]]]) -> bytes:
    """The body of a ProduceRequest v3-v7 (without the request header)."""
    parts = [_string(transactional_id), _HEAD.pack(acks, timeout_ms, len(topics))]
    append = parts.append
    pack = _PARTITION.pack
    for topic, partitions in topics:
        append(_string(topic))
        append(_COUNT.pack(len(partitions)))
        for partition, records in partitions:
            append(pack(partition, len(records)))
            append(records)
    return b"".join(parts)


def decode_produce_response(data: bytes | memoryview, version: int
                            ) -> tuple[list[tuple[str, list[tuple[int, ...]]]], int]:
    """(topics, throttle_time_ms) of a ProduceResponse v3-v7 body, as aiokafka decodes it:
    topics = [(topic, [(partition, error_code, offset, timestamp[, log_start_offset])])]."""
    entry = _ENTRY_V5 if version >= 5 else _ENTRY_V3
    view = memoryview(data)
    position = 0
    (topic_count,) = _COUNT.unpack_from(view, position)  # -1 (null) reads as none
    position += 4
    topics = []
    for _ in range(topic_count):
        (length,) = _SHORT.unpack_from(view, position)
        position += 2
        topic = bytes(view[position:position + length]).decode("utf-8")
        position += length
        (count,) = _COUNT.unpack_from(view, position)
        position += 4
        end = position + max(count, 0) * entry.size
        topics.append((topic, list(entry.iter_unpack(view[position:end]))))
        position = end
    (throttle,) = _THROTTLE.unpack_from(view, position)
    return topics, throttle


_FAST_CLASSES: dict[type, type] = {}


def _fast_class(base: type[Any]) -> type:
    """`base` (an aiokafka ProduceRequest_vN) with the encoding above, and its response
    type with the decoding above."""
    fast = _FAST_CLASSES.get(base)
    if fast is None:
        response_type = base.RESPONSE_TYPE
        version = base.API_VERSION

        def decode(cls: type, data: BytesIO | bytes) -> Any:
            raw = data.read() if isinstance(data, BytesIO) else data
            topics, throttle = decode_produce_response(raw, version)
            return response_type(topics, throttle)

        def encode(self: Any) -> bytes:
            return encode_produce(self.transactional_id, self.required_acks, self.timeout,
                                  self.topics)

        response = type(response_type.__name__, (response_type,),
                        {"decode": classmethod(decode)})
        fast = type(base.__name__, (base,), {"encode": encode, "RESPONSE_TYPE": response})
        _FAST_CLASSES[base] = fast
    return fast


class ProduceRequest(AiokafkaProduceRequest):
    """aiokafka's ProduceRequest (same version negotiation, same bytes), encoded and
    answered through `encode_produce` and `decode_produce_response`."""

    def build(self, request_struct_class: Any) -> Any:
        if request_struct_class.API_VERSION < FAST_FROM:
            return super().build(request_struct_class)
        return _fast_class(request_struct_class)(
            self._transactional_id, self._required_acks, self._timeout, self._topics)
