"""Java's sticky partitioners for keyless messages, on kbatch's accumulator.

kbatch chooses a pass's partitions before appending them, so the choosers predict the
accumulator: a record of `size` bytes fits the open batch of a partition if the batch's
builder has `size` bytes of room left (`open_room`); otherwise appending it would create a
new batch. Record size is estimated as key + value + headers + `RECORD_OVERHEAD` (the
varints of a v2 record), so a switch may come one record early or late.

- `Kip480` (`sticky`, Java 2.4-3.2): `onNewBatch`: when the sticky partition would need a
  new batch (its batch is full, or was drained: sent), switch first to another random
  partition and put the record there. Under a long linger this means "until full".
- `UniformSticky` (`uniform_sticky`, KIP-794, Java's `BuiltInPartitioner`): switch after
  `batch.size` bytes were produced to the partition, at a record that started a new batch,
  or at twice `batch.size` regardless. The next partition is uniform at random, or with
  `partitioner.adaptive.partitioning.enable` weighted by `max queue + 1 - queue` (queue:
  batches queued for the partition), leaving out partitions whose leader has had a ready
  batch undrained for more than `partitioner.availability.timeout.ms`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

BATCH_HEADER = 61
"""Bytes of a v2 record batch header: a new batch's builder starts with them."""
RECORD_OVERHEAD = 12
"""Attributes, offset and timestamp deltas, and the length varints of one v2 record."""


def record_sizes(values: list[bytes], keys: list[bytes] | None, header_bytes: int) -> list[int]:
    """Estimated bytes each record adds to a batch."""
    extra = RECORD_OVERHEAD + header_bytes
    if keys is None:
        return [len(v) + extra for v in values]
    return [len(v) + len(k) + extra for v, k in zip(values, keys, strict=True)]


class _Sticky:
    """What both choosers share: the topic's slots in the accumulator and a seeded rng."""

    def __init__(self, partitions: int, first_slot: int, accumulator: Any, seed: int,
                 batch_size: int) -> None:
        self.partitions = partitions
        self.first_slot = first_slot
        self.queues = getattr(accumulator, "queues", None)  # None: no accumulator (librdkafka)
        self.batch_size = batch_size
        self.rng = np.random.default_rng(seed)
        self.current: int | None = None
        self._room = 0  # room of the current partition's open batch, when there are no queues
        self._pass_room: dict[int, int] = {}  # partitions left earlier in this pass
        self.switches = 0

    def open_room(self, partition: int) -> int:
        """Bytes left in the partition's open batch (0: it has none, a record starts one)."""
        if partition in self._pass_room:  # chosen earlier in this pass, not appended yet
            return self._pass_room[partition]
        if self.queues is None:
            return self._room if partition == self.current else 0
        queue = self.queues[self.first_slot + partition]
        if not queue:
            return 0
        last = queue[-1]
        if last.closed or last.builder is None:
            return 0
        return self.batch_size - last.builder.size()

    def random_partition(self, avoid: int | None = None) -> int:
        """Uniform over the partitions, other than `avoid` when there is a choice."""
        if avoid is None or self.partitions == 1:
            return int(self.rng.integers(self.partitions))
        pick = int(self.rng.integers(self.partitions - 1))
        return pick + 1 if pick >= avoid else pick

    def _append(self, partition: int, room: int, size: int) -> tuple[int, bool]:
        """Room left after a record of `size` goes to `partition`, and whether it started
        a new batch."""
        if room >= size:
            return room - size, False
        return self.batch_size - BATCH_HEADER - size, True


class Kip480(_Sticky):
    """`partitioner=sticky`: stick until the partition needs a new batch (KIP-480).

    Java's `tryAppend` closes the batch a record did not fit before `onNewBatch` switches
    away, so that batch is full and sent at once. kbatch appends after choosing: the
    partitions left this way are closed after the pass is appended (`finish_pass`).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.abandoned: list[int] = []

    def finish_pass(self) -> list[int]:
        """Close the open batch of each partition switched away from for lack of room;
        returns their slots (the generator reports them as BATCH_FILLED)."""
        closed = []
        if self.queues is not None:
            for partition in self.abandoned:
                slot = self.first_slot + partition
                queue = self.queues[slot]
                if queue and not queue[-1].closed and queue[-1].ids:
                    queue[-1].closed = True
                    closed.append(slot)
        self.abandoned.clear()
        return closed

    def choose(self, sizes: list[int], now: float) -> list[int]:
        self._pass_room.clear()
        partition = self.current
        room = 0 if partition is None else self.open_room(partition)
        out = []
        for size in sizes:
            if partition is None:
                partition = self.random_partition()
                room = self.open_room(partition)
            elif room < size:  # onNewBatch: switch before the record makes a new batch
                if room > 0:
                    self.abandoned.append(partition)
                self._pass_room[partition] = 0  # closed after the pass
                partition = self.random_partition(avoid=partition)
                if partition in self.abandoned:  # back in the same pass: the record that
                    self.abandoned.remove(partition)  # does not fit closes it (BATCH_FILLED)
                room = self.open_room(partition)
                self.switches += 1
            room, _ = self._append(partition, room, size)
            out.append(partition)
        self.current, self._room = partition, room
        return out


class UniformSticky(_Sticky):
    """`partitioner=uniform_sticky`: KIP-794's switch after batch.size bytes, optionally
    weighted by queue sizes and skipping slow brokers (adaptive partitioning)."""

    def __init__(self, partitions: int, first_slot: int, accumulator: Any, seed: int,
                 batch_size: int, adaptive: bool = False, availability_timeout_s: float = 0.0,
                 linger_s: float = 0.0, leaders: list[int] | None = None) -> None:
        super().__init__(partitions, first_slot, accumulator, seed, batch_size)
        self.adaptive = adaptive and self.queues is not None and partitions > 1
        self.availability_timeout_s = availability_timeout_s
        self.linger_s = linger_s
        self.leaders = leaders
        self.produced = 0
        self._cft: tuple[np.ndarray, np.ndarray] | None = None
        self.excluded = 0  # partitions left out by the availability timeout, last check

    def load_stats(self, now: float) -> tuple[np.ndarray, np.ndarray] | None:
        """(cumulative frequency table, partition ids), or None for uniform: Java's
        `updatePartitionLoadStats` over the queue sizes of this topic's partitions."""
        assert self.queues is not None
        first = self.first_slot
        queues = self.queues[first:first + self.partitions]
        sizes = np.fromiter((len(q) for q in queues), dtype=np.int64, count=self.partitions)
        ids = np.arange(self.partitions)
        if self.availability_timeout_s > 0 and self.leaders is not None:
            slow = self._slow_brokers(queues, now)
            if slow:
                leaders = np.asarray(self.leaders[first:first + self.partitions])
                keep = ~np.isin(leaders, list(slow))
                sizes, ids = sizes[keep], ids[keep]
        self.excluded = self.partitions - len(ids)
        if len(ids) < 1:
            return None
        top = int(sizes.max()) + 1
        if self.excluded == 0 and int(sizes.min()) == top - 1:
            return None  # all equal: uniform
        return np.cumsum(top - sizes), ids

    def _slow_brokers(self, queues: list[Any], now: float) -> set[int]:
        """Leaders with a batch that has been ready (created + linger.ms) and undrained
        for longer than the availability timeout: Java's `readyTimeMs - drainTimeMs`."""
        limit = now - self.linger_s - self.availability_timeout_s
        slow: set[int] = set()
        assert self.leaders is not None
        for offset, queue in enumerate(queues):
            if queue and queue[0].created < limit:
                slow.add(self.leaders[self.first_slot + offset])
        return slow

    def refresh_load_stats(self, now: float) -> None:
        """Recompute the weights (once per generator pass, as Java's sender loop does)."""
        self._cft = self.load_stats(now)

    def next_partition(self) -> int:
        if self._cft is None:
            return self.random_partition()
        cft, ids = self._cft
        pick = int(self.rng.integers(int(cft[-1])))
        return int(ids[int(np.searchsorted(cft, pick, side="right"))])

    def choose(self, sizes: list[int], now: float) -> list[int]:
        self._pass_room.clear()
        if self.adaptive:
            self.refresh_load_stats(now)
        partition = self.current
        if partition is None:
            partition = self.next_partition()
        room = self.open_room(partition)
        produced, limit = self.produced, self.batch_size
        out = []
        for size in sizes:
            out.append(partition)
            room, new_batch = self._append(partition, room, size)
            produced += size
            if (produced >= limit and new_batch) or produced >= 2 * limit:
                self._pass_room[partition] = room
                partition = self.next_partition()
                room = self.open_room(partition)
                produced = 0
                self.switches += 1
        self.current, self._room, self.produced = partition, room, produced
        return out
