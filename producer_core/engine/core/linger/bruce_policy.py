"""Mode `bruce`: the batching of Bruce, the Kafka producer daemon (bruce-design.md).

**Batches.** Every topic either has its own batching thresholds (the workload file's
`batching`, or `-X bruce.topic.<name>.max.delay.ms|max.bytes|max.messages`) or belongs to
the *combined* (mixed-topic) batch of its broker (`bruce.combined.*`). Thresholds are any
combination of

* ``max_delay``    the oldest message of the batch is at least this old. A message's age
                   counts from its append: kbatch appends a message when it is due, which is
                   when Bruce's client would have created it and stamped its timestamp;
* ``max_bytes``    the batch holds at least this many record bytes. Bruce counts keys and
                   values only; kbatch counts the accumulator's `record_bytes` (key, value,
                   headers and a few bytes of record framing per message), which is close
                   and is what the request limit is measured in;
* ``max_messages`` the batch holds at least this many messages.

A threshold of 0 completes the batch at the next poll (Bruce's "batching disabled"); -1 (or
leaving it out) turns it off. kbatch keeps records per partition slot (one record batch per
partition per ProduceRequest, as brokers require), so a Bruce batch is *logical*: the set
of slots, and the records queued in them, accumulated for one topic on one broker
(per-topic thresholds) or for the combined group of one broker. Thresholds are checked at
every poll, which the engine runs after each generator pass, so a count or byte threshold
may be overshot by the messages of one pass (a handful at the rates kbatch runs).

**Completion and the sender.** When a threshold fires (checked in the order ``flush``,
``memory``, ``max_messages``, ``max_bytes``, ``max_delay``; the first that holds is the
batch's reason) the batch is complete: each of its slots' open record batch is closed, so
messages appended from then on start the next batch, and the slots queue for their
broker's sender in completion order. While a broker has a free request slot
(``max.in.flight.requests.per.connection``, the poll context's ``free_slots``) its sender
combines everything queued (several completed batches, of any topics) into the next
ProduceRequest, oldest completion first, up to ``max.request.size`` (and
``produce.request.max.partitions``) with `drain_request`; what does not fit is left, in
order, for the next request, built at once if another request slot is free. The unit of
that split is a partition's record batch (Bruce may split a batch's messages anywhere). A
partition's record batch may grow up to ``max.request.size``, because Bruce's message sets
have no other bound than the request's: the policy raises the accumulator's batch size to
that, and ``batch.size`` does not apply.
If a partition has queued two completed record batches (a batch completed again while the
sender waited for a request slot) they go in consecutive requests, one per request.

**Late partition choice for keyless (AnyPartition) messages.** Bruce assigns all keyless
messages of a topic in one request to one partition, chosen when the request is built,
round-robin over the partitions of that topic the broker leads. kbatch must put a message
in a partition slot when it is appended, so `keyless_slots` sends every keyless message of
topic T for broker B to the partition *currently chosen* for (T, B), and the choice moves on
to the next partition of T that B leads (round-robin) when a request built for B takes T's
keyless record batch and leaves its partition empty. At any moment at most one partition
of T on B therefore holds keyless data, a request carries at most one record batch of it,
and the next messages go to the next partition. This is exactly Bruce's rule: the choice
for a request is made when that request is built, and it applies to every keyless message
of T the request carries, since all of them were appended after the previous request with
T's keyless messages was built; appends of the next request's messages begin only after
that (the engine polls between generator passes). Two cases keep a partition longer than
Bruce would: when the request could not take all of T's keyless data (size limit, or new
data arrived after the batch completed while the sender waited), the partition is kept
until a request empties it, so the one-partition-per-request rule still holds; and a
retried batch keeps the partition it was built for (Bruce re-sends a message set as it
was). With several brokers, a topic with its own thresholds sends each batch of keyless
messages to one broker, moving round-robin over the topic's partition array when a batch
completes (so brokers get batches in proportion to the partitions they lead); keyless
messages of combined topics pick their broker that way one message at a time. Keyed
(PartitionKey) messages go to their key's murmur2 partition, chosen by the generator.

**Rate limiting.** A topic with a rate limit (the file's `rate_limit`, or
`-X bruce.topic.<name>.rate.limit.interval.ms` / `.rate.limit.max.messages`) admits at most
``max_messages`` messages per window of ``interval_ms``: a window starts with the first
message that arrives after the previous window ended, and messages beyond the limit in a
window are discarded (`admit`); the generator counts them per topic with reason
``rate_limit (<topic>)``. Time is the engine's monotonic clock, as Bruce's.

**Memory and flush.** At the end of a run (flush) every batch completes at once. When the
generator is blocked on ``buffer.memory`` every batch completes too (reason ``memory``), so
the producer never waits on a threshold that the memory it has cannot reach (Bruce would
discard instead).

Retried batches go to their broker's sender at once (reason ``retry``). `stats()`
summarises the completed batches and the requests (how many completed batches each
combines, how many carry something an earlier request left over). Pure: no clock and no
I/O.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice

import numpy as np

from producer_core.engine.core.accumulator import (
    PARTITION_OVERHEAD_BYTES,
    REQUEST_OVERHEAD_BYTES,
    drain_request,
)
from producer_core.engine.core.linger.base import (
    LingerPolicy,
    PollContext,
    QueueView,
    RequestLimits,
    RequestPlan,
    summarize,
)
from producer_core.workload.slot_layout import SlotLayout

REASONS = ("flush", "memory", "max_messages", "max_bytes", "max_delay")
"""Batch completion reasons in priority order (requests of retried batches: ``retry``)."""
COMBINED = -1
"""Group key of the combined (mixed-topic) batch, in place of a topic index."""
FILE_KEYS = {"max_delay_ms": "max.delay.ms", "max_bytes": "max.bytes",
             "max_messages": "max.messages"}
"""Workload file `batching` keys -> the suffix of the per-topic setting."""
_EPSILON = 1e-9


def largest_record_batch(batch_size: int, max_request_size: int) -> int:
    """Bruce has no batch.size: a partition's record batch may grow until it alone fills a
    request (the accumulator is built with this limit in mode bruce)."""
    return max(batch_size, max_request_size - REQUEST_OVERHEAD_BYTES - PARTITION_OVERHEAD_BYTES)


@dataclass(frozen=True)
class Thresholds:
    """When a batch is complete; None turns a threshold off."""

    max_delay_s: float | None = None
    max_bytes: int | None = None
    max_messages: int | None = None

    @property
    def empty(self) -> bool:
        return self.max_delay_s is None and self.max_bytes is None and self.max_messages is None


@dataclass(frozen=True)
class RateLimit:
    interval_s: float
    max_messages: int


@dataclass(frozen=True)
class BruceConfig:
    """Mode bruce's options: the combined batch's thresholds, and per topic (slot order)
    its own thresholds (None: the combined batch) and its rate limit (None: unlimited)."""

    combined: Thresholds
    topics: tuple[Thresholds | None, ...] = ()
    rate_limits: tuple[RateLimit | None, ...] = ()


def thresholds(values: Mapping[str, int]) -> Thresholds:
    """Thresholds from setting-style values in ms/bytes/messages; negative means off."""
    def on(key: str) -> int | None:
        value = values.get(key, -1)
        return None if value is None or value < 0 else int(value)

    delay = on("max.delay.ms")
    return Thresholds(None if delay is None else delay / 1000.0, on("max.bytes"),
                      on("max.messages"))


@dataclass
class _Group:
    """One open logical batch: a topic's on one broker, or a broker's combined batch."""

    key: tuple[int, int]
    thresholds: Thresholds
    slots: dict[int, None] = field(default_factory=dict)
    """Slots with open (not yet completed) records in this batch, in joining order."""
    opened: float = 0.0
    """Append time of the batch's oldest message."""
    count_bound: int = 0
    count_mark: int = 0
    bytes_bound: int = 0
    bytes_mark: int = 0
    """Upper bounds of the batch's messages and record bytes: exact at the last sum, plus
    whatever was appended anywhere since (`*_mark`), so polls rarely have to sum slots."""


@dataclass
class _Completion:
    """One completed batch, for the metrics."""

    kind: str  # "topic" | "combined"
    reason: str
    messages: int
    bytes: int
    age_s: float
    slots: int


class BrucePolicy(LingerPolicy):
    """Mode `bruce`: per-topic and combined batches, a combining sender per broker, late
    partition choice for keyless messages, per-topic rate limits."""

    name = "bruce"
    stats_key = "policy"

    def __init__(
        self,
        accumulator: QueueView,
        leaders: list[int],
        limits: RequestLimits,
        config: BruceConfig,
        keyless: Sequence[bool] = (),
    ) -> None:
        super().__init__(accumulator, leaders, limits)
        self.config = config
        # topics in slot order, from the accumulator's layout (contiguous per topic)
        layout = SlotLayout.of_slots(accumulator.slots)
        self._topic_of = list(layout.topic_index_of)
        self._first = list(layout.first_slots)
        self._count = list(layout.partitions)
        names = list(layout.topics)
        self.topic_names = names
        topics = len(names)
        self._own: list[Thresholds | None] = list(config.topics[:topics]) + [None] * (
            topics - len(config.topics))
        self._limits: list[RateLimit | None] = list(config.rate_limits[:topics]) + [None] * (
            topics - len(config.rate_limits))
        self._keyless = list(keyless[:topics]) + [False] * (topics - len(keyless))
        self._done = [0] * len(accumulator.slots)
        """Per slot: how many batches at the front of its queue are complete (queued for
        the sender); the ones behind them are open and belong to the slot's group."""
        self._member: dict[int, tuple[int, int]] = {}  # slot -> key of its open group
        self._groups: dict[tuple[int, int], _Group] = {}
        self._ready: dict[int, dict[int, deque[tuple[int, str]]]] = {}
        """Broker -> slots with completed batches, in completion order -> per batch
        (completion id, reason)."""
        self._carried: set[int] = set()
        self._parked: list[set[int]] = [set() for _ in range(topics)]
        """Per topic: slots whose queued batches are all complete. The accumulator opens a
        new batch behind them without an event, so `admit` marks the topic to look."""
        self._dirty: set[int] = set()
        self._windows: list[list[float]] = [[-1.0, 0] for _ in range(topics)]
        self._topic_rr = [0] * topics  # per topic: position in its partition array
        self._keyless_pos: dict[tuple[int, int], int] = {}
        self._layout(leaders)
        self._drained_records = 0
        self._drained_bytes = 0
        self._ids = itertools.count(1)
        self._completions: list[_Completion] = []
        self._requests = 0
        self._combining_requests = 0
        self._carry_requests = 0
        self._batches_per_request: list[int] = []
        self._partition_changes = 0
        self._discarded = [0] * topics

    # ------------------------------------------------------------------ layout
    def _layout(self, leaders: list[int]) -> None:
        """Per (topic, broker): the topic's partitions that broker leads, in order."""
        self._partitions_on: dict[tuple[int, int], list[int]] = {}
        self._brokers_of: list[set[int]] = []
        for topic, first in enumerate(self._first):
            brokers = set()
            for slot in range(first, first + self._count[topic]):
                brokers.add(leaders[slot])
                self._partitions_on.setdefault((topic, leaders[slot]), []).append(slot)
            self._brokers_of.append(brokers)

    def _group_key(self, slot: int) -> tuple[int, int]:
        topic = self._topic_of[slot]
        return (topic if self._own[topic] is not None else COMBINED, self.leaders[slot])

    def _group(self, key: tuple[int, int]) -> _Group:
        group = self._groups.get(key)
        if group is None:
            thresholds = self.config.combined if key[0] == COMBINED else self._own[key[0]]
            assert thresholds is not None
            group = self._groups[key] = _Group(key, thresholds)
        return group

    # ------------------------------------------------------------- bookkeeping
    def _inflow(self) -> tuple[int, int]:
        """Records and record bytes ever queued (re-queues count again): never decrease."""
        acc = self.accumulator
        return acc.queued_records + self._drained_records, acc.queued_bytes + self._drained_bytes

    def _open(self, slot: int) -> tuple[int, int]:
        """Messages and record bytes of the slot's open (not completed) batches."""
        count = size = 0
        for batch in islice(self.accumulator.queues[slot], self._done[slot], None):
            count += batch.record_count
            size += batch.record_bytes
        return count, size

    def _join(self, slot: int, opened: float | None = None) -> None:
        """A slot with open records joins its group; an empty group opens at the age of
        the slot's oldest open record (or `opened`, when regrouping after a leader change)."""
        if slot in self._member:
            return
        queue = self.accumulator.queues[slot]
        done = self._done[slot]
        if len(queue) <= done:
            return
        created = queue[done].created if opened is None else opened
        key = self._group_key(slot)
        group = self._group(key)
        if not group.slots:
            group.opened = created
            group.count_bound = group.bytes_bound = 0
            group.count_mark, group.bytes_mark = self._inflow()
        elif created < group.opened:
            group.opened = created
        count, size = self._open(slot)
        group.count_bound += count
        group.bytes_bound += size
        group.slots[slot] = None
        self._member[slot] = key
        self._parked[self._topic_of[slot]].discard(slot)

    def _look_at_parked(self) -> None:
        """Slots whose batches were all complete may have got open records since."""
        topics = range(len(self._parked)) if self.flushing else list(self._dirty)
        self._dirty.clear()
        queues = self.accumulator.queues
        for topic in topics:
            for slot in list(self._parked[topic]):
                if len(queues[slot]) > self._done[slot]:
                    self._join(slot)
                elif not queues[slot]:
                    self._parked[topic].discard(slot)

    # ------------------------------------------------------------------ events
    def on_append(self, slot: int, event: int, now: float) -> None:
        if slot not in self._member:
            self._join(slot)

    def on_requeue(self, slot: int, now: float) -> None:
        """A retried batch is back at the head of its slot: complete, for the sender now."""
        self._done[slot] += 1
        pending = self._ready.setdefault(self.leaders[slot], {}).setdefault(slot, deque())
        pending.appendleft((next(self._ids), "retry"))
        if slot not in self._member:
            self._parked[self._topic_of[slot]].add(slot)

    def admit(self, topic_index: int, count: int, now: float) -> int:
        """Bruce's per-topic rate limit: at most `max_messages` per window."""
        limit = self._limits[topic_index]
        admitted = count
        if limit is not None:
            window = self._windows[topic_index]
            if window[0] < 0 or now + _EPSILON >= window[0] + limit.interval_s:
                window[0], window[1] = now, 0
            admitted = max(0, min(count, limit.max_messages - int(window[1])))
            window[1] += admitted
            self._discarded[topic_index] += count - admitted
        if admitted and self._parked[topic_index]:
            self._dirty.add(topic_index)
        return admitted

    def keyless_slots(
        self, topic_index: int, first_slot: int, partitions: int, sequences: range,
        now: float,
    ) -> list[int] | None:
        """Every keyless message goes to the partition currently chosen for its topic on
        its broker (see the module docstring)."""
        count = len(sequences)
        self._keyless[topic_index] = True
        if self._own[topic_index] is not None or len(self._brokers_of[topic_index]) == 1:
            broker = self.leaders[first_slot + self._topic_rr[topic_index] % partitions]
            return [self._current(topic_index, broker)] * count
        slots = []
        position = self._topic_rr[topic_index]
        for offset in range(count):
            broker = self.leaders[first_slot + (position + offset) % partitions]
            slots.append(self._current(topic_index, broker))
        self._topic_rr[topic_index] = (position + count) % partitions
        return slots

    def _current(self, topic: int, broker: int) -> int:
        on_broker = self._partitions_on[(topic, broker)]
        return on_broker[self._keyless_pos.get((topic, broker), 0) % len(on_broker)]

    def set_leaders(self, leaders: list[int]) -> None:
        """Regroup open records under their new leaders (keeping each group's age) and move
        queued completed batches to their new leader's sender."""
        super().set_leaders(leaders)
        self._layout(leaders)
        opened = {slot: self._groups[key].opened for slot, key in self._member.items()}
        self._groups = {}
        self._member = {}
        for slot, when in sorted(opened.items(), key=lambda item: item[1]):
            self._join(slot, when)
        ready, self._ready = self._ready, {}
        for pending in ready.values():
            for slot, batches in pending.items():
                self._ready.setdefault(leaders[slot], {})[slot] = batches

    # -------------------------------------------------------------- decisions
    def _count_reached(self, group: _Group, limit: int, inflow: int) -> bool:
        if group.count_bound + inflow - group.count_mark < limit:
            return False
        group.count_bound = sum(self._open(slot)[0] for slot in group.slots)
        group.count_mark = inflow
        return group.count_bound >= limit

    def _bytes_reached(self, group: _Group, limit: int, inflow: int) -> bool:
        if group.bytes_bound + inflow - group.bytes_mark < limit:
            return False
        group.bytes_bound = sum(self._open(slot)[1] for slot in group.slots)
        group.bytes_mark = inflow
        return group.bytes_bound >= limit

    def _due_reason(self, group: _Group, now: float, inflow: tuple[int, int]) -> str | None:
        if self.flushing:
            return "flush"
        if self.memory_exhausted:
            return "memory"
        limits = group.thresholds
        if limits.max_messages is not None and self._count_reached(
                group, limits.max_messages, inflow[0]):
            return "max_messages"
        if limits.max_bytes is not None and self._bytes_reached(
                group, limits.max_bytes, inflow[1]):
            return "max_bytes"
        if limits.max_delay_s is not None and now + _EPSILON >= group.opened + limits.max_delay_s:
            return "max_delay"
        return None

    def _complete(self, group: _Group, reason: str, now: float) -> None:
        """The batch is complete: close its slots' open record batches and queue them for
        the broker's sender; the group starts empty."""
        completion = next(self._ids)
        queues = self.accumulator.queues
        messages = size = 0
        for slot in group.slots:
            queue = queues[slot]
            count, record_bytes = self._open(slot)
            messages += count
            size += record_bytes
            del self._member[slot]
            if len(queue) <= self._done[slot]:
                continue
            queue[-1].closed = True  # later appends start the next batch
            new = len(queue) - self._done[slot]
            self._done[slot] = len(queue)
            self._parked[self._topic_of[slot]].add(slot)
            pending = self._ready.setdefault(self.leaders[slot], {}).setdefault(slot, deque())
            pending.extend([(completion, reason)] * new)
        self._completions.append(_Completion(
            "combined" if group.key[0] == COMBINED else "topic", reason, messages, size,
            now - group.opened, len(group.slots)))
        group.slots = {}
        if group.key[0] != COMBINED:  # the topic's next batch: next broker in its array
            topic = group.key[0]
            self._topic_rr[topic] = (self._topic_rr[topic] + 1) % self._count[topic]

    def _build(self, broker: int, ready: dict[int, deque[tuple[int, str]]],
               now: float) -> RequestPlan | None:
        """The sender's next request: queued completed batches, oldest first, up to the
        request limits; what does not fit stays queued, in order, for the next one."""
        accumulator = self.accumulator
        for slot in [s for s in ready if accumulator.head(s) is None]:
            self._forget(broker, slot)  # nothing queued any more (cannot happen; never spin)
        candidates = list(ready)
        batches = drain_request(accumulator, candidates, now, self.limits.max_request_size,
                                self.limits.max_partitions)
        if not batches:
            return None
        completions: dict[int, str] = {}
        carried = False
        for batch in batches:
            slot = batch.slot
            pending = ready[slot]
            completion, reason = pending.popleft()
            completions[completion] = reason
            if slot in self._carried:
                carried = True
                self._carried.discard(slot)
            self._done[slot] -= 1
            self._drained_records += batch.record_count
            self._drained_bytes += batch.record_bytes
            if not pending:
                del ready[slot]
            topic = self._topic_of[slot]
            if accumulator.queues[slot]:
                if not self._done[slot]:
                    self._join(slot)  # open records appended after the batch completed
                continue
            self._parked[topic].discard(slot)
            if self._keyless[topic] and self._current(topic, broker) == slot:
                key = (topic, broker)  # late partition choice: the next request, the next one
                self._keyless_pos[key] = self._keyless_pos.get(key, 0) + 1
                self._partition_changes += 1
        self._carried.update(candidates)
        self._requests += 1
        self._batches_per_request.append(len(completions))
        if len(completions) > 1:
            self._combining_requests += 1
        if carried:
            self._carry_requests += 1
        return RequestPlan(broker, batches, completions[min(completions)])

    def _forget(self, broker: int, slot: int) -> None:
        self._ready[broker].pop(slot, None)
        self._done[slot] = 0
        self._carried.discard(slot)
        self._parked[self._topic_of[slot]].discard(slot)

    def poll(self, now: float, context: PollContext) -> list[RequestPlan]:
        self.context = context
        free_slots = context.free_slots
        self._look_at_parked()
        inflow = self._inflow()
        due = []
        for group in self._groups.values():
            if group.slots:
                reason = self._due_reason(group, now, inflow)
                if reason is not None:
                    due.append((group.opened, group, reason))
        due.sort(key=lambda entry: entry[0])  # oldest batch first in the sender's queue
        for _, group, reason in due:
            self._complete(group, reason, now)
        plans: list[RequestPlan] = []
        for broker in sorted(self._ready):
            ready = self._ready[broker]
            free = free_slots.get(broker, 0)
            while ready and free > 0:
                plan = self._build(broker, ready, now)
                if plan is None:
                    break
                plans.append(plan)
                free -= 1
        return plans

    def next_wakeup(self) -> float | None:
        """The earliest time an open batch reaches its max delay (at once when flushing or
        out of memory). Count and byte thresholds are checked at every poll, which follows
        every append; completed batches waiting for a request slot wait for a response."""
        earliest: float | None = None
        for group in self._groups.values():
            if not group.slots:
                continue
            if self.flushing or self.memory_exhausted:
                when = group.opened
            elif group.thresholds.max_delay_s is None:
                continue
            else:
                when = group.opened + group.thresholds.max_delay_s
            if earliest is None or when < earliest:
                earliest = when
        return earliest

    # ---------------------------------------------------------------- metrics
    def stats(self) -> dict[str, object]:
        """Completed batches (by reason and kind, size, age) and how requests combined them."""
        done = self._completions
        by_reason = dict.fromkeys(REASONS, 0)
        for completion in done:
            by_reason[completion.reason] += 1
        result: dict[str, object] = {
            "batches": len(done),
            "batches_by_reason": by_reason,
            "topic_batches": sum(1 for c in done if c.kind == "topic"),
            "combined_batches": sum(1 for c in done if c.kind == "combined"),
            "requests": self._requests,
            "requests_combining_batches": self._combining_requests,
            "requests_with_carry_over": self._carry_requests,
            "keyless_partition_changes": self._partition_changes,
            "rate_limit_discards": {name: count for name, count
                                    in zip(self.topic_names, self._discarded, strict=True)
                                    if count},
        }
        if done:
            def column(name: str) -> np.ndarray:
                return np.array([getattr(c, name) for c in done], dtype=np.float64)

            result.update(
                messages_per_batch=summarize(column("messages"), ("mean", "p50", "max")),
                bytes_per_batch=summarize(column("bytes"), ("mean", "p50", "max")),
                batch_age=summarize(column("age_s") * 1000.0, ("p50", "p99", "max"), "_ms"),
            )
        if self._batches_per_request:
            result["batches_per_request"] = summarize(
                np.array(self._batches_per_request, dtype=np.float64), ("mean", "max"))
        return result
