"""Broker-level linger: one batch collector per broker (the broker-level linger design).

A partition joins its leader's collector the moment it gets data; there is no
per-partition linger. A collector's window starts when the first partition joins it
while it is empty (`first_add`), *not* at the oldest message's enqueue time: an old
message joining an empty collector does not make it send at once (the design's "key
insight"). One refinement (`CollectorPolicy.window_start`): after the collector's first
send, a window starts when its first message was *due* if that was after the previous send
started, so a message due while kbatch was busy building that send is not made to wait
the window on top of its delay; a window never starts before the previous send, so the
insight holds. Later partitions join the running window without extending or restarting it.

A collector is due when any of these holds, checked in this priority order, and the first
that holds is the send's reason:

1. ``flush``           the producer is flushing (end of run, close)
2. ``max_partitions``  collected partitions >= ``broker.batch.max.partitions`` (if > 0)
3. ``max_bytes``       collected record bytes >= ``broker.batch.max.bytes`` (if > 0)
4. ``broker_linger``   ``now >= first_add + broker.linger.ms - send lead`` (below)
5. ``retry``           a retried batch joined the collector (see `on_requeue`)

**Send lead:** a message is acknowledged one send time (building the request, the broker
writing it, the response) after its window ends, so the window ends early by the send time
of that broker, so that the first message of a window is acknowledged about
`broker.linger.ms` after it joined, as a per-partition linger's is after its timer. The
send time is estimated from the broker's answered round trips (`on_response`) as TCP
estimates its retransmission timeout: an average plus ``SEND_TIME_SPREAD`` mean deviations,
so that a window's *slowest* messages, not its average ones, stay within the bound. Until
the broker has answered once, the lead is the cap. The lead is at most
``SEND_LEAD_MAX_SHARE`` of the window: windows then end at least every 20/21 of it, at most
5% more requests than the floor (duration / window), however slow the broker answers.

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
``context.free_slots``): while a broker has no free request slot, its collector keeps collecting
(new partitions join, caps keep counting); once due it stays due and `next_wakeup` stops
reporting it (only a response can unblock it, and the engine polls after every response).
The send starts at the first poll with a free slot and carries everything collected by
then. If a send needs more requests than there are free slots, the requests that fit go
now and the rest of the send stays pending: it goes, with the same reason and send id, as
slots free up, before any new send of that broker starts.

`stats()` summarises the sends (partitions, bytes, time collecting, requests per send).

The collection, its sends and the triggers are
`producer_core.engine.core.linger.collector_policy`'s, shared with modes adaptive and aimd;
this mode is its trigger chain and its send lead.

Pure: no clock and no I/O; time comes in as arguments (seconds).
"""

from __future__ import annotations

from producer_core.engine.core.linger.base import QueueView, RequestLimits
from producer_core.engine.core.linger.collector_policy import (
    Collector,
    CollectorPolicy,
    Flush,
    RetryJoined,
    Trigger,
    Window,
    caps,
)

SEND_LEAD_MAX_SHARE = 1.0 / 21.0
"""Largest share of a window the send lead takes off it (at most 5% more windows)."""
SEND_TIME_WEIGHT = 0.3
"""Weight of the newest round trip in a broker's send-time average and mean deviation."""
SEND_TIME_SPREAD = 4.0
"""Mean deviations added to the average send time (the lead covers slow sends too); 4 as
in TCP's retransmission timeout (RFC 6298)."""

REASONS = ("flush", "max_partitions", "max_bytes", "broker_linger", "retry")
"""Send reasons in priority order."""


class BrokerLinger(CollectorPolicy):
    """Mode `broker`: per-broker batch collectors with a window timed from the first add."""

    name = "broker"
    reasons = REASONS

    def __init__(
        self,
        accumulator: QueueView,
        leaders: list[int],
        limits: RequestLimits,
        linger_s: float,
        max_partitions: int = -1,
        max_bytes: int = -1,
    ) -> None:
        super().__init__(accumulator, leaders, limits, max_partitions, max_bytes)
        self.linger_s = linger_s
        self._send_time: dict[int, tuple[float, float]] = {}  # broker -> (average, deviation)

    def triggers(self) -> list[Trigger]:
        return [Flush(), *caps(self.max_partitions, self.max_bytes), Window(), RetryJoined()]

    def window_s(self, collector: Collector) -> float:
        return self.linger_s

    def send_lead(self, collector: Collector) -> float:
        """The broker's send time (the cap until it is measured), at most the cap."""
        cap = self.window_s(collector) * SEND_LEAD_MAX_SHARE
        estimate = self._send_time.get(collector.broker)
        if estimate is None:
            return cap
        average, deviation = estimate
        return min(average + SEND_TIME_SPREAD * deviation, cap)

    def on_response(
        self, broker: int, rtt_s: float, now: float, throttle_ms: int, retried: bool
    ) -> None:
        """Learn the broker's send time from answered requests (failed ones say nothing)."""
        if retried:
            return
        estimate = self._send_time.get(broker)
        if estimate is None:
            self._send_time[broker] = (rtt_s, rtt_s / 2)  # as TCP's first sample (RFC 6298)
            return
        average, deviation = estimate
        self._send_time[broker] = (
            average + SEND_TIME_WEIGHT * (rtt_s - average),
            deviation + SEND_TIME_WEIGHT * (abs(rtt_s - average) - deviation))
