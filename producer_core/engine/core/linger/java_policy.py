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
the partition that did not fit starts the next request, so none starves. Three details of
Java's drain, each found by the trace replay (`producer_core.analysis.trace_replay`,
issue 42), are kept exactly:

- **One request per node per Sender pass.** `RecordAccumulator.drain` calls
  `drainBatchesForOneNode` once for each ready node; a node still ready after it (its
  request was cut by the size limit, or a partition holds several batches) gets its next
  request in the Sender's next pass, which comes at once (`pollTimeout = 0` when nodes were
  ready). Sending several requests to one node in one poll made the same requests, but
  in passes where the client wrote one.
- **The size limit counts batches only.** A request stops before the batch that would
  bring `size + first.estimatedSizeInBytes()` past `max.request.size` (the batches' own
  bytes; no request or partition overhead), so a cut request holds a few more partitions
  than an estimate with overheads (858 against 845 of 1,000 partitions in one request).
- **The walk follows Java's metadata order, not partition order.** `partitionsForNode`
  lists a node's partitions as Java's `MetadataSnapshot` holds them: a `HashMap` keyed by
  `TopicPartition`, iterated bucket by bucket (`java_metadata_order`). Which partitions a
  cut request takes depends on it.

The memory condition comes from the engine (`PollContext.memory_exhausted`), which accounts
`buffer.memory` the Java way (see `producer_core.engine.core.memory.BatchMemory`).

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

from producer_core.engine.core.accumulator import (
    BATCH_FILLED,
    BECAME_NONEMPTY,
    ProducerBatch,
    TopicPartition,
)
from producer_core.engine.core.linger.base import (
    LingerPolicy,
    PollContext,
    QueueView,
    RequestLimits,
    RequestPlan,
)
from producer_core.engine.core.linger.deadlines import HeadDeadlines, floor_tick

REASONS = ("flush", "memory", "retry", "batch_full", "linger")
"""Why a broker was ready, in priority order; a request is tagged with the first that held."""

JAVA_TICK_S = 0.001
"""The Java producer's clock (`Time.milliseconds()`) ticks in whole milliseconds."""


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def java_string_hash(text: str) -> int:
    """`String.hashCode()`: over UTF-16 code units, in 32-bit arithmetic."""
    units = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return _int32(h)


def java_hashmap_capacity(entries: int) -> int:
    """The table size of `new HashMap<>(entries)` once `entries` keys are in: the power of
    two at or above `entries` (`tableSizeFor`), doubled while the load passes 0.75."""
    capacity = 1
    while capacity < entries:
        capacity <<= 1
    while entries > capacity * 0.75:
        capacity <<= 1
    return capacity


def java_metadata_order(slots: list[TopicPartition]) -> list[int]:
    """The slots in the order Java's producer metadata iterates its partitions: a
    `HashMap<TopicPartition, ...>` of them all (`MetadataSnapshot.metadataByPartition`),
    bucket by bucket (`hash ^ hash >>> 16`, masked by the table size), in insertion order
    within a bucket (assumed to be slot order, as a Metadata response lists them).
    `TopicPartition.hashCode()` is `31 * (31 + partition) + topic.hashCode()`."""
    mask = java_hashmap_capacity(len(slots)) - 1
    topic_hash: dict[str, int] = {}

    def bucket(slot: int) -> int:
        tp = slots[slot]
        th = topic_hash.get(tp.topic)
        if th is None:
            th = topic_hash[tp.topic] = java_string_hash(tp.topic)
        h = (31 * (31 + tp.partition) + th) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & mask

    return sorted(range(len(slots)), key=lambda slot: (bucket(slot), slot))


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
        self._order: list[int] | None = None  # slots in Java's metadata order
        self._index_leaders()
        self._requests_by_reason = dict.fromkeys(REASONS, 0)
        self._drained = 0
        self._drained_ready = 0

    # ------------------------------------------------------------- bookkeeping
    def _index_leaders(self) -> None:
        """Each broker's partitions in Java's metadata order, and each slot's position
        there."""
        self._parts: dict[int, list[int]] = {}
        if self._order is None or len(self._order) != len(self.leaders):
            self._order = java_metadata_order(self.accumulator.slots)
        for slot in self._order:
            self._parts.setdefault(self.leaders[slot], []).append(slot)
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

    def ready_brokers(self, now: float, context: PollContext) -> set[int]:
        """The nodes Java's accumulator ready check finds ready at `now` (a trace replay
        asks at the Sender pass's start, before the drain)."""
        self.context = context
        self._expire(now)
        return {broker for broker in self._nonempty if self._broker_reason(broker)}

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

    # ------------------------------------------------------------ trace replay
    def drain_cursor(self) -> dict[int, int]:
        """Each node's drain index (where its next walk starts)."""
        return dict(self._drain_index)

    def set_drain_cursor(self, cursor: dict[int, int]) -> None:
        self._drain_index = dict(cursor)

    def drain_cursor_after(self, broker: int, taken: set[int]) -> int | None:
        """Where the drain index of `broker` stands after a walk, from its current
        partitions with data, that took `taken` (a real client's request: a run of the
        walk's order) -- as `_drain` leaves it: at the first partition with data after the
        run (it starts the next request), or one step back from the start after a full
        walk. None: the node has no partition with data."""
        parts = self._parts.get(broker)
        nonempty = self._nonempty.get(broker)
        if not parts or not nonempty:
            return None
        count = len(parts)
        start = self._drain_index.get(broker, 0) % count
        position = self._position
        order = sorted(nonempty, key=lambda s: (position[s] - start) % count)
        if nonempty <= taken:
            return (start - 1) % count
        in_run = False
        for slot in order + order:  # a run may wrap around the walk's start
            if slot in taken:
                in_run = True
            elif in_run:
                return position[slot]
        return (start - 1) % count

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
        size = 0  # Java counts the batches' bytes only
        taken: list[ProducerBatch] = []
        next_start = (start - 1) % count  # Java: a full walk leaves the index on its last step
        marks = self._ready.get(broker, {})
        for slot in order:
            head = accumulator.head(slot)
            if head is None:  # cannot happen: nonempty is kept exact; never send nothing
                nonempty.discard(slot)
                continue
            need = head.size_bytes()
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
        """One Sender pass: at most one request per ready node (Java's `drain`); a node
        still ready after it has the next pass come at once."""
        self.context = context
        if not self._looks(now):
            return []
        self._awake = False
        free_slots = context.free_slots
        self._expire(now)
        plans: list[RequestPlan] = []
        again = False
        for broker in sorted(self._nonempty):
            reason = self._broker_reason(broker)
            if reason is None:
                continue
            if free_slots.get(broker, 0) <= 0:
                self._awake = True  # ready but no room: the next response lets it send
                continue
            batches = self._drain(broker, now)
            if not batches:
                continue
            self._requests_by_reason[reason] += 1
            plans.append(RequestPlan(broker, batches, reason))
            if self._broker_reason(broker) is not None:
                again = True
        deadline = self._deadlines.next_deadline()
        self._timer = None if deadline is None else sender_timer(now, deadline)
        if again:  # pollTimeout 0: the Sender's next pass comes at once
            self._awake = True
            self._timer = now
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
