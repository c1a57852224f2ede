"""Per-partition record batches, built with aiokafka's C record-batch builder (or, for
large passes of same-sized keyless values, kbatch's `record_batch.RecordBatchWriter`).

Like Java's RecordAccumulator: every partition has a deque of batches; only the last is
open for appends, the ones before it are full. A partition's deque exists only while it
has batches (`SlotQueue`; `NO_BATCHES` stands in for the others): an empty deque is
760 bytes, 76 MB for 100,000 partitions made before the first message. Each batch also
keeps, per record, the message id and the intended send time, so an acknowledgement can be
turned into exact per-message latencies without touching the records again.

Pure data: no clock (times come in as arguments) and no I/O.
"""

from __future__ import annotations

import struct
from array import array
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, Protocol

import numpy as np
from aiokafka.record.default_records import DefaultRecordBatchBuilder

from producer_core.engine.core.checksum import crc32c
from producer_core.engine.core.record_batch import NO_HEADERS_FIELD, RecordBatchWriter

COMPRESSION_CODES = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
NO_HEADERS: list[tuple[str, bytes | None]] = []

APPENDED = 0
"""`append` result: the record joined an open batch."""
BECAME_NONEMPTY = 1
"""`append` result: the partition had nothing queued; this record started its first batch."""
BATCH_FILLED = 2
"""`append` result: the open batch was full; it closed and the record started a new one."""


@dataclass(frozen=True, slots=True)
class TopicPartition:
    """A partition of a topic (slots: a run holds one per partition, 100,000 of them)."""

    topic: str
    partition: int


class ProducerBatch:
    """One partition's record batch and, per record, its id and intended send time."""

    __slots__ = (
        "slot", "builder", "ids", "intended", "created", "closed", "payload",
        "attempts", "drained_at", "record_bytes", "sequence", "epoch",
        "producer_id", "maybe_written", "order",
    )

    def __init__(self, slot: int, builder: DefaultRecordBatchBuilder | RecordBatchWriter,
                 created: float) -> None:
        self.slot = slot
        self.builder: DefaultRecordBatchBuilder | RecordBatchWriter | None = builder
        self.ids = array("q")
        self.intended = array("d")
        self.created = created
        self.closed = False
        self.payload: bytes | None = None
        self.attempts = 0
        self.drained_at = 0.0
        self.record_bytes = 0
        self.sequence = -1
        """Base sequence stamped into the batch (idempotence); -1 until its first send."""
        self.producer_id = -1
        self.epoch = -1
        """Producer id and epoch the sequence belongs to; a bumped epoch means re-stamping."""
        self.order = -1
        """When the batch was first sent, among all batches (set by the sender): a retry
        goes back behind the re-queued batches sent before it, so partition order holds."""
        self.maybe_written = False
        """An earlier attempt ended without an answer (timeout, lost connection): the
        broker may hold these records, so a final failure is an unknown outcome."""

    @property
    def record_count(self) -> int:
        return len(self.ids)

    def size_bytes(self) -> int:
        if self.payload is not None:
            return len(self.payload)
        assert self.builder is not None
        return self.builder.size()

    def seal(self) -> bytes:
        """Build the wire bytes once; a retry re-sends the same bytes."""
        if self.payload is None:
            assert self.builder is not None
            self.payload = bytes(self.builder.build())
            self.builder = None
            self.closed = True
        return self.payload

    def stamp(self, producer_id: int, epoch: int, sequence: int,
              transactional: bool = False) -> None:
        """Write producer id, epoch and base sequence (and, for a transactional producer,
        the isTransactional attribute) into the batch header.

        Sequences are assigned when a batch is first sent (and again after an epoch bump).
        A batch not built yet is built with them; one already built (compressed, or
        re-stamped after an epoch bump) or transactional has the header fields patched and
        the CRC (which covers everything from the attributes on) recomputed.
        """
        if self.payload is None and not transactional:
            # not built yet (a first send): the builder writes the fields and the CRC in
            # one pass, byte for byte what patching the built batch below gives
            assert self.builder is not None
            self.builder.set_producer_state(producer_id, epoch, sequence)
            self.seal()
            self.sequence, self.producer_id, self.epoch = sequence, producer_id, epoch
            return
        data = bytearray(self.seal())
        struct.pack_into(">qhi", data, _PRODUCER_ID_OFFSET, producer_id, epoch, sequence)
        if transactional:
            attributes = struct.unpack_from(">h", data, _ATTRIBUTES_OFFSET)[0]
            struct.pack_into(">h", data, _ATTRIBUTES_OFFSET, attributes | _TRANSACTIONAL_BIT)
        crc = crc32c(bytes(memoryview(data)[_ATTRIBUTES_OFFSET:]))
        struct.pack_into(">I", data, _CRC_OFFSET, crc)
        self.payload = bytes(data)
        self.sequence = sequence
        self.producer_id = producer_id
        self.epoch = epoch


_CRC_OFFSET = 17
"""RecordBatch v2 header: baseOffset(8) length(4) leaderEpoch(4) magic(1) crc(4) ..."""
_ATTRIBUTES_OFFSET = 21
_TRANSACTIONAL_BIT = 0x10
"""Attributes bit 4: the batch belongs to a transaction."""
_PRODUCER_ID_OFFSET = 43
"""... attributes(2) lastOffsetDelta(4) baseTimestamp(8) maxTimestamp(8) producerId(8)
producerEpoch(2) baseSequence(4) records(4)."""


BULK_MIN_RECORDS = 256
BULK_MIN_PER_SLOT = 8
"""`append_many` groups a pass by slot only when it has at least BULK_MIN_RECORDS records
and BULK_MIN_PER_SLOT per slot: grouping costs about 1 µs per slot and 20 ns per record
(measured), so smaller passes or groups go record by record."""


_GROUPINGS_KEPT = 64
"""Slot sequences whose grouping an accumulator keeps (~100 KB each for 1,000 records)."""


class _Grouping:
    """A pass's slots sorted, stably: `order[k]` is the pass index of the k-th record in
    slot order; records [starts[g], ends[g]) of that order go to slot group_slots[g]."""

    __slots__ = ("order", "order_list", "starts", "ends", "group_slots", "pick")

    def __init__(self, slots: list[int]) -> None:
        slot_array = np.array(slots, dtype=np.int64)
        self.order = np.argsort(slot_array, kind="stable")
        sorted_slots = slot_array[self.order]
        cuts = (np.flatnonzero(sorted_slots[1:] != sorted_slots[:-1]) + 1).tolist()
        self.starts = [0, *cuts]
        self.ends = [*cuts, len(slots)]
        self.group_slots: list[int] = sorted_slots[self.starts].tolist()
        self.order_list: list[int] = self.order.tolist()
        self.pick = itemgetter(*self.order_list)
        """Picks a pass's items in slot order (a tuple)."""


def _to_array(typecode: str, values: np.ndarray) -> array[Any]:
    """A contiguous int64/float64 ndarray as an `array` of the same items (one copy)."""
    out: array[Any] = array(typecode)
    out.frombytes(values.data.cast("B"))  # its buffer: memoryview(values), typed
    return out


_FIRST = (0,)


class _RecordPut:
    """Appends records one by one through the builder (any key, value, headers)."""

    __slots__ = ("keys", "values", "timestamp_ms", "headers")

    def __init__(self, keys: Sequence[bytes | None], values: Sequence[bytes],
                 timestamp_ms: int, headers: Any) -> None:
        self.keys = keys
        self.values = values
        self.timestamp_ms = timestamp_ms
        self.headers = headers

    def put(self, builder: DefaultRecordBatchBuilder | RecordBatchWriter, offset: int,
            pos: int, end: int) -> tuple[int, int]:
        """Records [pos, end) into `builder` until it refuses one: (taken, their bytes)."""
        append = builder.append
        timestamp_ms, headers = self.timestamp_ms, self.headers
        if end - pos == 1:  # a record at a time (small passes): no slicing
            metadata = append(offset, timestamp_ms, self.keys[pos], self.values[pos], headers)
            return (0, 0) if metadata is None else (1, metadata.size)
        before = builder.size()
        taken = 0
        for key, value in zip(self.keys[pos:end], self.values[pos:end], strict=True):
            if append(offset + taken, timestamp_ms, key, value, headers) is None:
                break
            taken += 1
        return taken, builder.size() - before


class _FramedPut:
    """Keyless, headerless records of one size: into a `RecordBatchWriter` they are framed
    from a table (`RecordBatchWriter.plan`) and, once the pass is placed, joined with the
    others in one `b"".join` and shared out to the writers (`share_out`); a batch with a C
    builder (left by smaller passes) takes them record by record until it fills."""

    __slots__ = ("values", "timestamp_ms", "value_size", "framed", "bodies", "shares",
                 "one_by_one")

    def __init__(self, values: Sequence[bytes], timestamp_ms: int, value_size: int) -> None:
        self.values = values
        self.timestamp_ms = timestamp_ms
        self.value_size = value_size
        self.framed: list[bytes] = []
        """Per record going to a writer, in order: its prefix (length ... value length)."""
        self.bodies: list[bytes] | None = None
        """... and its value: `values` itself unless some records went to a C builder."""
        self.shares: list[tuple[RecordBatchWriter, int]] = []
        """(writer, bytes) in the same order: who gets which stretch of the joined bytes."""
        self.one_by_one = _RecordPut((None,) * len(values), values, timestamp_ms, NO_HEADERS)

    def put(self, builder: DefaultRecordBatchBuilder | RecordBatchWriter, offset: int,
            pos: int, end: int) -> tuple[int, int]:
        if type(builder) is RecordBatchWriter:
            taken, prefixes, size = builder.plan(self.timestamp_ms, end - pos, self.value_size)
            if taken:
                self.framed += prefixes
                if self.bodies is not None:
                    self.bodies += self.values[pos:pos + taken]
                self.shares.append((builder, size))
            return taken, size
        if self.bodies is None:  # the values framed so far: all of those before
            self.bodies = list(self.values[:pos])
        return self.one_by_one.put(builder, offset, pos, end)

    def share_out(self) -> None:
        """Join every framed record of the pass and give each writer its stretch."""
        if not self.framed:
            return
        count = len(self.framed)
        parts: list[bytes] = [b""] * (3 * count)
        parts[0::3] = self.framed
        parts[1::3] = self.values if self.bodies is None else self.bodies
        parts[2::3] = (NO_HEADERS_FIELD,) * count
        joined = b"".join(parts)
        if len(joined) != sum(size for _, size in self.shares):
            raise ValueError(f"append_many: a value is not {self.value_size} bytes long")
        start = 0
        for writer, size in self.shares:
            writer.chunks.append(joined[start:start + size])
            start += size


class SlotQueue(deque[ProducerBatch]):
    """One slot's batches, oldest first, and their record bytes (kept as batches come and
    go, so a policy asking a slot's bytes does not sum its batches)."""

    __slots__ = ("record_bytes",)
    record_bytes: int
    """Set by `Accumulator._queue` when it makes the queue (no `__init__` of its own: a
    queue is made for nearly every batch when each partition holds one at a time)."""


NO_BATCHES: tuple[ProducerBatch, ...] = ()
"""The queue of every slot without batches: shared, empty, read-only."""


class Accumulator:
    """Queues records per partition slot. A slot is an index into `slots` (topic, partition).

    `queues[slot]` is the slot's `SlotQueue` while it has batches, else `NO_BATCHES`:
    readers see an empty sequence either way; a queue is made by the slot's first batch
    and dropped with its last (`pop_head`), so idle partitions cost one list entry."""

    def __init__(self, slots: list[TopicPartition], batch_size: int, compression: str = "none"):
        self.slots = slots
        self.batch_size = batch_size
        self.compression = COMPRESSION_CODES[compression]
        self.queues: list[SlotQueue | tuple[ProducerBatch, ...]] = [NO_BATCHES] * len(slots)
        self.queued_bytes = 0
        self.queued_records = 0
        self.queued_batches = 0
        self.held: set[int] = set()
        """Slots whose head waits for retry.backoff.ms: not drainable until released."""
        self._groupings: dict[tuple[int, ...], _Grouping] = {}
        """`append_many`'s grouping of a keyless pass's slots, by the slots: round-robin
        passes repeat a few slot sequences (a slice of the cycle from a few starts)."""

    def _new_batch(self, slot: int, now: float, writer: bool = False) -> ProducerBatch:
        """A new open batch for `slot`: aiokafka's C builder, or (`writer`: passes of
        same-sized keyless records) kbatch's `RecordBatchWriter`, which takes a pass's
        records in one join; both accept any record and build the same bytes."""
        builder: DefaultRecordBatchBuilder | RecordBatchWriter
        if writer:
            builder = RecordBatchWriter(self.compression, self.batch_size)
        else:
            builder = DefaultRecordBatchBuilder(2, self.compression, 0, -1, -1, -1,
                                                self.batch_size)
        batch = ProducerBatch(slot, builder, now)
        self._queue(slot).append(batch)
        self.queued_batches += 1
        return batch

    def _queue(self, slot: int) -> SlotQueue:
        """The slot's queue, made if it has none (its first batch is coming)."""
        queue = self.queues[slot]
        if type(queue) is not SlotQueue:
            queue = self.queues[slot] = SlotQueue()
            queue.record_bytes = 0
        return queue

    def _open_batch(self, slot: int, now: float, writer: bool = False
                    ) -> tuple[ProducerBatch, bool]:
        """The batch `slot`'s next record goes into (its last, or a new one when it has
        none or the last is closed) and whether the slot was empty (BECAME_NONEMPTY)."""
        queue = self.queues[slot]
        if queue:
            batch = queue[-1]
            if batch.closed:
                batch = self._new_batch(slot, now, writer)
            return batch, False
        return self._new_batch(slot, now, writer), True

    def append(
        self,
        slot: int,
        message_id: int,
        key: bytes | None,
        value: bytes,
        intended: float,
        now: float,
        timestamp_ms: int,
    ) -> int:
        """Add one record; returns APPENDED, BECAME_NONEMPTY or BATCH_FILLED."""
        events: list[tuple[int, int, int]] = []
        self._fill(slot, 0, 1, now, False, _RecordPut(
            (key,), (value,), timestamp_ms, NO_HEADERS), (message_id,), (intended,), _FIRST,
            events)
        self.queued_records += 1
        return events[-1][2] if events else APPENDED

    def append_many(
        self,
        slots: list[int],
        message_ids: range,
        keys: list[bytes] | None,
        values: list[bytes],
        intended: list[float] | np.ndarray,
        now: float,
        timestamp_ms: int,
        headers: Sequence[tuple[str, bytes | None]] = NO_HEADERS,
        value_size: int | None = None,
    ) -> list[tuple[int, int]]:
        """Append a whole generator pass: the same batches, bytes, ids, intended times,
        accounting and events as appending record by record (`append_each`).

        `value_size`: every value has this many bytes (a fixed-size payload: the caller
        knows). Keyless and headerless, such a pass is framed from a table
        (`_FramedPut`). `intended` may be a float64 array (saves the generator a list and
        this a conversion).

        The hottest code in kbatch. A large pass is grouped by slot (slots are independent,
        so each slot's records keep their order and batch boundaries): per record, only
        the builder's `append` and its refusal check remain; the queue, the open batch, the
        ids, the intended times and the record bytes are dealt with once per slot and batch
        (`_fill`, the one place batches are opened, filled, closed and accounted). A small
        pass goes record by record through the same `_fill`. Returns the (slot, event)
        pairs whose event is not APPENDED, in record order, for the policy.
        """
        count = len(values)
        if (count < BULK_MIN_RECORDS or count < BULK_MIN_PER_SLOT * len(self.slots)
                or type(message_ids) is not range):
            if type(intended) is np.ndarray:
                intended = intended.tolist()
            return self.append_each(slots, message_ids, keys, values,
                                    intended,  # type: ignore[arg-type]  # a list by now
                                    now, timestamp_ms, headers)
        if len(slots) != count or len(intended) != count or len(message_ids) != count or (
                keys is not None and len(keys) != count):
            raise ValueError("append_many: slots, ids, keys, values and intended differ in "
                             "length")
        if keys is None:
            slot_key = tuple(slots)
            grouping = self._groupings.get(slot_key)
            if grouping is None:
                if len(self._groupings) >= _GROUPINGS_KEPT:
                    self._groupings.clear()
                grouping = self._groupings[slot_key] = _Grouping(slots)
        else:
            grouping = _Grouping(slots)
        order = grouping.order
        pick = grouping.pick
        values_sorted = pick(values)
        ids_sorted = _to_array("q", np.arange(message_ids.start, message_ids.stop,
                                              message_ids.step, dtype=np.int64)[order])
        intended_sorted = _to_array("d", np.asarray(intended, dtype=np.float64)[order])
        framed = value_size is not None and keys is None and not headers
        put: _RecordPut | _FramedPut
        if framed:
            assert value_size is not None
            put = _FramedPut(values_sorted, timestamp_ms, value_size)
        else:
            keys_sorted = pick(keys) if keys is not None else (None,) * count
            put = _RecordPut(keys_sorted, values_sorted, timestamp_ms, headers)
        events: list[tuple[int, int, int]] = []
        fill = self._fill
        order_list = grouping.order_list
        for slot, begin, end in zip(grouping.group_slots, grouping.starts, grouping.ends,
                                    strict=True):
            fill(slot, begin, end, now, framed, put, ids_sorted, intended_sorted, order_list,
                 events)
        if framed:
            put.share_out()  # type: ignore[union-attr]  # framed: put is a _FramedPut
        self.queued_records += count
        events.sort()
        return [(slot, event) for _, slot, event in events]

    def append_each(
        self,
        slots: list[int],
        message_ids: range,
        keys: list[bytes] | None,
        values: list[bytes],
        intended: list[float],
        now: float,
        timestamp_ms: int,
        headers: Sequence[tuple[str, bytes | None]] = NO_HEADERS,
    ) -> list[tuple[int, int]]:
        """A pass one record at a time, in order: what `append_many` does for small
        passes, and the reference its grouped path must match byte for byte.

        Returns the (slot, event) pairs whose event is not APPENDED, in order.
        """
        count = len(slots)
        if len(values) != count or len(intended) != count or len(message_ids) != count or (
                keys is not None and len(keys) != count):
            raise ValueError("append_each: slots, ids, keys, values and intended differ in "
                             "length")
        put = _RecordPut(keys if keys is not None else (None,) * count, values,
                         timestamp_ms, headers)
        ids = message_ids if type(message_ids) is range else list(message_ids)
        events: list[tuple[int, int, int]] = []
        fill = self._fill
        order = range(count)  # the pass in its own order: record i is record i
        for index, slot in enumerate(slots):
            fill(slot, index, index + 1, now, False, put, ids, intended, order, events)
        self.queued_records += len(values)
        return [(slot, event) for _, slot, event in events]

    def _fill(self, slot: int, begin: int, end: int, now: float, framed: bool,
              put: _RecordPut | _FramedPut, ids: Any, intended: Any, order: Any,
              events: list[tuple[int, int, int]]) -> None:
        """Append records [begin, end) of a pass to `slot`: into its open batch until the
        builder refuses one (the batch is full), then into a new batch, and so on. The one
        place batches are opened, filled, closed and accounted; `put` appends records to
        a builder. `order[i]`: record i's index in the pass (events are sorted by it)."""
        batch, was_empty = self._open_batch(slot, now, framed)
        if was_empty:
            events.append((order[begin], slot, BECAME_NONEMPTY))
        # a SlotQueue, not NO_BATCHES: _open_batch just gave the slot a batch
        queue: SlotQueue = self.queues[slot]  # type: ignore[assignment]  # see above
        pos = begin
        while True:
            assert batch.builder is not None
            taken, size = put.put(batch.builder, len(batch.ids), pos, end)
            if taken:
                if taken == 1:
                    batch.ids.append(ids[pos])
                    batch.intended.append(intended[pos])
                else:
                    batch.ids.extend(ids[pos:pos + taken])
                    batch.intended.extend(intended[pos:pos + taken])
                batch.record_bytes += size
                queue.record_bytes += size
                self.queued_bytes += size
                pos += taken
            elif not batch.ids:
                raise ValueError("a record does not fit an empty batch")
            if pos == end:
                return
            # the batch is full: the next record starts a new one
            batch.closed = True
            batch = self._new_batch(slot, now, framed)
            events.append((order[pos], slot, BATCH_FILLED))

    def has_data(self, slot: int) -> bool:
        return bool(self.queues[slot])

    def open_room(self, slot: int) -> int | None:
        """Bytes the slot's open batch can still take (a record fits when it is smaller:
        both builders refuse one that would reach `batch_size`); None without one."""
        queue = self.queues[slot]
        if not queue or queue[-1].closed:
            return None
        return self.batch_size - queue[-1].size_bytes()

    def close_open(self, slot: int) -> bool:
        """Close the slot's open batch to appends, as the Java producer does as soon as a
        record does not fit, before that record's `send()` has a new batch (a trace
        replay sees such a `send()` under way); False when it has no open batch."""
        queue = self.queues[slot]
        if not queue or queue[-1].closed:
            return False
        queue[-1].closed = True
        return True

    def slot_bytes(self, slot: int) -> int:
        """Record bytes of every batch queued in `slot` (0 when it has none)."""
        queue = self.queues[slot]
        return queue.record_bytes if type(queue) is SlotQueue else 0

    def head(self, slot: int) -> ProducerBatch | None:
        """The batch that would be drained next; None if none is, or the slot is held."""
        queue = self.queues[slot]
        return queue[0] if queue and slot not in self.held else None

    def hold(self, slot: int) -> None:
        self.held.add(slot)

    def release(self, slot: int) -> None:
        self.held.discard(slot)

    def head_is_full(self, slot: int) -> bool:
        queue = self.queues[slot]
        return bool(queue) and (queue[0].closed or len(queue) > 1)

    def nonempty_slots(self) -> list[int]:
        """Slots with queued records (a transaction adds their partitions before sending)."""
        return [slot for slot, queue in enumerate(self.queues) if queue]

    def pop_head(self, slot: int, now: float) -> ProducerBatch:
        """Take the oldest batch of a slot for sending; it is closed and leaves the queue."""
        # a SlotQueue, not NO_BATCHES: callers pop a slot that has a head batch
        queue: SlotQueue = self.queues[slot]  # type: ignore[assignment]  # see above
        batch = queue.popleft()
        if queue:
            queue.record_bytes -= batch.record_bytes
        else:
            self.queues[slot] = NO_BATCHES
        batch.closed = True
        if self.compression:
            batch.seal()  # its compressed size counts from now on (a requeue drains it again)
        # uncompressed, the bytes are built at its first send (`Sender.build`): the
        # builder's size is the built size, and an idempotent batch is built with its
        # producer id and sequence in one pass instead of patched and re-checksummed
        batch.drained_at = now
        self.queued_records -= batch.record_count
        self.queued_bytes -= batch.record_bytes
        self.queued_batches -= 1
        return batch

    def requeue_front(self, batch: ProducerBatch) -> None:
        """Put a batch back at the head of its queue for a retry, keeping partition order:
        behind re-queued batches that were first sent before it, before everything else
        (with idempotence that is sequence order)."""
        queue = self._queue(batch.slot)
        index = 0
        for queued in queue:
            if not 0 <= queued.order < batch.order:
                break
            index += 1
        queue.insert(index, batch)
        queue.record_bytes += batch.record_bytes
        self.queued_records += batch.record_count
        self.queued_bytes += batch.record_bytes
        self.queued_batches += 1

    def take_all(self) -> list[ProducerBatch]:
        """Every queued batch, removed (a run that was interrupted settles them)."""
        taken = [batch for queue in self.queues for batch in queue]
        self.queues[:] = [NO_BATCHES] * len(self.slots)  # in place: partitioners hold the list
        self.held.clear()
        self.queued_records = self.queued_bytes = self.queued_batches = 0
        return taken

    @property
    def empty(self) -> bool:
        return self.queued_records == 0


REQUEST_OVERHEAD_BYTES = 128
"""Request header, acks, timeout, topic names: a generous bound for one ProduceRequest."""
PARTITION_OVERHEAD_BYTES = 16
"""Partition index and record-set length prefix within a ProduceRequest."""


class HeadQueues(Protocol):
    """What `drain_request` takes from the queues (a policy's `QueueView` has it): the head
    batch of a slot, and a way to take it."""

    def head(self, slot: int) -> ProducerBatch | None: ...

    def pop_head(self, slot: int, now: float) -> ProducerBatch: ...


def drain_request(
    accumulator: HeadQueues,
    candidates: list[int],
    now: float,
    max_request_size: int,
    max_partitions: int | None,
) -> list[ProducerBatch]:
    """Take the head batch of each candidate slot, in order, while the request has room.

    One batch per partition per request (Kafka brokers accept only one record batch per
    partition in a ProduceRequest). Candidates that were taken are removed from the list;
    the rest stay for the next request. The first candidate always goes, so a request can
    never be empty.
    """
    taken: list[ProducerBatch] = []
    size = REQUEST_OVERHEAD_BYTES
    kept: list[int] = []
    for index, slot in enumerate(candidates):
        if max_partitions is not None and len(taken) >= max_partitions:
            kept.extend(candidates[index:])
            break
        head = accumulator.head(slot)
        if head is None:
            continue
        need = head.size_bytes() + PARTITION_OVERHEAD_BYTES
        if taken and size + need > max_request_size:
            kept.append(slot)
            continue
        size += need
        taken.append(accumulator.pop_head(slot, now))
    candidates[:] = kept
    return taken
