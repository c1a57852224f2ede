"""The broker-level collector shared by modes broker, adaptive and aimd: one collection per
broker, the sends that drain it, and the triggers that decide when a collection goes.

A mode is a `CollectorPolicy` with a chain of `Trigger`s in priority order (`triggers()`):
the first that holds is the send's reason, and `next_wakeup` is the earliest time any of
them will hold. Mode broker's chain is flush, max partitions, max bytes, window, retry;
adaptive puts its queued flush and wait cap where the window is; aimd is broker's chain
with a window per broker. What a collection is and how a send drains it is described in
`producer_core.engine.core.linger.broker_policy` (whose mode defined it first).

Pure: no clock and no I/O; time comes in as arguments (seconds).
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np

from producer_core.engine.core.accumulator import ProducerBatch, drain_request
from producer_core.engine.core.linger.base import (
    LingerPolicy,
    PollContext,
    QueueView,
    RequestLimits,
    RequestPlan,
    summarize,
)


@dataclass
class Collector:
    """One broker's collection window."""

    broker: int = -1
    """The node id whose collector this is."""
    slots: dict[int, float] = field(default_factory=dict)
    """Collected slot -> time it joined; insertion order is oldest-joined first."""
    first_add: float = 0.0
    """The window's start: when the first partition joined the (then empty) collector, or
    earlier, when its oldest message was due, but never before `emptied` (`window_start`)."""
    emptied: float | None = None
    """When the collector's last send started (None: it never sent)."""
    bytes_bound: int = 0
    """Upper bound of the collected record bytes; exact at the last `bytes_reached` sum."""
    inflow_mark: int = 0
    retry: bool = False
    due_since: float | None = None
    """Set once a poll saw the collector due but could not send (no free request slot)."""
    stalled: bool = False
    """A send of this collection built no request (every partition held: a retry's
    backoff, or an earlier batch still unsettled) and it is due again: only an event (a
    retry coming back, a response, an append) can change that, so no wake-up for it."""
    behind_send: bool = False
    """Due while the broker's previous send still waits for request slots to finish: the
    collection can only go after it, once a response frees a slot, so no wake-up for it
    (reported by the clock, its past window end made the engine turn without pause for
    as long as the broker took: most of a core at 10,000 partitions on a slow node)."""


@dataclass
class CollectorSend:
    """One trigger of a collector: its metrics, and what it still has to drain."""

    broker: int
    reason: str
    send_id: int
    started: float
    collecting_for_s: float
    partitions: int
    collected_bytes: int
    candidates: list[int]
    """Slots still to drain, in drain order."""
    remaining: dict[int, int]
    """Slot -> batches of this send still queued in it."""
    requests: int = 0
    bytes: int = 0


# ------------------------------------------------------------------------- triggers


class Trigger(ABC):
    """One condition that makes a collection due."""

    @abstractmethod
    def reason(self, policy: CollectorPolicy, collector: Collector, now: float) -> str | None:
        """The send's reason if the condition holds at `now`, else None."""

    def wake(self, policy: CollectorPolicy, collector: Collector) -> float | None:
        """When the condition holds without another event: the collection's start (in the
        past, so the engine polls at once) if it holds already, a deadline if time makes
        it hold, None if only an event can (an append is always followed by a poll)."""
        return None


class Flush(Trigger):
    """``flush``: the producer is flushing (end of run, close, a transaction's end)."""

    def reason(self, policy: CollectorPolicy, collector: Collector, now: float) -> str | None:
        return "flush" if policy.flushing else None

    def wake(self, policy: CollectorPolicy, collector: Collector) -> float | None:
        return collector.first_add if policy.flushing else None


@dataclass(frozen=True)
class MaxPartitions(Trigger):
    """``max_partitions``: the collection holds `limit` partitions."""

    limit: int

    def reason(self, policy: CollectorPolicy, collector: Collector, now: float) -> str | None:
        return "max_partitions" if len(collector.slots) >= self.limit else None

    def wake(self, policy: CollectorPolicy, collector: Collector) -> float | None:
        return collector.first_add if len(collector.slots) >= self.limit else None


@dataclass(frozen=True)
class MaxBytes(Trigger):
    """``max_bytes``: the collected record bytes reach `limit` (only appends add bytes,
    and every append is followed by a poll, so it never wakes the engine by itself)."""

    limit: int

    def reason(self, policy: CollectorPolicy, collector: Collector, now: float) -> str | None:
        return "max_bytes" if policy.bytes_reached(collector, self.limit) else None


class Window(Trigger):
    """`reason` (``broker_linger``): the collection window is over, `policy.deadline`."""

    def __init__(self, reason: str = "broker_linger") -> None:
        self._reason = reason

    def reason(self, policy: CollectorPolicy, collector: Collector, now: float) -> str | None:
        return self._reason if now >= policy.deadline(collector) else None

    def wake(self, policy: CollectorPolicy, collector: Collector) -> float | None:
        return policy.deadline(collector)


class RetryJoined(Trigger):
    """``retry``: a retried batch joined the collection (it already waited its backoff)."""

    def reason(self, policy: CollectorPolicy, collector: Collector, now: float) -> str | None:
        return "retry" if collector.retry else None

    def wake(self, policy: CollectorPolicy, collector: Collector) -> float | None:
        return collector.first_add if collector.retry else None


def caps(max_partitions: int | None, max_bytes: int | None) -> list[Trigger]:
    """The size triggers that are on (a None cap is off), in priority order."""
    chain: list[Trigger] = []
    if max_partitions is not None:
        chain.append(MaxPartitions(max_partitions))
    if max_bytes is not None:
        chain.append(MaxBytes(max_bytes))
    return chain


# --------------------------------------------------------------------------- policy


class CollectorPolicy(LingerPolicy):
    """Per-broker collections, sent by the first trigger of `triggers()` that holds."""

    stats_key = "collector"
    reasons: tuple[str, ...] = ()
    """Send reasons `stats()` lists (with 0) even when none happened."""

    def __init__(
        self,
        accumulator: QueueView,
        leaders: list[int],
        limits: RequestLimits,
        max_partitions: int = -1,
        max_bytes: int = -1,
    ) -> None:
        super().__init__(accumulator, leaders, limits)
        self.max_partitions = max_partitions if max_partitions > 0 else None
        self.max_bytes = max_bytes if max_bytes > 0 else None
        self._collectors: dict[int, Collector] = {}
        self._pending: dict[int, CollectorSend] = {}  # broker -> its send with requests to go
        self._collected: dict[int, int] = {}  # slot -> broker whose collector holds it
        self._sending: dict[int, int] = {}  # slot -> broker whose pending send holds it
        self._drained_bytes = 0
        self._send_ids = itertools.count(1)
        self._sends: list[CollectorSend] = []
        self._chain: tuple[Trigger, ...] = ()

    @abstractmethod
    def triggers(self) -> list[Trigger]:
        """The mode's triggers in priority order (built once, at the first poll)."""

    # ------------------------------------------------------- hooks for the modes
    def window_s(self, collector: Collector) -> float:
        """The collection window of a collector (for `Window`)."""
        return float("inf")

    def send_lead(self, collector: Collector) -> float:
        """How much earlier than its window a collection goes (mode broker's send lead)."""
        return 0.0

    def deadline(self, collector: Collector) -> float:
        """When a collector's window ends: its window after the first add, less the lead."""
        return collector.first_add + self.window_s(collector) - self.send_lead(collector)

    def collection_started(self, broker: int, now: float) -> None:
        """A collection went from empty to non-empty (mode adaptive queues its flush)."""
        return None

    # ------------------------------------------------------------- bookkeeping
    def _inflow(self) -> int:
        """Record bytes ever queued (re-queues count again): never decreases."""
        return self.accumulator.queued_bytes + self._drained_bytes

    def _slot_bytes(self, slot: int) -> int:
        """A slot's queued record bytes: kept by the accumulator as batches come and go,
        so a send or a cap check over thousands of partitions does not sum their batches."""
        return self.accumulator.slot_bytes(slot)

    def _collector(self, broker: int) -> Collector:
        collector = self._collectors.get(broker)
        if collector is None:
            collector = self._collectors[broker] = Collector(broker=broker)
        return collector

    def window_start(self, slot: int, collector: Collector, now: float) -> float:
        """When a window that `slot` opens starts: when the slot's oldest message was due,
        but not before the collector's last send started, nor after now.

        A message due while kbatch was busy (building the previous send, most often) is
        appended late; timing its window from its append made it wait the window on top
        of that. A window never starts before the previous send, so windows still come at
        most once per window however old the messages (the seed's "key insight": timed
        from the oldest message alone, old messages triggered every send at once). The
        first window of a collector starts now."""
        if collector.emptied is None:
            return now
        head = self.accumulator.head(slot)
        due = head.intended[0] if head is not None and head.intended else now
        return min(now, max(due, collector.emptied))

    def add(self, slot: int, now: float, retry: bool = False) -> Collector:
        """Put a slot into its leader's collector; an empty collector starts its window
        (`window_start`; a retried batch's window starts now: it is due at once)."""
        broker = self.leaders[slot]
        collector = self._collector(broker)
        starting = not collector.slots
        if starting:
            collector.first_add = now if retry else self.window_start(slot, collector, now)
            collector.bytes_bound = 0
            collector.inflow_mark = self._inflow()
            collector.retry = False
            collector.due_since = None
            collector.stalled = False
            collector.behind_send = False
        collector.slots[slot] = now
        collector.bytes_bound += self._slot_bytes(slot)
        self._collected[slot] = broker
        if starting:
            self.collection_started(broker, now)
        return collector

    # ------------------------------------------------------------------ events
    def on_append(self, slot: int, event: int, now: float) -> None:
        # A slot with data is always either collected or part of a pending send; only a
        # slot that was empty joins, whatever the event.
        if slot in self._collected or slot in self._sending:
            return
        if self.accumulator.has_data(slot):
            self.add(slot, now)

    def on_requeue(self, slot: int, now: float) -> None:
        """A retried batch joins like an add and makes its collector due at once.

        The batch already waited `retry.backoff.ms`; it should not wait a window on top.
        The send is tagged ``retry`` unless a higher-priority reason holds. A slot that is
        part of a pending send gets the batch added to that send instead.
        """
        broker = self._sending.get(slot)
        if broker is not None:
            self._pending[broker].remaining[slot] += 1
            return
        if slot in self._collected:
            collector = self._collectors[self._collected[slot]]
        else:
            collector = self.add(slot, now, retry=True)
        collector.retry = True

    def set_leaders(self, leaders: list[int]) -> None:
        """Move collected partitions to their new leader's collector.

        Collectors are rebuilt from the collected slots in joining order. A collector that
        receives partitions from another keeps the earlier window start (the minimum of
        both), so no partition waits longer because its leader changed. Partitions of a
        pending send whose leader changed leave it and join the new leader's collector as
        retries (due at once).
        """
        super().set_leaders(leaders)
        moved: list[tuple[float, int, float, bool]] = []  # (joined, slot, window start, retry)
        for broker, send in list(self._pending.items()):
            for slot in [s for s in send.candidates if leaders[s] != broker]:
                send.candidates.remove(slot)
                del send.remaining[slot]
                del self._sending[slot]
                moved.append((send.started, slot, send.started, True))
            if not send.candidates:
                del self._pending[broker]
        if not moved and all(leaders[s] == b for s, b in self._collected.items()):
            return
        for collector in self._collectors.values():
            for slot, joined in collector.slots.items():
                moved.append((joined, slot, collector.first_add, collector.retry))
        moved.sort(key=lambda entry: entry[0])  # stable: keeps joining order on ties
        self._collectors = {}
        self._collected = {}
        for joined, slot, start, retry in moved:
            broker = leaders[slot]
            collector = self._collector(broker)
            collector.first_add = min(collector.first_add, start) if collector.slots else start
            collector.slots[slot] = joined
            collector.retry = collector.retry or retry
            self._collected[slot] = broker
        inflow = self._inflow()
        for collector in self._collectors.values():
            collector.bytes_bound = sum(self._slot_bytes(s) for s in collector.slots)
            collector.inflow_mark = inflow

    # -------------------------------------------------------------- decisions
    def bytes_reached(self, collector: Collector, limit: int) -> bool:
        """Collected record bytes >= `limit`, without summing on every poll.

        Bytes appended anywhere since the last exact sum bound how much the collection can
        have grown, so the partitions are only summed when that bound reaches the cap.
        """
        inflow = self._inflow()
        if collector.bytes_bound + inflow - collector.inflow_mark < limit:
            return False
        collector.bytes_bound = sum(self._slot_bytes(s) for s in collector.slots)
        collector.inflow_mark = inflow
        return collector.bytes_bound >= limit

    def _due_reason(self, collector: Collector | None, now: float) -> str | None:
        """The reason of the first trigger that holds, or None."""
        if collector is None or not collector.slots:
            return None
        for trigger in self._chain:
            reason = trigger.reason(self, collector, now)
            if reason is not None:
                return reason
        return None

    def start_send(self, broker: int, collector: Collector, reason: str, now: float) -> None:
        """Take everything collected into a new send and empty the collector."""
        accumulator = self.accumulator
        slots = [s for s in collector.slots if accumulator.has_data(s)]
        for slot in collector.slots:
            del self._collected[slot]
        send = CollectorSend(
            broker=broker, reason=reason, send_id=next(self._send_ids), started=now,
            collecting_for_s=now - collector.first_add, partitions=len(slots),
            collected_bytes=sum(self._slot_bytes(s) for s in slots), candidates=slots,
            remaining={s: len(accumulator.queues[s]) for s in slots},
        )
        collector.slots = {}
        collector.emptied = now
        collector.retry = False
        collector.due_since = None
        collector.stalled = False
        collector.behind_send = False
        if not slots:
            return
        self._sends.append(send)
        self._pending[broker] = send
        for slot in slots:
            self._sending[slot] = broker

    def _leave_send(self, send: CollectorSend, slot: int, now: float) -> None:
        del send.remaining[slot]
        del self._sending[slot]
        if self.accumulator.has_data(slot):
            self.add(slot, now)  # data queued after the send started: the next window

    def _drain(self, send: CollectorSend, now: float, free: int, plans: list[RequestPlan]) -> int:
        """Build up to `free` requests of a send; returns how many."""
        accumulator = self.accumulator
        built = 0
        while send.candidates and built < free:
            offered = send.candidates
            kept = list(offered)
            batches = drain_request(
                accumulator, kept, now, self.limits.max_request_size, self.limits.max_partitions
            )
            gone = {batch.slot for batch in batches}.union(kept)
            for slot in [s for s in offered if s not in gone]:  # no data any more
                self._leave_send(send, slot, now)
            again: list[int] = []
            for batch in batches:
                slot = batch.slot
                self._drained_bytes += batch.record_bytes
                send.remaining[slot] -= 1
                if send.remaining[slot] > 0 and accumulator.has_data(slot):
                    again.append(slot)
                else:
                    self._leave_send(send, slot, now)
            send.candidates = kept + again
            if not batches:
                break
            built += 1
            self._record_request(send, batches, plans)
        if not send.candidates:
            for slot in list(send.remaining):
                self._leave_send(send, slot, now)
            self._pending.pop(send.broker, None)
        return built

    def _record_request(
        self, send: CollectorSend, batches: list[ProducerBatch], plans: list[RequestPlan]
    ) -> None:
        send.requests += 1
        send.bytes += sum(batch.size_bytes() for batch in batches)
        plans.append(RequestPlan(send.broker, batches, send.reason))

    def poll(self, now: float, context: PollContext) -> list[RequestPlan]:
        self.context = context
        if not self._chain:
            self._chain = tuple(self.triggers())
        free_slots = context.free_slots
        plans: list[RequestPlan] = []
        for broker in sorted(set(self._collectors) | set(self._pending)):
            free = free_slots.get(broker, 0)
            collector = self._collectors.get(broker)
            while True:
                send = self._pending.get(broker)
                if send is None:
                    reason = self._due_reason(collector, now)
                    if reason is None:
                        break
                    assert collector is not None
                    if free <= 0:
                        if collector.due_since is None:
                            collector.due_since = now
                        break
                    self.start_send(broker, collector, reason, now)
                    continue
                if free <= 0:
                    if collector is not None and not collector.behind_send and (
                            self._due_reason(collector, now) is not None):
                        collector.behind_send = True
                    break
                built = self._drain(send, now, free, plans)
                free -= built
                if built == 0:
                    # Nothing was drainable: every partition of the send is held (a
                    # retry's backoff, an earlier batch unsettled) and went back to the
                    # collector. Sending it again now would build nothing again, forever
                    # (flushing, it is due at once: at 10,000 partitions on a slow broker
                    # the end of a run spun here, a send per turn, gigabytes); an event
                    # (the retry back, a response, an append) is what can change it.
                    self._stall(broker, now)
                    break
        return plans

    def _stall(self, broker: int, now: float) -> None:
        """A send built nothing: if its collection is due again, wait for an event."""
        collector = self._collectors.get(broker)
        if broker not in self._pending and collector is not None and (
                self._due_reason(collector, now) is not None):
            collector.stalled = True

    def next_wakeup(self) -> float | None:
        """The earliest time a trigger of a collector that is not due yet will hold.

        A collector already due (flush, cap, retry or window over) that is waiting for a
        free request slot, itself or behind its broker's unfinished send
        (`Collector.behind_send`), is left out: a response, not time, unblocks it; so is
        one whose last send found every partition held (`Collector.stalled`). One that became
        due by an event since the last poll is reported at its window start (in the past),
        so the caller polls at once.
        """
        if not self._chain:
            self._chain = tuple(self.triggers())
        earliest: float | None = None
        for collector in self._collectors.values():
            if (not collector.slots or collector.due_since is not None or collector.stalled
                    or collector.behind_send):
                continue
            for trigger in self._chain:
                when = trigger.wake(self, collector)
                if when is not None and (earliest is None or when < earliest):
                    earliest = when
        return earliest

    # ---------------------------------------------------------------- metrics
    def stats(self) -> dict[str, object]:
        """Collector metrics per send: reasons, partitions, bytes, wait, requests."""
        sends = self._sends
        by_reason = dict.fromkeys(self.reasons, 0)
        for send in sends:
            by_reason[send.reason] = by_reason.get(send.reason, 0) + 1
        result: dict[str, object] = {"sends": len(sends), "sends_by_reason": by_reason}
        if not sends:
            return result

        def column(name: str) -> np.ndarray:
            return np.array([getattr(s, name) for s in sends], dtype=np.float64)

        result.update(
            partitions_per_send=summarize(column("partitions"), ("mean", "p50", "max")),
            bytes_per_send=summarize(column("bytes"), ("mean", "p50", "max")),
            collected_bytes_per_send=summarize(column("collected_bytes"), ("mean", "max")),
            collecting_for=summarize(
                column("collecting_for_s") * 1000.0, ("p50", "p99", "max"), suffix="_ms"
            ),
            requests_per_send=summarize(column("requests"), ("mean", "max")),
        )
        return result
