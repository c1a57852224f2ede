"""Messages for one topic: partition, key and value of each, from the topic's spec.

Everything per message is done in bulk per generator pass (numpy draws, list
comprehensions), because this runs for every message the engine sends. Values start with
the message id (8 bytes, big-endian) so a reader can verify delivery; the rest is the
topic's payload (`producer_core.workload.payload`): a slice of a seeded random (or text-mixed)
buffer cut to the drawn size, or a record of a payload file.
"""

from __future__ import annotations

import functools
import math
import struct

import numpy as np

from producer_core.workload.partitioners.partitioner import key_table
from producer_core.workload.payload import RUN, cached_records, offsets, random_buffer, run_slices
from producer_core.workload.schedule import (
    PiecewiseSchedule,
    PoissonSchedule,
    Schedule,
    Unthrottled,
    bursts,
    constant,
    ramp,
    step,
)
from producer_core.workload.workload import ID_BYTES, TopicSpec, Workload

TOPIC_ID_SHIFT = 40
"""Message id = topic index << 40 | sequence: unique across the topics of a run."""
SHARE_ID_SHIFT = 56
"""Shares of a distributed run add `share index << 56`, so their ids never collide."""
BUFFER_MIN = 16 << 20
"""Smallest payload buffer; larger values get one twice their size."""
BULK_VALUES = 64
"""Passes of at least this many fixed-size values are built in one numpy array."""
_ID = struct.Struct(">Q")
"""The 8-byte big-endian message id (ids are never negative)."""


@functools.lru_cache(maxsize=8)
def _cutter(size: int, count: int) -> struct.Struct:
    """Unpacks `count` consecutive values of `size` bytes into bytes objects (passes
    mostly have one count: the generator's CHUNK when behind; compiling one for another
    count costs about what cutting by slices would)."""
    return struct.Struct(f"{size}s" * count)


def make_schedule(spec: TopicSpec, horizon: float | None, seed: int) -> Schedule:
    rate = spec.rate
    if rate.kind == "max":
        return Unthrottled()
    if rate.kind == "constant":
        assert rate.rate is not None
        return constant(rate.rate, horizon)
    if rate.kind == "step":
        return step(list(rate.steps), horizon)
    if rate.kind == "ramp":
        return ramp(rate.rate_from, rate.rate_to, rate.over_s, horizon)
    if rate.kind == "poisson":
        assert rate.rate is not None
        return PoissonSchedule(rate.rate, horizon, seed)
    if rate.kind == "bursts":
        assert rate.rate is not None
        return bursts(rate.rate, rate.on_s, rate.off_s, horizon)
    raise ValueError(f"unknown rate profile {rate.kind!r}")


def scheduled_total(schedule: Schedule) -> int | None:
    """Messages a schedule intends before its horizon, if that is known in advance."""
    if isinstance(schedule, PiecewiseSchedule) and math.isfinite(schedule.horizon):
        return schedule.due_count(schedule.horizon)
    return None


def run_target_rate(workload: Workload) -> float | None:
    """The rate the run intends on average: its topics' profiles integrated over the run's
    duration, divided by it (a ramp or a step profile's end state would make a run on
    schedule look short). None when a topic is unthrottled; the long-run rate without a
    duration (a --messages run)."""
    specs = workload.topic_specs()
    if any(spec.rate.kind == "max" for spec in specs):
        return None
    horizon = workload.duration_s
    if horizon is None:
        return workload.target_rate
    total = 0.0
    for spec in specs:
        if spec.rate.kind == "poisson":
            assert spec.rate.rate is not None
            total += spec.rate.rate * horizon
            continue
        total += scheduled_total(make_schedule(spec, horizon, workload.seed)) or 0
    return round(total / horizon, 3)


class TopicSource:
    """Partitions, keys and values for one topic's messages, drawn per generator pass."""

    def __init__(self, spec: TopicSpec, topic_index: int, seed: int, share_index: int = 0
                 ) -> None:
        self.spec = spec
        self.id_base = (share_index << SHARE_ID_SHIFT) | (topic_index << TOPIC_ID_SHIFT)
        rng = np.random.default_rng([seed, topic_index])
        self._rng = rng
        self._salt = (seed * 0x2545F491 + topic_index * 0x5BD1E995 + share_index) % (1 << 32)
        self.records: tuple[bytes, ...] = ()
        if spec.payload.kind == "file":
            assert spec.payload.file is not None
            self.records = cached_records(spec.payload.file, spec.payload.delimiter)
            self.buffer = b""
        else:
            body = max(0, spec.sizes.largest - ID_BYTES)
            size = max(BUFFER_MIN, 2 * body)
            self.buffer = random_buffer(seed, spec.payload.compressibility, size)
        self._stride = max(1, spec.sizes.largest - ID_BYTES)
        self._span = len(self.buffer) - max(0, spec.sizes.largest - ID_BYTES)
        self._fixed_body: int | None = None
        """Body bytes of fixed-size generated values (the fast path), else None."""
        if not self.records and spec.sizes.kind == "fixed" and spec.sizes.size >= ID_BYTES \
                and self._span > RUN * self._stride:
            self._fixed_body = spec.sizes.size - ID_BYTES
        self.fixed_size = None if self._fixed_body is None else ID_BYTES + self._fixed_body
        """Length of every value when all have one size (the generator sums no lengths)."""
        self.headers = [(k, v) for k, v in spec.headers]
        self.header_bytes = sum(len(k.encode()) + len(v or b"") + 2 for k, v in self.headers)
        """Bytes the headers add to each record (partitioners estimate record sizes)."""
        keys = spec.keys
        self.keys: list[bytes] = []
        self.key_partitions: list[int] = []
        self._cdf: np.ndarray | None = None
        if keys.kind != "none":
            self.keys, self.key_partitions = key_table(keys.count, spec.partitions)
        if keys.kind == "zipf":
            weights = 1.0 / np.arange(1, keys.count + 1, dtype=np.float64) ** keys.exponent
            self._cdf = np.cumsum(weights / weights.sum())
        sizes = spec.sizes
        self._size_cdf: np.ndarray | None = None
        if sizes.kind == "weighted":
            w = np.asarray(sizes.weights, dtype=np.float64)
            self._size_cdf = np.cumsum(w / w.sum())

    def key_indexes(self, seqs: range) -> list[int] | None:
        """Which key each message carries (None: keyless)."""
        kind = self.spec.keys.kind
        count = len(seqs)
        if kind == "none":
            return None
        if kind == "uniform":
            return self._rng.integers(0, len(self.keys), count).tolist()
        if kind == "zipf":
            assert self._cdf is not None
            picks = np.searchsorted(self._cdf, self._rng.random(count), side="right")
            return np.minimum(picks, len(self.keys) - 1).tolist()
        return [seq % len(self.keys) for seq in seqs]  # sequential

    def sizes(self, count: int) -> list[int] | None:
        """Value size per message (None: all the fixed size)."""
        spec = self.spec.sizes
        if spec.kind == "fixed":
            return None
        if spec.kind == "uniform":
            return self._rng.integers(spec.minimum, spec.maximum + 1, count).tolist()
        assert self._size_cdf is not None
        picks = np.searchsorted(self._size_cdf, self._rng.random(count), side="right")
        choices = np.asarray(spec.sizes)
        return choices[np.minimum(picks, len(choices) - 1)].tolist()

    def values(self, ids: range) -> list[bytes]:
        """Values for message ids `ids` (id in the first 8 bytes, then the payload)."""
        if self._fixed_body is not None:
            return self._fixed_values(ids, self._fixed_body)
        seqs = np.arange(ids.start - self.id_base, ids.stop - self.id_base, dtype=np.int64)
        if self.records:
            records = self.records
            picks = offsets(seqs, self._salt, len(records)).tolist()
            return [i.to_bytes(ID_BYTES, "big") + records[k] for i, k in zip(ids, picks,
                                                                             strict=True)]
        buffer = self.buffer
        sizes = self.sizes(len(ids))
        if sizes is None:
            size = self.spec.sizes.size
            if size < ID_BYTES:
                return [i.to_bytes(ID_BYTES, "big")[ID_BYTES - size:] for i in ids]
            body = size - ID_BYTES
            starts = offsets(seqs, self._salt, self._span, self._stride).tolist()
            return [i.to_bytes(ID_BYTES, "big") + buffer[o:o + body]
                    for i, o in zip(ids, starts, strict=True)]
        # drawn sizes: the pass's payloads are adjacent slices from one hashed position
        bodies = np.maximum(np.asarray(sizes, dtype=np.int64) - ID_BYTES, 0)
        ends = np.cumsum(bodies)
        room = max(1, len(buffer) - int(ends[-1]))
        base = int(offsets(seqs[:1], self._salt, room)[0])
        starts = (base + ends - bodies).tolist()
        return [
            i.to_bytes(ID_BYTES, "big") + buffer[o:o + n - ID_BYTES] if n >= ID_BYTES
            else i.to_bytes(ID_BYTES, "big")[ID_BYTES - n:]
            for i, n, o in zip(ids, sizes, starts, strict=True)
        ]

    def _fixed_values(self, ids: range, body: int) -> list[bytes]:
        """Fixed-size values: the same bytes `offsets` places, taken run by run (a run's
        bodies are adjacent in the buffer). A small pass (most of them carry a few
        messages, where numpy's per-call cost dominated) packs each id and slices its body;
        a large one fills one array with every id and body and cuts the values from its
        bytes, one slice per value."""
        base, stride = self.id_base, self._stride
        pieces = run_slices(ids.start - base, ids.stop - base, self._salt, self._span, stride)
        count = len(ids)
        if count < BULK_VALUES:
            buffer, pack = self.buffer, _ID.pack
            values: list[bytes] = []
            for first, stop, start in pieces:
                values += [pack(i) + buffer[o:o + body] for i, o in zip(
                    range(first + base, stop + base),
                    range(start, start + (stop - first) * stride, stride), strict=True)]
            return values
        size = ID_BYTES + body
        rows = np.empty((count, size), dtype=np.uint8)
        # the ids, big-endian, through a view (an arange in ">u8" costs 4x as much)
        rows[:, :ID_BYTES].view(">u8")[:, 0] = np.arange(ids.start, ids.stop,
                                                        dtype=np.uint64)
        data = np.frombuffer(self.buffer, dtype=np.uint8)
        for first, stop, start in pieces:
            n = stop - first
            row = first + base - ids.start
            rows[row:row + n, ID_BYTES:] = data[start:start + n * stride].reshape(
                n, stride)[:, :body]
        # cut with struct, the values made in C: a slice per value in a list comprehension
        # cost ~80 ns a value (the interpreter's loop), a pass's unpack ~16 ns
        # an ndarray is a buffer (numpy's stubs do not declare it)
        return list(_cutter(size, count).unpack(rows))  # type: ignore[arg-type]  # see above
