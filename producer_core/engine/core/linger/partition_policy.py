"""Per-partition linger (librdkafka / Java `linger.ms` semantics, one partition at a time).

A partition is ready when its oldest queued batch has waited `linger.ms` since its first
record, or when it holds a full batch. A request to a broker carries only partitions ready
at that moment, up to `max.request.size` and `produce.request.max.partitions`. Partitions
therefore expire at staggered times and requests stay small: the "before" of the
broker-level linger design.

Which ready partitions go first is librdkafka's order (issue 42; its broker thread's
`rd_kafka_broker_produce_toppars`, alike in 2.12.1 and a 2026 snapshot): a rotating round
robin over all the broker's partitions, ready or not. Each loop of the broker thread starts
at `rkb_active_toppar_next` and walks the circle once; its output queue one request deep
(`queue.buffering.backpressure.threshold=1`), it builds at most one request, for the first
ready partition from the start; then the start moves one step past the loop's start. Here
each request built is one such loop, and the next start is the partition after the one
served (the latest start that would have served it). What kbatch cannot know: librdkafka's
circle is the order partitions joined the broker (at start-up the metadata's partition
order, which slot order follows; after a leader change a partition joins at the tail,
here it keeps its slot's place), and its start also moves on loops that build nothing (a
wake-up by a response, an append, a timer), as many as the thread's timing makes (on a
recorded librdkafka trace, moving the start one step past the loop's start matched 91.5%
of requests, past the partition served 93.1%).

With idempotence (kbatch's default) librdkafka also caps each partition's work in flight
(`rd_kafka_toppar_producer_serve`: `max_requests = RD_MIN(max_requests,
RD_KAFKA_IDEMP_MAX_INFLIGHT - rktp_msgs_inflight)`). `rktp_msgs_inflight` counts
*messages*, not requests (`rd_kafka_msgbatch_ready_produce` adds a request's messages when
it is built, its response takes them off): a partition may build a request only while
fewer than 5 of its messages are in flight, so one request of 5 or more messages holds
the partition until it is answered, however many connection slots are free. Here a
partition past that cap stays ready but is skipped (`_held`) until the broker answers the
requests that carry its messages; responses come back in order on a connection, so each
answer releases the broker's oldest request (`on_response`). The cap is the setting
`partition.max.inflight.messages` (by default 5 with idempotence, as librdkafka).

Mode `none` is the same policy with linger 0: whatever is queued goes as soon as a request
slot is free, and what queues meanwhile rides along in the next request.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import Counter, deque
from collections.abc import Iterable, Mapping
from itertools import chain, islice

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
        max_inflight_messages: int | None = None,
        connection_slots: int | None = None,
    ) -> None:
        super().__init__(accumulator, leaders, limits)
        self.linger_s = linger_s
        self.max_inflight_messages = max_inflight_messages
        """Per partition, a request may be built only while fewer of its messages than this
        are in flight (librdkafka with idempotence: 5); None: no cap."""
        self._inflight: dict[int, int] = {}
        """slot -> its messages in requests not answered yet (`rktp_msgs_inflight`)."""
        self._outstanding: dict[int, deque[tuple[tuple[int, int], ...]]] = {}
        """broker -> its unanswered requests, oldest first: (slot, records) per partition."""
        self.connection_slots = connection_slots
        """`max.in.flight.requests.per.connection`: a broker with that many slots free has
        nothing in flight, whatever was given up unanswered (a closed connection, a
        request timeout): its requests no longer hold their partitions."""
        self._deadlines = HeadDeadlines(accumulator, linger_s)
        self._ready: dict[int, list[int]] = {}
        """broker -> its ready slots, in slot order (the round robin's circle)."""
        self._is_ready: set[int] = set()
        self._circle: dict[int, list[int]] = {}
        """broker -> every slot it leads, in slot order: librdkafka's active list."""
        self._next: dict[int, int] = {}
        """broker -> where its next loop starts (`rkb_active_toppar_next`): the first slot
        of its circle at or after this number, wrapping."""
        self._slots_full = False
        """The last poll left no broker a free request slot: a linger deadline can then
        send nothing, so it wakes no one (a response, which frees a slot, always brings a
        poll). At 10,000 partitions every batch has its own deadline, and on a broker
        that answers slowly most of those wake-ups found every slot taken."""
        self._build_circles()

    def _build_circles(self) -> None:
        self._circle = {}
        for slot, broker in enumerate(self.leaders):
            self._circle.setdefault(broker, []).append(slot)

    def _mark_ready(self, slot: int) -> None:
        if slot not in self._is_ready:
            self._is_ready.add(slot)
            insort(self._ready.setdefault(self.leaders[slot], []), slot)

    def _unmark(self, broker: int, slot: int) -> None:
        ready = self._ready[broker]
        del ready[bisect_left(ready, slot)]
        self._is_ready.discard(slot)

    def set_leaders(self, leaders: list[int]) -> None:
        ready = sorted(self._is_ready)
        super().set_leaders(leaders)
        self._build_circles()
        self._ready = {}
        self._is_ready = set()
        for slot in ready:
            self._mark_ready(slot)

    def _loop_start(self, broker: int) -> int:
        """The slot a loop of `broker`'s thread starts its walk at."""
        circle = self._circle[broker]
        index = bisect_left(circle, self._next.get(broker, 0))
        return circle[index] if index < len(circle) else circle[0]

    def _in_turn(self, broker: int, start: int) -> list[int]:
        """The broker's ready slots in its walk's order from `start` (as many as one
        request can carry: polls stay cheap when many partitions are ready), less those
        held by their messages in flight."""
        ready = self._ready[broker]
        split = bisect_left(ready, start)
        walk: Iterable[int] = chain(islice(ready, split, None), islice(ready, 0, split))
        if self._inflight:
            walk = (slot for slot in walk if not self._held(slot))
        limit = self.limits.max_partitions
        return list(walk if limit is None else islice(walk, limit))

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

    def _held(self, slot: int) -> bool:
        cap = self.max_inflight_messages
        return cap is not None and self._inflight.get(slot, 0) >= cap

    def _sent(self, broker: int, parts: tuple[tuple[int, int], ...]) -> None:
        """A request of `parts` was built: its messages are in flight until answered."""
        if self.max_inflight_messages is None:
            return
        self._outstanding.setdefault(broker, deque()).append(parts)
        inflight = self._inflight
        for slot, records in parts:
            inflight[slot] = inflight.get(slot, 0) + records

    def _forget_given_up(self, free_slots: Mapping[int, int]) -> None:
        """Requests the engine gave up get no response: once a broker has every slot free,
        nothing of it is in flight."""
        if self.connection_slots is None:
            return
        for broker, queue in self._outstanding.items():
            if queue and free_slots.get(broker, 0) >= self.connection_slots:
                for parts in queue:
                    for slot, records in parts:
                        left = self._inflight.get(slot, 0) - records
                        if left > 0:
                            self._inflight[slot] = left
                        else:
                            self._inflight.pop(slot, None)
                queue.clear()

    def set_in_flight(self, broker: int, parts: tuple[tuple[int, int], ...]) -> None:
        """A request the policy did not build is in flight (a trace replay's rebuild)."""
        self._sent(broker, parts)

    def on_response(
        self, broker: int, rtt_s: float, now: float, throttle_ms: int, retried: bool
    ) -> None:
        """The broker's oldest request was answered (or failed): its messages are no
        longer in flight (librdkafka takes them off in either case)."""
        queue = self._outstanding.get(broker)
        if not queue:
            return
        inflight = self._inflight
        for slot, records in queue.popleft():
            left = inflight.get(slot, 0) - records
            if left > 0:
                inflight[slot] = left
            else:
                inflight.pop(slot, None)

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
        for ready in self._ready.values():
            for slot in ready:
                head = self.accumulator.head(slot)
                if head is not None:
                    out[slot] = head.record_count
        return out

    def poll(self, now: float, context: PollContext) -> list[RequestPlan]:
        self.context = context
        free_slots = context.free_slots
        self._expire(now)
        plans: list[RequestPlan] = []
        if self._outstanding:
            self._forget_given_up(free_slots)
        for broker, ready in self._ready.items():
            free = free_slots.get(broker, 0)
            while ready and free > 0:  # one loop of the broker's thread per request
                start = self._loop_start(broker)
                batches = drain_request(
                    self.accumulator, self._in_turn(broker, start), now,
                    self.limits.max_request_size, self.limits.max_partitions,
                )
                if not batches:
                    break
                free -= 1
                self._sent(broker, tuple((b.slot, b.record_count) for b in batches))
                # librdkafka moves its start one step past the loop's start; its loops
                # that build nothing move it on too, uncounted here: the start is taken
                # to have reached the partition served (see `drain_cursor_after`)
                self._next[broker] = batches[0].slot + 1
                for batch in batches:
                    self._unmark(broker, batch.slot)
                    self._watch_head(batch.slot)  # another full batch: ready again
                plans.append(RequestPlan(broker, batches, self._reason(batches)))
        used = Counter(plan.broker for plan in plans)
        self._slots_full = all(free <= used[broker] for broker, free in free_slots.items())
        return plans

    # a trace replay's rebuild puts the round robin where the client's left it
    # (`analysis.trace_replay.DrainCursor`)
    def drain_cursor(self) -> dict[int, int]:
        """Where each broker's next loop starts."""
        return dict(self._next)

    def set_drain_cursor(self, cursor: dict[int, int]) -> None:
        self._next = dict(cursor)

    def drain_cursor_after(self, broker: int, taken: set[int]) -> int | None:
        """Where the client's round robin stands after a loop that built a request of
        `taken`: one step past the loop's start, which the client's log does not show;
        taken as the partition it served, as `poll` does (the latest start that serves
        it; with many partitions ready, as when the order matters, it is close)."""
        return max(taken) + 1 if taken else None

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
