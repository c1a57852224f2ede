"""Mode `java`: the Java producer's node-level readiness and drain.

`RecordAccumulator.ready()` marks a *broker* (node) ready as soon as any partition it
leads is sendable: its first batch is full (`batch.size`, or more than one batch
queued), has waited `linger.ms` since its first record, is a retry whose backoff is
over, or the producer is out of memory (threads blocked in `BufferPool.allocate`),
flushing or closing. `Sender` then drains that broker (`drainBatchesForOneNode`): it
takes the first batch of **every** partition led by the broker that has data, expired
or not, one batch per partition, until the next batch would push the request past
`max.request.size` (or `produce.request.max.partitions`). A partition drained early
simply sends its open batch; its next record starts a new batch.

The walk over a broker's partitions starts at a rotating index (Java's `drainIndex`):
the partition that did not fit starts the next request, so none starves.

The memory condition comes from the engine (`PollContext.memory_exhausted`), which accounts
`buffer.memory` the Java way (see `producer_core.core.memory.BatchMemory`).

**Java's clock and the sender's wakes** (issue #18: without them mode java sent 4-8% fewer
requests than the Java producer at 2,000 msg/s over 64 partitions, linger.ms=5). The
producer reads time in whole milliseconds (`Time.milliseconds()`): a batch's `createdMs`
is the millisecond of its first `send()` (`KafkaProducer.doSend`: `nowMs =
time.milliseconds()`), and `RecordAccumulator.batchReady` tests `waitedTimeMs >= lingerMs`
with `waitedTimeMs = nowMs - createdMs` (`ProducerBatch.waitedTimeMs`). A batch created at
10.9 ms is therefore sendable from 15.0 ms on: linger lasts 4-5 ms, not 5. The policy
reproduces this with `JAVA_TICK_S` (`HeadDeadlines`' quantum).

The Sender thread only looks when it is awake (`Sender.runOnce`): it sleeps in
`client.poll(pollTimeout)` for a whole number of milliseconds, `pollTimeout =
nextReadyCheckDelayMs = lingerMs - waitedTimeMs` (`Sender.sendProducerData`), and wakes
early only when `send()` created a batch or filled one (`KafkaProducer.doSend` calls
`sender.wakeup()` on `newBatchCreated || batchIsFull`), or a response arrives. Looking at
time t, it next wakes at t + (deadline - floor_ms(t)): the deadline plus t's fraction of a
millisecond. `poll` does likewise: it decides only when the modelled sender is awake, and
`next_wakeup` is that sender's timer, not the deadline itself.

Pure: no clock and no I/O; time comes in as arguments (seconds).
"""

from __future__ import annotations

from producer_core.core.accumulator import (
    BATCH_FILLED,
    BECAME_NONEMPTY,
    PARTITION_OVERHEAD_BYTES,
    REQUEST_OVERHEAD_BYTES,
    ProducerBatch,
)
from producer_core.core.linger.base import (
    LingerPolicy,
    PollContext,
    QueueView,
    RequestLimits,
    RequestPlan,
)
from producer_core.core.linger.deadlines import HeadDeadlines, floor_tick

REASONS = ("flush", "memory", "retry", "batch_full", "linger")
"""Why a broker was ready, in priority order; a request is tagged with the first that held."""

JAVA_TICK_S = 0.001
"""The Java producer's clock (`Time.milliseconds()`) ticks in whole milliseconds."""


def sender_timer(now: float, deadline: float, tick: float = JAVA_TICK_S) -> float:
    """When a Java Sender that looked at `now` wakes for `deadline` (a tick boundary): it
    sleeps `deadline - floor(now)` whole ticks (`client.poll(pollTimeout)`), which ends at
    the deadline plus `now`'s fraction of a tick (never before the deadline)."""
    ticks = max(0, round((deadline - floor_tick(now, tick)) / tick))
    return max(deadline, now + ticks * tick)


class JavaLinger(LingerPolicy):
    """Per-partition readiness, per-broker drain of every partition with data."""

    name = "java"
    stats_key = "policy"

    def __init__(
        self,
        accumulator: QueueView,
        leaders: list[int],
        limits: RequestLimits,
        linger_s: float,
    ) -> None:
        super().__init__(accumulator, leaders, limits)
        self.linger_s = linger_s
        self._deadlines = HeadDeadlines(accumulator, linger_s, JAVA_TICK_S)
        self._awake = True  # the modelled Sender thread looks at its next poll
        self._timer: float | None = None  # when its client.poll(pollTimeout) ends
        self._ready: dict[int, dict[int, str]] = {}  # broker -> sendable slot -> reason
        self._nonempty: dict[int, set[int]] = {}  # broker -> slots with data
        self._drain_index: dict[int, int] = {}  # broker -> position where the next walk starts
        self._index_leaders()
        self._requests_by_reason = dict.fromkeys(REASONS, 0)
        self._drained = 0
        self._drained_ready = 0

    # ------------------------------------------------------------- bookkeeping
    def _index_leaders(self) -> None:
        """Each broker's partitions in partition order, and each slot's position there."""
        self._parts: dict[int, list[int]] = {}
        for slot, broker in enumerate(self.leaders):
            self._parts.setdefault(broker, []).append(slot)
        self._position = [0] * len(self.leaders)
        for slots in self._parts.values():
            for position, slot in enumerate(slots):
                self._position[slot] = position

    def set_leaders(self, leaders: list[int]) -> None:
        """Re-file data-holding and sendable partitions under their new leaders."""
        ready = {slot: reason for marks in self._ready.values() for slot, reason in marks.items()}
        nonempty = [slot for slots in self._nonempty.values() for slot in slots]
        super().set_leaders(leaders)
        self._index_leaders()
        self._awake = True  # Java: a metadata update wakes the Sender
        self._ready, self._nonempty = {}, {}
        for slot in nonempty:
            self._nonempty.setdefault(leaders[slot], set()).add(slot)
        for slot, reason in ready.items():
            self._ready.setdefault(leaders[slot], {})[slot] = reason

    def _mark(self, slot: int, reason: str) -> None:
        marks = self._ready.setdefault(self.leaders[slot], {})
        if slot not in marks or REASONS.index(reason) < REASONS.index(marks[slot]):
            marks[slot] = reason

    def _watch_head(self, slot: int) -> None:
        """Register the slot's current head: sendable if full (or linger 0), else timed."""
        head = self.accumulator.head(slot)
        if head is None:
            return
        if self.accumulator.head_is_full(slot):
            self._mark(slot, "batch_full")
        elif self.linger_s <= 0:
            self._mark(slot, "linger")
        else:
            self._deadlines.watch(slot, head)

    def _expire(self, now: float) -> None:
        for slot in self._deadlines.expired(now):
            self._mark(slot, "linger")

    # ------------------------------------------------------------------ events
    def on_append(self, slot: int, event: int, now: float) -> None:
        self._awake = True  # doSend: sender.wakeup() on a new batch or a full one
        if event == BECAME_NONEMPTY:
            self._nonempty.setdefault(self.leaders[slot], set()).add(slot)
            self._watch_head(slot)
        elif event == BATCH_FILLED:
            self._mark(slot, "batch_full")

    def on_requeue(self, slot: int, now: float) -> None:
        """A retried batch is back after its backoff: sendable at once (Java: backoff over)."""
        self._nonempty.setdefault(self.leaders[slot], set()).add(slot)
        self._mark(slot, "retry")
        self._awake = True

    def on_response(
        self, broker: int, rtt_s: float, now: float, throttle_ms: int, retried: bool
    ) -> None:
        """A response wakes the Sender (its client.poll returns)."""
        self._awake = True

    def wake(self) -> None:
        """The Sender looks at the next poll: a trace replay knows the real one did
        (`producer_core.analysis.trace_replay`)."""
        self._awake = True

    def ready_since(self, broker: int, now: float) -> float | None:
        """Since when `broker` has been ready by this policy's rule (None: it is not at
        `now`): the earliest linger deadline or batch fill among its partitions, `now`
        when flushing or out of memory. A trace replay compares it with when the real
        Sender sent, which shows a rule that would send earlier than the client."""
        slots = self._nonempty.get(broker)
        if not slots:
            return None
        if self.flushing or self.memory_exhausted:
            return now
        accumulator = self.accumulator
        since: float | None = None
        for slot in slots:
            queue = accumulator.queues[slot]
            head = accumulator.head(slot)
            if head is None:
                continue
            if len(queue) > 1:
                when = queue[1].created  # the record that did not fit opened the next batch
            elif head.closed or self.linger_s <= 0:
                when = head.created
            else:
                when = self._deadlines.deadline(head.created)
            since = when if since is None else min(since, when)
        return since if since is not None and since <= now else None

    # -------------------------------------------------------------- decisions
    def _broker_reason(self, broker: int) -> str | None:
        """Why `broker` is ready now, or None."""
        if not self._nonempty.get(broker):
            return None
        if self.flushing:
            return "flush"
        if self.memory_exhausted:
            return "memory"
        marks = self._ready.get(broker)
        if not marks:
            return None
        return min(marks.values(), key=REASONS.index)

    def _drain(self, broker: int, now: float) -> list[ProducerBatch]:
        """One request for `broker`: Java's `drainBatchesForOneNode`."""
        accumulator = self.accumulator
        parts = self._parts[broker]
        count = len(parts)
        start = self._drain_index.get(broker, 0) % count
        position = self._position
        nonempty = self._nonempty[broker]
        order = sorted(nonempty, key=lambda s: (position[s] - start) % count)
        limit = self.limits.max_request_size
        max_partitions = self.limits.max_partitions
        size = REQUEST_OVERHEAD_BYTES
        taken: list[ProducerBatch] = []
        next_start = (start - 1) % count  # Java: a full walk leaves the index on its last step
        marks = self._ready.get(broker, {})
        for slot in order:
            head = accumulator.head(slot)
            if head is None:  # cannot happen: nonempty is kept exact; never send nothing
                nonempty.discard(slot)
                continue
            need = head.size_bytes() + PARTITION_OVERHEAD_BYTES
            full = max_partitions is not None and len(taken) >= max_partitions
            if taken and (full or size + need > limit):
                next_start = position[slot]  # it starts the next request
                break
            size += need
            taken.append(accumulator.pop_head(slot, now))
            if marks.pop(slot, None) is not None:
                self._drained_ready += 1
            if accumulator.has_data(slot):
                self._watch_head(slot)
            else:
                nonempty.discard(slot)
        self._drain_index[broker] = next_start
        self._drained += len(taken)
        return taken

    def _looks(self, now: float) -> bool:
        """Is the modelled Sender awake at `now` (woken, timer run out, flushing, or
        send() blocked on memory)?"""
        return (self._awake or self.flushing or self.memory_exhausted
                or (self._timer is not None and now >= self._timer))

    def poll(self, now: float, context: PollContext) -> list[RequestPlan]:
        self.context = context
        if not self._looks(now):
            return []
        self._awake = False
        free_slots = context.free_slots
        self._expire(now)
        plans: list[RequestPlan] = []
        for broker in sorted(self._nonempty):
            free = free_slots.get(broker, 0)
            while free > 0:
                reason = self._broker_reason(broker)
                if reason is None:
                    break
                batches = self._drain(broker, now)
                if not batches:
                    break
                free -= 1
                self._requests_by_reason[reason] += 1
                plans.append(RequestPlan(broker, batches, reason))
            if free <= 0 and self._broker_reason(broker) is not None:
                self._awake = True  # ready but no room: the next response lets it send
        deadline = self._deadlines.next_deadline()
        self._timer = None if deadline is None else sender_timer(now, deadline)
        return plans

    def next_wakeup(self) -> float | None:
        return self._timer

    # ---------------------------------------------------------------- metrics
    def stats(self) -> dict[str, object]:
        """Requests by ready reason, and how many drained partitions were sendable."""
        return {
            "requests_by_reason": dict(self._requests_by_reason),
            "partitions_drained": self._drained,
            "partitions_drained_sendable": self._drained_ready,
        }
