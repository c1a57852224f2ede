"""Per-partition linger deadlines, shared by the modes that time each partition (partition,
java): when does a slot's head batch reach `linger.ms`?

A heap of (deadline, tie-breaker, slot, head batch), invalidated lazily: an entry whose
batch is no longer its slot's head (it was drained) is skipped when it surfaces.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Iterator

from producer_core.core.accumulator import ProducerBatch
from producer_core.core.linger.base import QueueView


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
        self._seq = itertools.count()

    def watch(self, slot: int, head: ProducerBatch) -> None:
        """Time `head` (the slot's current head batch) from its first record."""
        heapq.heappush(self._heap, (self.deadline(head.created), next(self._seq), slot, head))

    def deadline(self, created: float) -> float:
        """When a batch created at `created` has waited `linger_s`, on a clock that ticks
        every `quantum_s` (0: a continuous one), where both times read as their last tick."""
        if self.quantum_s > 0:
            created = floor_tick(created, self.quantum_s)
        return created + self.linger_s

    def expired(self, now: float, everything: bool = False) -> Iterator[int]:
        """Slots whose head has waited `linger_s` by `now` (all watched ones if
        `everything`, as on flush); each is handed out once."""
        heap = self._heap
        head = self.accumulator.head
        while heap and (everything or heap[0][0] <= now):
            _, _, slot, batch = heapq.heappop(heap)
            if head(slot) is batch:
                yield slot

    def next_deadline(self) -> float | None:
        """The earliest deadline of a batch that is still its slot's head."""
        heap = self._heap
        head = self.accumulator.head
        while heap and head(heap[0][2]) is not heap[0][3]:
            heapq.heappop(heap)
        return heap[0][0] if heap else None
