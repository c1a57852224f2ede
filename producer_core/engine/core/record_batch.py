"""A RecordBatch v2 writer whose same-sized keyless records are framed from a table.

aiokafka's C `DefaultRecordBatchBuilder.append` costs ~100 ns a record plus the Python
loop around it, and it was what remained per record of `Accumulator.append_many` in
unthrottled runs (docs/findings/performance.md, issue 23, 3d). When a pass's values all have one
size and carry no key and no headers (kbatch's default workload), the records of one
batch differ only in their offset delta (and, per pass, the timestamp delta), so each
record's framing is a table lookup and how many fit is a bisection (`plan`); the
accumulator then frames a whole pass with one `b"".join` of (prefix, value, header
count) triples and hands each writer its stretch.

`RecordBatchWriter` is a drop-in for the C builder as the accumulator uses it (`append`,
`size`, `set_producer_state`, `build`), byte for byte the same batch (same refusal rule,
same compression, same header and CRC; tests/unit/test_record_batch.py): records of
another shape appended to it go through `append`, which encodes them in Python. Its CRC
is computed in hardware (`producer_core.engine.core.checksum`).
"""

from __future__ import annotations

import struct
import threading
from bisect import bisect_left

from aiokafka.codec import gzip_encode, lz4_encode, snappy_encode, zstd_encode

from producer_core.engine.core.checksum import crc32c

HEADER = struct.Struct(">qiibIhiqqqhii")
"""baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta,
firstTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence, recordCount."""
HEADER_SIZE = HEADER.size  # 61
_LENGTH_FROM = 12
"""batchLength counts the bytes after itself."""
_CRC_FROM = 21
"""The CRC-32C covers the attributes and everything after them."""
_ENCODERS = {1: gzip_encode, 2: snappy_encode, 3: lz4_encode, 4: zstd_encode}
NO_HEADERS_FIELD = b"\x00"
"""A record's header count when it has none: varint 0 (what follows each value)."""
_KEY_NULL = b"\x01"
"""Varint -1 (zigzag 1): a null key."""
_CACHE_ENTRIES = 50_000


def varint(value: int) -> bytes:
    """Kafka's signed varint: zigzag, then 7 bits a byte, least significant first."""
    value = (value << 1) ^ (value >> 63)
    out = bytearray()
    while value > 0x7F:
        out.append(0x80 | (value & 0x7F))
        value >>= 7
    out.append(value)
    return bytes(out)


class Appended:
    """What `append` returns for an accepted record (the accumulator reads `size`)."""

    __slots__ = ("size",)

    def __init__(self, size: int) -> None:
        self.size = size


class _Framing:
    """For one (timestamp delta, value size): each offset's record prefix (length,
    attributes, timestamp delta, offset delta, null key, value length) and `ends[o]`, the
    bytes of records 0..o-1 (so a run's bytes are a difference of two entries)."""

    __slots__ = ("delta", "prefixes", "ends", "middle", "tail", "value_size")

    def __init__(self, delta: int, value_size: int) -> None:
        self.delta = delta
        self.value_size = value_size
        self.middle = b"\x00" + varint(delta)
        self.tail = _KEY_NULL + varint(value_size)
        self.prefixes: list[bytes] = []
        self.ends: list[int] = [0]

    def grow(self, count: int) -> None:
        """Entries for offsets up to at least `count` - 1. Tables are shared by the
        engines of a process: entries are only ever appended (a prefix before its end),
        under a lock, so a reader that checked `len(ends)` reads settled entries."""
        prefixes, ends, middle, tail = self.prefixes, self.ends, self.middle, self.tail
        value_size = self.value_size
        with _GROW_LOCK:
            for offset in range(len(prefixes), max(count, 2 * len(prefixes), 64)):
                body = middle + varint(offset) + tail
                length = len(body) + value_size + 1  # + the header count
                prefix = varint(length) + body
                prefixes.append(prefix)
                ends.append(ends[-1] + len(prefix) + value_size + 1)


_GROW_LOCK = threading.Lock()


_FRAMINGS: dict[tuple[int, int], _Framing] = {}


def _framing(delta: int, value_size: int) -> _Framing:
    """The shared table for (delta, value_size): a run's batches are stamped a few
    milliseconds apart, so a few tables serve them all. The cache is emptied when its
    tables hold `_CACHE_ENTRIES` prefixes (batches of many tiny records, or a wall clock
    that jumps), so it stays within a few MB."""
    key = (delta, value_size)
    framing = _FRAMINGS.get(key)
    if framing is None:
        if sum(len(table.prefixes) for table in _FRAMINGS.values()) >= _CACHE_ENTRIES:
            _FRAMINGS.clear()
        framing = _FRAMINGS[key] = _Framing(delta, value_size)
    return framing


class RecordBatchWriter:
    """One partition's RecordBatch v2 under construction (magic 2, not transactional:
    the accumulator patches the transactional bit into the built bytes)."""

    __slots__ = ("compression", "batch_size", "chunks", "length", "count",
                 "first_timestamp", "max_timestamp", "last_offset", "producer_id",
                 "producer_epoch", "base_sequence", "framing")

    def __init__(self, compression: int, batch_size: int) -> None:
        if compression not in (0, *_ENCODERS):
            raise ValueError(f"unknown compression codec {compression}")
        self.compression = compression
        self.batch_size = batch_size
        self.chunks: list[bytes] = []
        """The records' bytes (uncompressed), header excluded, as appended: joined once at
        `build` (growing one bytearray copied it at every few appends)."""
        self.length = 0
        """Bytes of the records appended or planned (`plan`: the caller appends them)."""
        self.count = 0
        self.first_timestamp = -1
        self.max_timestamp = -1
        self.last_offset = 0
        self.producer_id = -1
        self.producer_epoch = -1
        self.base_sequence = -1
        self.framing: _Framing | None = None
        """The framing table `plan` used last (its timestamp delta is often the next's)."""

    def size(self) -> int:
        """Bytes of the batch so far, header included (uncompressed), as the C builder's."""
        return HEADER_SIZE + self.length

    def set_producer_state(self, producer_id: int, epoch: int, base_sequence: int) -> None:
        self.producer_id = producer_id
        self.producer_epoch = epoch
        self.base_sequence = base_sequence

    def append(self, offset: int, timestamp: int, key: bytes | None, value: bytes | None,
               headers: list[tuple[str, bytes | None]]) -> Appended | None:
        """One record of any shape; None if it does not fit (the first always does).

        A keyless, headerless one (small passes after a large one left a writer open)
        takes its prefix from the framing table; others are encoded field by field."""
        delta = 0 if self.first_timestamp == -1 else timestamp - self.first_timestamp
        if key is None and not headers and type(value) is bytes:
            framing = self.framing
            if framing is None or framing.delta != delta or framing.value_size != len(value):
                framing = self.framing = _framing(delta, len(value))
            ends = framing.ends
            if len(ends) <= offset + 1:
                framing.grow(offset + 2)
            size = ends[offset + 1] - ends[offset]
            if offset != 0 and HEADER_SIZE + self.length + size >= self.batch_size:
                return None
            self.chunks.append(framing.prefixes[offset] + value + NO_HEADERS_FIELD)
            self._took(size, offset, timestamp)
            return Appended(size)
        parts = [b"\x00", varint(delta), varint(offset)]
        for field in (key, value):
            if field is None:
                parts.append(_KEY_NULL)
            else:
                parts.append(varint(len(field)))
                parts.append(bytes(field))
        parts.append(varint(len(headers)))
        for name, header_value in headers:
            encoded = name.encode("utf-8")
            parts.append(varint(len(encoded)))
            parts.append(encoded)
            if header_value is None:
                parts.append(_KEY_NULL)
            else:
                parts.append(varint(len(header_value)))
                parts.append(bytes(header_value))
        body = b"".join(parts)
        length = varint(len(body))
        size = len(length) + len(body)
        if offset != 0 and HEADER_SIZE + self.length + size >= self.batch_size:
            return None
        self.chunks.append(length + body)
        self._took(size, offset, timestamp)
        return Appended(size)

    def _took(self, size: int, offset: int, timestamp: int) -> None:
        """Account for one appended record of `size` bytes."""
        self.length += size
        if self.first_timestamp == -1:
            self.first_timestamp = self.max_timestamp = timestamp
        elif timestamp > self.max_timestamp:
            self.max_timestamp = timestamp
        self.count += 1
        self.last_offset = offset

    def plan(self, timestamp: int, count: int, value_size: int
             ) -> tuple[int, list[bytes], int]:
        """Make room for up to `count` keyless, headerless records of `value_size` bytes
        stamped `timestamp`, at the next offsets: as many as fit. Returns (how many, their
        prefixes, their bytes): the caller appends to `chunks`, for each, the prefix,
        the value and a zero header count (`_NO_HEADERS`), those bytes in all. None fit
        only if the batch is already full."""
        if self.first_timestamp == -1:
            self.first_timestamp = self.max_timestamp = timestamp
        offset = self.count
        framing = self.framing
        delta = timestamp - self.first_timestamp
        if framing is None or framing.delta != delta or framing.value_size != value_size:
            framing = self.framing = _framing(delta, value_size)
        if len(framing.ends) <= offset + count:
            framing.grow(offset + count + 1)
        ends = framing.ends
        # a record fits while the batch stays under batch_size (C builder: one that would
        # make it reach batch_size is refused, unless it is the first)
        room = self.batch_size - HEADER_SIZE - self.length + ends[offset]
        stop = offset + count
        if ends[stop] >= room:
            stop = bisect_left(ends, room, offset + 1, stop + 1) - 1
            if stop == offset:
                if offset:
                    return 0, [], 0
                stop = 1
        size = ends[stop] - ends[offset]
        self.length += size
        self.count = stop
        self.last_offset = stop - 1
        if timestamp > self.max_timestamp:
            self.max_timestamp = timestamp
        return stop - offset, framing.prefixes[offset:stop], size

    def build(self) -> bytes:
        """The batch's wire bytes: records compressed with the codec (always, as the C
        builder does), the header, and the CRC-32C over attributes..end."""
        records = b"".join(self.chunks)
        if len(records) != self.length:
            raise RuntimeError("RecordBatchWriter: planned records were never appended")
        attributes = 0
        if self.compression:
            records = _ENCODERS[self.compression](records)
            attributes = self.compression
        fields = (0, HEADER_SIZE + len(records) - _LENGTH_FROM, -1, 2)
        rest = (attributes, self.last_offset, self.first_timestamp, self.max_timestamp,
                self.producer_id, self.producer_epoch, self.base_sequence, self.count)
        header = HEADER.pack(*fields, 0, *rest)
        crc = crc32c(header[_CRC_FROM:], records)
        return HEADER.pack(*fields, crc, *rest) + records
