"""Per-partition linger (librdkafka / Java `linger.ms` semantics, one partition at a time).

A partition is ready when its oldest queued batch has waited `linger.ms` since its first
record, or when it holds a full batch. A request to a broker carries only the partitions
ready at that moment, oldest first, up to `max.request.size` and
`produce.request.max.partitions`. Partitions therefore expire at staggered times and
requests stay small: the "before" of the broker-level linger design.

Mode `none` is the same policy with linger 0: whatever is queued goes as soon as a request
slot is free, and what queues meanwhile rides along in the next request.
"""

from __future__ import annotations

from collections import Counter
from itertools import islice

from producer_core.engine.core.accumulator import (
    BATCH_FILLED,
    BECAME_NONEMPTY,
    ProducerBatch,
    drain_request,
)
from producer_core.engine.core.linger.base import (
    LingerPolicy,
    PollContext,
    QueueView,
    RequestLimits,
    RequestPlan,
)
from producer_core.engine.core.linger.deadlines import HeadDeadlines


class PartitionLinger(LingerPolicy):
    name = "partition"

    def __init__(
        self,
        accumulator: QueueView,
        leaders: list[int],
        limits: RequestLimits,
        linger_s: float,
    ) -> None:
        super().__init__(accumulator, leaders, limits)
        self.linger_s = linger_s
        self._deadlines = HeadDeadlines(accumulator, linger_s)
        # broker -> ready slots, in the order they became ready (oldest first)
        self._ready: dict[int, dict[int, None]] = {}
        self._slots_full = False
        """The last poll left no broker a free request slot: a linger deadline can then
        send nothing, so it wakes no one (a response, which frees a slot, always brings a
        poll). At 10,000 partitions every batch has its own deadline, and on a broker
        that answers slowly most of those wake-ups found every slot taken."""

    def _mark_ready(self, slot: int) -> None:
        self._ready.setdefault(self.leaders[slot], {})[slot] = None

    def set_leaders(self, leaders: list[int]) -> None:
        ready = [slot for marks in self._ready.values() for slot in marks]
        super().set_leaders(leaders)
        self._ready = {}
        for slot in ready:
            self._mark_ready(slot)

    def _watch_head(self, slot: int) -> None:
        """Register the slot's current head: ready if full (or linger 0), else wait for it."""
        head = self.accumulator.head(slot)
        if head is None:
            return
        if self.linger_s <= 0 or self.accumulator.head_is_full(slot):
            self._mark_ready(slot)
        else:
            self._deadlines.watch(slot, head)

    def on_append(self, slot: int, event: int, now: float) -> None:
        self._catch_up(now)
        if event == BECAME_NONEMPTY:
            self._watch_head(slot)
        elif event == BATCH_FILLED:
            self._mark_ready(slot)

    def on_requeue(self, slot: int, now: float) -> None:
        self._catch_up(now)
        self._mark_ready(slot)

    def _expire(self, now: float) -> None:
        for slot in self._deadlines.expired(now, everything=self.flushing):
            self._mark_ready(slot)

    def _catch_up(self, now: float) -> None:
        """Before a slot is marked ready by an append or a retry: the deadlines that passed
        unwatched while every slot was taken, as the polls at those deadlines would have
        marked them (a poll at the same instant comes after the appends: not those)."""
        if self._slots_full:
            for slot in self._deadlines.expired(now, before=True):
                self._mark_ready(slot)

    def sendable(self, now: float) -> dict[int, int]:
        """Slot -> records of the batch it would send, for every partition ready by this
        policy's rule at `now` (whether or not a request slot is free for it): a trace
        replay tells a rule that differs from the client's from a different choice among
        partitions ready alike (`analysis.trace_replay`)."""
        self._expire(now)
        out: dict[int, int] = {}
        for marks in self._ready.values():
            for slot in marks:
                head = self.accumulator.head(slot)
                if head is not None:
                    out[slot] = head.record_count
        return out

    def poll(self, now: float, context: PollContext) -> list[RequestPlan]:
        self.context = context
        free_slots = context.free_slots
        self._expire(now)
        plans: list[RequestPlan] = []
        max_partitions = self.limits.max_partitions
        for broker, marks in self._ready.items():
            free = free_slots.get(broker, 0)
            if not marks or free <= 0:
                continue
            # only as many candidates as the free requests can carry: polls stay cheap when
            # many partitions are ready and requests are small (max.partitions=1)
            limit = None if max_partitions is None else free * max_partitions
            candidates = list(islice(marks, limit))
            while candidates and free > 0:
                batches = drain_request(
                    self.accumulator, candidates, now,
                    self.limits.max_request_size, max_partitions,
                )
                if not batches:
                    break
                free -= 1
                for batch in batches:
                    del marks[batch.slot]
                    self._watch_head(batch.slot)
                    if batch.slot in marks:  # another full batch: ready again, last
                        candidates.append(batch.slot)
                plans.append(RequestPlan(broker, batches, self._reason(batches)))
        used = Counter(plan.broker for plan in plans)
        self._slots_full = all(free <= used[broker] for broker, free in free_slots.items())
        return plans

    def _reason(self, batches: list[ProducerBatch]) -> str:
        if self.flushing:
            return "flush"
        if self.linger_s <= 0:
            return "immediate"
        early = all(b.drained_at - b.created < self.linger_s for b in batches)
        return "batch_full" if early else "linger"

    def next_wakeup(self) -> float | None:
        return None if self._slots_full else self._deadlines.next_deadline()


class NoLinger(PartitionLinger):
    """Mode `none`: linger 0, send as soon as a request slot is free."""

    name = "none"

    def __init__(self, accumulator: QueueView, leaders: list[int], limits: RequestLimits):
        super().__init__(accumulator, leaders, limits, linger_s=0.0)
