"""Per-partition record batches, built with aiokafka's C record-batch builder (or, for
large passes of same-sized keyless values, kbatch's `record_batch.RecordBatchWriter`).

Like Java's RecordAccumulator: every partition has a deque of batches; only the last is
open for appends, the ones before it are full. Each batch also keeps, per record, the
message id and the intended send time, so an acknowledgement can be turned into exact
per-message latencies without touching the records again.

Pure data: no clock (times come in as arguments) and no I/O.
"""

from __future__ import annotations

import struct
from array import array
from collections import deque
from dataclasses import dataclass
from operator import itemgetter

import numpy as np
from aiokafka.record.default_records import DefaultRecordBatchBuilder

from producer_core.checksum import crc32c
from producer_core.record_batch import NO_HEADERS_FIELD, RecordBatchWriter

COMPRESSION_CODES = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
NO_HEADERS: list[tuple[str, bytes | None]] = []

APPENDED = 0
"""`append` result: the record joined an open batch."""
BECAME_NONEMPTY = 1
"""`append` result: the partition had nothing queued; this record started its first batch."""
BATCH_FILLED = 2
"""`append` result: the open batch was full; it closed and the record started a new one."""


@dataclass(frozen=True)
class TopicPartition:
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


def _to_array(typecode: str, values: np.ndarray) -> array:
    """A contiguous int64/float64 ndarray as an `array` of the same items (one copy)."""
    out = array(typecode)
    out.frombytes(memoryview(values).cast("B"))
    return out


def _add_segment(batch: ProducerBatch, ids: array, intended: array, begin: int, end: int,
                 before: int) -> int:
    """Give `batch` the ids and intended times of sorted records [begin, end) it took,
    and its record bytes (what its builder grew by since `before`); returns those bytes."""
    batch.ids.extend(ids[begin:end])
    batch.intended.extend(intended[begin:end])
    assert batch.builder is not None
    grown = batch.builder.size() - before
    batch.record_bytes += grown
    return grown


class Accumulator:
    """Queues records per partition slot. A slot is an index into `slots` (topic, partition)."""

    def __init__(self, slots: list[TopicPartition], batch_size: int, compression: str = "none"):
        self.slots = slots
        self.batch_size = batch_size
        self.compression = COMPRESSION_CODES[compression]
        self.queues: list[deque[ProducerBatch]] = [deque() for _ in slots]
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
        self.queues[slot].append(batch)
        self.queued_batches += 1
        return batch

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
        batch, was_empty = self._open_batch(slot, now)
        result = BECAME_NONEMPTY if was_empty else APPENDED
        builder = batch.builder
        metadata = builder.append(len(batch.ids), timestamp_ms, key, value, NO_HEADERS)
        if metadata is None:
            batch.closed = True
            batch = self._new_batch(slot, now)
            builder = batch.builder
            metadata = builder.append(0, timestamp_ms, key, value, NO_HEADERS)
            result = BATCH_FILLED
        batch.ids.append(message_id)
        batch.intended.append(intended)
        batch.record_bytes += metadata.size
        self.queued_bytes += metadata.size
        self.queued_records += 1
        return result

    def append_many(
        self,
        slots: list[int],
        message_ids: range,
        keys: list[bytes] | None,
        values: list[bytes],
        intended: list[float] | np.ndarray,
        now: float,
        timestamp_ms: int,
        headers: list[tuple[str, bytes | None]] = NO_HEADERS,
        value_size: int | None = None,
    ) -> list[tuple[int, int]]:
        """`append` for a whole generator pass: the same batches, bytes, ids, intended
        times, accounting and events as appending record by record (`append_each`).

        `value_size`: every value has this many bytes (a fixed-size payload: the caller
        knows). Keyless and headerless, such a pass goes to `_append_framed`. `intended`
        may be a float64 array (saves the generator a list and this a conversion).

        The hottest code in kbatch. A pass is grouped by slot (slots are independent, so
        each slot's records keep their order and batch boundaries): per record, only the C
        builder's `append` and its refusal check remain; the queue, the open batch, the
        offset, the ids, the intended times and the record bytes (what the builder grew
        by) are dealt with once per slot and batch. Returns the (slot, event) pairs whose
        event is not APPENDED, in record order, for the policy.
        """
        count = len(values)
        if (count < BULK_MIN_RECORDS or count < BULK_MIN_PER_SLOT * len(self.slots)
                or type(message_ids) is not range):
            if type(intended) is np.ndarray:
                intended = intended.tolist()
            return self.append_each(slots, message_ids, keys, values, intended, now,
                                    timestamp_ms, headers)
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
        starts, ends, group_slots = grouping.starts, grouping.ends, grouping.group_slots
        order_list = grouping.order_list
        pick = grouping.pick
        values_sorted = pick(values)
        keys_sorted = pick(keys) if keys is not None else None
        ids_sorted = _to_array("q", np.arange(message_ids.start, message_ids.stop,
                                              message_ids.step, dtype=np.int64)[order])
        intended_sorted = _to_array("d", np.asarray(intended, dtype=np.float64)[order])
        if value_size is not None and keys is None and not headers:
            return self._append_framed(group_slots, starts, ends, order_list, values_sorted,
                                       ids_sorted, intended_sorted, now, timestamp_ms,
                                       value_size)
        open_batch = self._open_batch
        events: list[tuple[int, int, int]] = []
        record_bytes = 0
        for slot, begin, end in zip(group_slots, starts, ends, strict=True):
            batch, was_empty = open_batch(slot, now)
            if was_empty:
                events.append((order_list[begin], slot, BECAME_NONEMPTY))
            builder = batch.builder
            offset = len(batch.ids)
            before = builder.size()
            segment = pos = begin
            while True:
                append = builder.append
                first = offset
                if keys_sorted is None:
                    for value in values_sorted[pos:end]:
                        if append(offset, timestamp_ms, None, value, headers) is None:
                            break
                        offset += 1
                    else:
                        break
                else:
                    for key, value in zip(keys_sorted[pos:end], values_sorted[pos:end],
                                          strict=True):
                        if append(offset, timestamp_ms, key, value, headers) is None:
                            break
                        offset += 1
                    else:
                        break
                # the builder refused a record: the batch is full, the record starts a new one
                pos += offset - first
                record_bytes += _add_segment(batch, ids_sorted, intended_sorted, segment, pos,
                                             before)
                batch.closed = True
                batch = self._new_batch(slot, now)
                events.append((order_list[pos], slot, BATCH_FILLED))
                builder = batch.builder
                offset = 0
                before = builder.size()
                segment = pos
            record_bytes += _add_segment(batch, ids_sorted, intended_sorted, segment, end,
                                         before)
        self.queued_bytes += record_bytes
        self.queued_records += count
        events.sort()
        return [(slot, event) for _, slot, event in events]

    def _append_framed(self, group_slots: list[int], starts: list[int], ends: list[int],
                       order: list[int], values: tuple[bytes, ...], ids: array,
                       intended: array, now: float, timestamp_ms: int, value_size: int
                       ) -> list[tuple[int, int]]:
        """`append_many` for keyless, headerless records of `value_size` bytes, sorted by
        slot (groups [starts[g], ends[g]) of slot group_slots[g]): new batches are
        `RecordBatchWriter`s, and every record of the pass that goes to one is framed
        from a table (`RecordBatchWriter.plan`) and joined with the others in one
        `b"".join`, the joined bytes then shared out to the writers. A group whose open
        batch has a C builder (left by smaller passes) goes into it record by record
        until it fills."""
        open_batch = self._open_batch
        events: list[tuple[int, int, int]] = []
        record_bytes = 0
        framed: list[bytes] = []
        """Per record going to a writer, in order: its prefix (length ... value length)."""
        bodies: list[bytes] | None = None
        """... and its value: `values` itself unless some records went to a C builder."""
        shares: list[tuple[RecordBatchWriter, int]] = []
        """(writer, bytes) in the same order: who gets which stretch of the joined bytes."""
        for slot, begin, end in zip(group_slots, starts, ends, strict=True):
            batch, was_empty = open_batch(slot, now, True)
            if was_empty:
                events.append((order[begin], slot, BECAME_NONEMPTY))
            pos = begin
            while True:
                builder = batch.builder
                taken = 0
                if type(builder) is RecordBatchWriter:
                    taken, prefixes, size = builder.plan(timestamp_ms, end - pos, value_size)
                    if taken:
                        framed += prefixes
                        if bodies is not None:
                            bodies += values[pos:pos + taken]
                        shares.append((builder, size))
                else:  # aiokafka's C builder, opened by an earlier small pass
                    assert builder is not None
                    if bodies is None:  # the values framed so far: all of those before
                        bodies = list(values[:pos])
                    offset = len(batch.ids)
                    before = builder.size()
                    for value in values[pos:end]:
                        if builder.append(offset + taken, timestamp_ms, None, value,
                                          NO_HEADERS) is None:
                            break
                        taken += 1
                    size = builder.size() - before
                batch.ids.extend(ids[pos:pos + taken])
                batch.intended.extend(intended[pos:pos + taken])
                batch.record_bytes += size
                record_bytes += size
                pos += taken
                if pos == end:
                    break
                # the batch is full: the next record starts a new one
                batch.closed = True
                batch = self._new_batch(slot, now, True)
                events.append((order[pos], slot, BATCH_FILLED))
        if framed:
            count = len(framed)
            parts: list[bytes] = [b""] * (3 * count)
            parts[0::3] = framed
            parts[1::3] = values if bodies is None else bodies
            parts[2::3] = (NO_HEADERS_FIELD,) * count
            joined = b"".join(parts)
            if len(joined) != sum(size for _, size in shares):
                raise ValueError(f"append_many: a value is not {value_size} bytes long")
            start = 0
            for writer, size in shares:
                writer.chunks.append(joined[start:start + size])
                start += size
        self.queued_bytes += record_bytes
        self.queued_records += len(values)
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
        headers: list[tuple[str, bytes | None]] = NO_HEADERS,
    ) -> list[tuple[int, int]]:
        """`append` for a whole generator pass, one record at a time: what `append_many`
        does for small passes, and the reference its grouped path must match byte for byte.

        Returns the (slot, event) pairs whose event is not APPENDED, in order.
        """
        open_batch = self._open_batch
        events: list[tuple[int, int]] = []
        record_bytes = 0
        key_iter = keys if keys is not None else [None] * len(values)
        for slot, message_id, key, value, when in zip(
            slots, message_ids, key_iter, values, intended, strict=True
        ):
            batch, was_empty = open_batch(slot, now)
            if was_empty:
                events.append((slot, BECAME_NONEMPTY))
            ids = batch.ids
            metadata = batch.builder.append(len(ids), timestamp_ms, key, value, headers)
            if metadata is None:
                batch.closed = True
                batch = self._new_batch(slot, now)
                ids = batch.ids
                metadata = batch.builder.append(0, timestamp_ms, key, value, headers)
                events.append((slot, BATCH_FILLED))
            ids.append(message_id)
            batch.intended.append(when)
            size = metadata.size
            batch.record_bytes += size
            record_bytes += size
        self.queued_bytes += record_bytes
        self.queued_records += len(values)
        return events

    def has_data(self, slot: int) -> bool:
        return bool(self.queues[slot])

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
        batch = self.queues[slot].popleft()
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
        queue = self.queues[batch.slot]
        index = 0
        for queued in queue:
            if not 0 <= queued.order < batch.order:
                break
            index += 1
        queue.insert(index, batch)
        self.queued_records += batch.record_count
        self.queued_bytes += batch.record_bytes
        self.queued_batches += 1

    def take_all(self) -> list[ProducerBatch]:
        """Every queued batch, removed (a run that was interrupted settles them)."""
        taken = [batch for queue in self.queues for batch in queue]
        for queue in self.queues:
            queue.clear()
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


def drain_request(
    accumulator: Accumulator,
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
