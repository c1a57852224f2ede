"""Per-partition linger deadlines, shared by the modes that time each partition (partition,
java): when does a slot's head batch reach `linger.ms`?

Entries (deadline, tie-breaker, slot, head batch), invalidated lazily: an entry whose
batch is no longer its slot's head (it was drained) is skipped when it surfaces. A new
batch's deadline is never earlier than the last one watched (the clock only moves on), so
those go to a FIFO in order, in O(1); the rest (a head that was queued behind a drained
batch, older than the last watched) go to a heap. Entries come out of the two merged in
(deadline, tie-breaker) order, as from one heap.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import deque
from collections.abc import Iterator

from producer_core.engine.core.accumulator import ProducerBatch
from producer_core.engine.core.linger.base import QueueView


def floor_tick(t: float, tick: float) -> float:
    """`t` as a clock that ticks every `tick` reads it (the last tick at or before `t`).
    A nanosecond of slack keeps decimal times such as 0.009 s on their own millisecond."""
    return math.floor(t / tick + 1e-6) * tick


class HeadDeadlines:
    def __init__(self, accumulator: QueueView, linger_s: float, quantum_s: float = 0.0) -> None:
        self.accumulator = accumulator
        self.linger_s = linger_s
        self.quantum_s = quantum_s
        self._heap: list[tuple[float, int, int, ProducerBatch]] = []
        self._fifo: deque[tuple[float, int, int, ProducerBatch]] = deque()
        self._seq = itertools.count()

    def watch(self, slot: int, head: ProducerBatch) -> None:
        """Time `head` (the slot's current head batch) from its first record."""
        entry = (self.deadline(head.created), next(self._seq), slot, head)
        fifo = self._fifo
        if not fifo or entry[0] >= fifo[-1][0]:
            fifo.append(entry)
        else:
            heapq.heappush(self._heap, entry)

    def _pop(self) -> tuple[float, int, int, ProducerBatch]:
        """The earliest entry (the caller knows there is one)."""
        fifo, heap = self._fifo, self._heap
        if fifo and (not heap or fifo[0] < heap[0]):  # the tie-breaker decides: unique
            return fifo.popleft()
        return heapq.heappop(heap)

    def _first(self) -> tuple[float, int, int, ProducerBatch] | None:
        fifo, heap = self._fifo, self._heap
        if fifo and (not heap or fifo[0] < heap[0]):
            return fifo[0]
        return heap[0] if heap else None

    def deadline(self, created: float) -> float:
        """When a batch created at `created` has waited `linger_s`, on a clock that ticks
        every `quantum_s` (0: a continuous one), where both times read as their last tick."""
        if self.quantum_s > 0:
            created = floor_tick(created, self.quantum_s)
        return created + self.linger_s

    def expired(self, now: float, everything: bool = False,
                before: bool = False) -> Iterator[int]:
        """Slots whose head has waited `linger_s` by `now` (strictly before `now` with
        `before`; all watched ones if `everything`, as on flush); each is handed out once."""
        head = self.accumulator.head
        while (first := self._first()) is not None and (
                everything or first[0] < now or (first[0] == now and not before)):
            _, _, slot, batch = self._pop()
            if head(slot) is batch:
                yield slot

    def next_deadline(self) -> float | None:
        """The earliest deadline of a batch that is still its slot's head."""
        head = self.accumulator.head
        while (first := self._first()) is not None and head(first[2]) is not first[3]:
            self._pop()
        return first[0] if first is not None else None
