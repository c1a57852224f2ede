"""Broker-level linger: one batch collector per broker (the broker-level linger design).

A partition joins its leader's collector the moment it gets data; there is no
per-partition linger. A collector's window starts when the first partition joins it
while it is empty (`first_add`), *not* at the oldest message's enqueue time: an old
message joining an empty collector does not make it send at once (the design's "key
insight"). Later partitions join the running window without extending or restarting it.

A collector is due when any of these holds, checked in this priority order, and the first
that holds is the send's reason:

1. ``flush``           the producer is flushing (end of run, close)
2. ``max_partitions``  collected partitions >= ``broker.batch.max.partitions`` (if > 0)
3. ``max_bytes``       collected record bytes >= ``broker.batch.max.bytes`` (if > 0)
4. ``broker_linger``   ``now >= first_add + broker.linger.ms - send lead`` (below)
5. ``retry``           a retried batch joined the collector (see `on_requeue`)

**Send lead:** a message is acknowledged one send time (building the request, the broker
writing it, the response) after its window ends, so the window ends early by the measured
send time of that broker (an average of its round trips, `on_response`), so that the first
message of a window is acknowledged about `broker.linger.ms` after it joined, as a
per-partition linger's is after its timer. The lead is at most ``SEND_LEAD_MAX_SHARE`` of
the window: windows then end at least every 20/21 of it, at most 5% more requests than
the floor (duration / window), however slow the broker answers.

The reason is decided when the send starts, so a collector that became due by linger
while blocked on the in-flight limit and reached a cap meanwhile is tagged with the cap.

A send ("trigger") takes everything collected at that moment, oldest-joined partition
first, and drains it into as many ProduceRequests as needed with `drain_request`
(``max.request.size``, ``produce.request.max.partitions``; one batch per partition per
request). **Multi-batch partitions:** every batch a partition had queued when the send
started belongs to that send. Requests are filled round by round: the first requests
carry every collected partition's head batch (oldest-joined first); a partition with more
batches goes to the back of the line for the following requests of the same send.
Batches created after the send started are not part of it: when a partition leaves the
send and still has data, it joins its leader's collector again, starting (or joining) the
next window at that moment. The collector itself is emptied when the send starts, so data
for other partitions arriving meanwhile also goes to the next window.

**In-flight limit** (``max.in.flight.requests.per.connection``, given to `poll` as
``free_slots``): while a broker has no free request slot, its collector keeps collecting
(new partitions join, caps keep counting); once due it stays due and `next_wakeup` stops
reporting it (only a response can unblock it, and the engine polls after every response).
The send starts at the first poll with a free slot and carries everything collected by
then. If a send needs more requests than there are free slots, the requests that fit go
now and the rest of the send stays pending: it goes, with the same reason and send id, as
slots free up, before any new send of that broker starts.

Every `RequestPlan` carries ``extra = {"send_id", "collecting_for_ms", "send_partitions"}``
so requests can be grouped per send; `stats()` summarises the sends.

Pure: no clock and no I/O; time comes in as arguments (seconds).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from producer_core.accumulator import Accumulator, ProducerBatch, drain_request
from producer_core.linger.base import LingerPolicy, RequestLimits, RequestPlan, summarize

if TYPE_CHECKING:
    from collections.abc import Sequence

    from producer_core.config import ProducerSettings
    from producer_core.workload import TopicSpec

SEND_LEAD_MAX_SHARE = 1.0 / 21.0
"""Largest share of a window the send lead takes off it (at most 5% more windows)."""
SEND_TIME_WEIGHT = 0.3
"""Weight of the newest round trip in a broker's send-time average."""

REASONS = ("flush", "max_partitions", "max_bytes", "broker_linger", "retry")
"""Send reasons in priority order."""


@dataclass
class _Collector:
    """One broker's collection window."""

    broker: int = -1
    """The node id whose collector this is."""
    slots: dict[int, float] = field(default_factory=dict)
    """Collected slot -> time it joined; insertion order is oldest-joined first."""
    first_add: float = 0.0
    """When the first partition joined the (then empty) collector: the window's start."""
    bytes_bound: int = 0
    """Upper bound of the collected record bytes; exact at the last `_bytes_reached` sum."""
    inflow_mark: int = 0
    retry: bool = False
    due_since: float | None = None
    """Set once a poll saw the collector due but could not send (no free request slot)."""


@dataclass
class _Send:
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


class BrokerLinger(LingerPolicy):
    """Mode `broker`: per-broker batch collectors with a window timed from the first add."""

    name = "broker"
    stats_key = "collector"
    reasons: tuple[str, ...] = REASONS
    """Send reasons `stats()` lists (with 0) even when none happened."""

    def __init__(
        self,
        accumulator: Accumulator,
        leaders: list[int],
        limits: RequestLimits,
        linger_s: float,
        max_partitions: int = -1,
        max_bytes: int = -1,
    ) -> None:
        super().__init__(accumulator, leaders, limits)
        self.linger_s = linger_s
        self.max_partitions = max_partitions if max_partitions > 0 else None
        self.max_bytes = max_bytes if max_bytes > 0 else None
        self._collectors: dict[int, _Collector] = {}
        self._pending: dict[int, _Send] = {}  # broker -> its send that still has requests to go
        self._collected: dict[int, int] = {}  # slot -> broker whose collector holds it
        self._sending: dict[int, int] = {}  # slot -> broker whose pending send holds it
        self._drained_bytes = 0
        self._send_ids = itertools.count(1)
        self._sends: list[_Send] = []
        self._send_time: dict[int, float] = {}  # broker -> average round trip (s)

    # ------------------------------------------------------------- bookkeeping
    def _inflow(self) -> int:
        """Record bytes ever queued (re-queues count again): never decreases."""
        return self.accumulator.queued_bytes + self._drained_bytes

    def _slot_bytes(self, slot: int) -> int:
        return sum(batch.record_bytes for batch in self.accumulator.queues[slot])

    def _collector(self, broker: int) -> _Collector:
        collector = self._collectors.get(broker)
        if collector is None:
            collector = self._collectors[broker] = _Collector(broker=broker)
        return collector

    def _add(self, slot: int, now: float) -> _Collector:
        """Put a slot into its leader's collector; an empty collector starts its window."""
        broker = self.leaders[slot]
        collector = self._collector(broker)
        if not collector.slots:
            collector.first_add = now
            collector.bytes_bound = 0
            collector.inflow_mark = self._inflow()
            collector.retry = False
            collector.due_since = None
        collector.slots[slot] = now
        collector.bytes_bound += self._slot_bytes(slot)
        self._collected[slot] = broker
        return collector

    # ------------------------------------------------------------------ events
    def on_append(self, slot: int, event: int, now: float) -> None:
        # A slot with data is always either collected or part of a pending send; only a
        # slot that was empty joins, whatever the event.
        if slot in self._collected or slot in self._sending:
            return
        if self.accumulator.has_data(slot):
            self._add(slot, now)

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
            collector = self._add(slot, now)
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
    def _bytes_reached(self, collector: _Collector) -> bool:
        """Collected record bytes >= broker.batch.max.bytes, without summing on every poll.

        Bytes appended anywhere since the last exact sum bound how much the collection can
        have grown, so the partitions are only summed when that bound reaches the cap.
        """
        assert self.max_bytes is not None
        inflow = self._inflow()
        if collector.bytes_bound + inflow - collector.inflow_mark < self.max_bytes:
            return False
        collector.bytes_bound = sum(self._slot_bytes(s) for s in collector.slots)
        collector.inflow_mark = inflow
        return collector.bytes_bound >= self.max_bytes

    def _due_reason(self, collector: _Collector | None, now: float) -> str | None:
        if collector is None or not collector.slots:
            return None
        if self.flushing:
            return "flush"
        if self.max_partitions is not None and len(collector.slots) >= self.max_partitions:
            return "max_partitions"
        if self.max_bytes is not None and self._bytes_reached(collector):
            return "max_bytes"
        if now >= self._deadline(collector):
            return "broker_linger"
        if collector.retry:
            return "retry"
        return None

    def _window_s(self, collector: _Collector) -> float:
        """The collection window of a collector: `broker.linger.ms` here; mode `aimd`
        adapts it per broker."""
        return self.linger_s

    def _deadline(self, collector: _Collector) -> float:
        """When a collector's window ends: its window after the first add, less the lead."""
        window = self._window_s(collector)
        lead = min(self._send_time.get(collector.broker, 0.0), window * SEND_LEAD_MAX_SHARE)
        return collector.first_add + window - lead

    def on_response(
        self, broker: int, rtt_s: float, now: float, throttle_ms: int, retried: bool
    ) -> None:
        """Learn the broker's send time from answered requests (failed ones say nothing)."""
        if retried:
            return
        average = self._send_time.get(broker)
        self._send_time[broker] = rtt_s if average is None else (
            average + SEND_TIME_WEIGHT * (rtt_s - average))

    def _start_send(self, broker: int, collector: _Collector, reason: str, now: float) -> None:
        """Take everything collected into a new send and empty the collector."""
        accumulator = self.accumulator
        slots = [s for s in collector.slots if accumulator.has_data(s)]
        for slot in collector.slots:
            del self._collected[slot]
        send = _Send(
            broker=broker, reason=reason, send_id=next(self._send_ids), started=now,
            collecting_for_s=now - collector.first_add, partitions=len(slots),
            collected_bytes=sum(self._slot_bytes(s) for s in slots), candidates=slots,
            remaining={s: len(accumulator.queues[s]) for s in slots},
        )
        collector.slots = {}
        collector.retry = False
        collector.due_since = None
        if not slots:
            return
        self._sends.append(send)
        self._pending[broker] = send
        for slot in slots:
            self._sending[slot] = broker

    def _leave_send(self, send: _Send, slot: int, now: float) -> None:
        del send.remaining[slot]
        del self._sending[slot]
        if self.accumulator.has_data(slot):
            self._add(slot, now)  # data queued after the send started: the next window

    def _drain(self, send: _Send, now: float, free: int, plans: list[RequestPlan]) -> int:
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
        self, send: _Send, batches: list[ProducerBatch], plans: list[RequestPlan]
    ) -> None:
        send.requests += 1
        send.bytes += sum(batch.size_bytes() for batch in batches)
        extra = {
            "send_id": send.send_id,
            "collecting_for_ms": send.collecting_for_s * 1000.0,
            "send_partitions": send.partitions,
        }
        plans.append(RequestPlan(send.broker, batches, send.reason, extra))

    def poll(self, now: float, free_slots: Mapping[int, int]) -> list[RequestPlan]:
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
                    self._start_send(broker, collector, reason, now)
                    continue
                if free <= 0:
                    break
                built = self._drain(send, now, free, plans)
                free -= built
                if built == 0 and broker in self._pending:
                    break  # cannot happen with a non-empty first candidate; never spin
        return plans

    def next_wakeup(self) -> float | None:
        """The earliest window end of a collector that is not due yet.

        A collector already due (flush, cap, retry or window over) that is waiting for a
        free request slot is left out: a response, not time, unblocks it. One that became
        due by an event since the last poll is reported at its window start (in the past),
        so the caller polls at once.
        """
        earliest: float | None = None
        for collector in self._collectors.values():
            if not collector.slots or collector.due_since is not None:
                continue
            due_now = self.flushing or collector.retry or (
                self.max_partitions is not None and len(collector.slots) >= self.max_partitions
            )
            when = collector.first_add if due_now else self._deadline(collector)
            if earliest is None or when < earliest:
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


# --------------------------------------------------------------------------- registry


def broker_policy(
    accumulator: Accumulator, leaders: list[int], limits: RequestLimits,
    settings: ProducerSettings, topics: Sequence[TopicSpec],
) -> BrokerLinger:
    """Mode broker from the settings (see `producer_core.modes`)."""
    return BrokerLinger(
        accumulator, leaders, limits,
        linger_s=settings["broker.linger.ms"] / 1000.0,
        max_partitions=settings["broker.batch.max.partitions"],
        max_bytes=settings["broker.batch.max.bytes"],
    )
