"""Mode `adaptive`: KIP-1224's adaptive append linger (`append.linger.ms = -1`), per broker.

The group coordinator of KIP-1224 runs a queue of operations. Instead of arming a timer
when a batch starts, adaptive linger puts a *flush operation at the back of that queue*:
at low load the queue is empty and the batch goes at once; at high load the operations
queued ahead of the flush add their records to the batch before it runs, and a batch
about to exceed ``max.message.bytes`` is written early. Batches are numbered, so a flush
left over from a batch that was already written does nothing.

kbatch's producer has one broker-level collection per broker (the collector of mode
`broker`, `producer_core.engine.core.linger.collector_policy`, whose caps, in-flight handling,
send splitting and metrics this mode shares); only *when* a collection is sent differs:
the queued flush and the wait cap take the place of the window in the trigger chain. When a broker's
collection goes from empty to non-empty (the first partition joins it), no timer is armed:
a **flush ticket** carrying the collection's number is queued behind the work pending in
the engine at that moment.

**What "pending work" is in kbatch's event loop.** One asyncio loop runs the generator and
every response callback. The generator works in passes: a pass appends every message due
(at most `generator.CHUNK` per topic), then calls `poll`; between passes the loop runs the
callbacks that are ready, above all response callbacks, which free request slots, requeue
retries and wake the generator, whose next `poll` follows them. A ticket queued at time
*t* therefore waits for

1. the rest of the generator pass it was queued in: every append of that pass comes
   before the `poll` that ends it;
2. every message already due at *t* that the pass could not take: before each `poll` the
   engine reports the intended send time of the oldest message not appended yet
   (`PollContext.backlog`); while it is <= *t* the ticket waits, and the next passes append those
   messages into the collection. Messages due after *t* arrived behind the flush and go
   to the next collection. With an unthrottled topic (``--rate max``) a message is always
   waiting (the engine reports -inf): tickets never get ahead of the generator, and
   collections go by the size cap, as KIP-1224's batches do under saturation;
3. the callbacks already ready in the loop when it was queued, if it was queued outside
   a generator pass (by a send that left data behind, a retry, a leader change): such a
   ticket runs at the next `poll`, which the engine reaches only after the loop has run
   them (`next_wakeup` reports the ticket's time, already past, so the engine's timer
   fires behind whatever is ready).

Responses carry no records; what they change is the number of free request slots. A
ticket that runs while its broker has no free request slot (all
``max.in.flight.requests.per.connection`` in flight) leaves the collection due: it keeps
growing, as in mode `broker`, and goes at the first `poll` with a free slot, which the
engine makes right after the response that freed it (reason ``slot_freed``). While the
generator waits for ``buffer.memory`` nothing more can be appended, so tickets no longer
wait for the backlog.

**Size cap.** KIP-1224's ``max.message.bytes`` is one ProduceRequest here: by default
(``broker.batch.max.bytes`` unset) a collection whose record bytes reach
``max.request.size`` is sent as that one request (the head batch of each partition that
fits, oldest-joined first), and what did not fit starts the next collection at once,
keeping the partitions' joining times. With ``broker.batch.max.bytes`` set, that cap
applies as in mode `broker` (everything collected goes, in as many requests as needed).

A collection is sent, in this priority order (the first that holds is the reason):

1. ``flush``                the producer is flushing (end of run, close)
2. ``max_partitions``       ``broker.batch.max.partitions`` reached (if > 0)
3. ``max_bytes``            the size cap
4. ``queued_flush``         its flush ticket ran (``slot_freed`` if the send then had to
                            wait for a request slot)
5. ``linger_max``           ``adaptive.linger.max.ms`` after it started (if >= 0), even
                            though its ticket still waits behind pending work
6. ``retry``                a retried batch joined it

A ticket whose collection was already sent (by a cap, the wait cap, a flush or a retry)
does nothing; it is dropped when it reaches the head of the queue (``stale`` in
`stats()["flush_tickets"]`).

Pure: no clock and no I/O; time comes in as arguments (seconds).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from producer_core.engine.core.accumulator import (
    PARTITION_OVERHEAD_BYTES,
    REQUEST_OVERHEAD_BYTES,
)
from producer_core.engine.core.linger.base import PollContext, QueueView, RequestLimits, RequestPlan
from producer_core.engine.core.linger.collector_policy import (
    Collector,
    CollectorPolicy,
    Flush,
    RetryJoined,
    Trigger,
    caps,
)

REASONS = ("flush", "max_partitions", "max_bytes", "queued_flush", "slot_freed", "linger_max",
           "retry")
"""Send reasons in priority order (``slot_freed`` is ``queued_flush`` after a wait for a
request slot)."""


class QueuedFlush(Trigger):
    """``queued_flush``: the collection's flush ticket ran (``slot_freed`` when the send
    then had to wait for a request slot)."""

    def reason(self, policy: CollectorPolicy, collector: Collector, now: float) -> str | None:
        assert isinstance(policy, AdaptiveLinger)
        if not policy.flush_requested(collector):
            return None
        return "slot_freed" if collector.due_since is not None else "queued_flush"

    def wake(self, policy: CollectorPolicy, collector: Collector) -> float | None:
        assert isinstance(policy, AdaptiveLinger)
        return collector.first_add if policy.flush_requested(collector) else None


@dataclass(frozen=True)
class MaxWait(Trigger):
    """``linger_max``: ``adaptive.linger.max.ms`` since the collection started."""

    max_wait_s: float

    def reason(self, policy: CollectorPolicy, collector: Collector, now: float) -> str | None:
        return "linger_max" if now >= collector.first_add + self.max_wait_s else None

    def wake(self, policy: CollectorPolicy, collector: Collector) -> float | None:
        return collector.first_add + self.max_wait_s


class AdaptiveLinger(CollectorPolicy):
    """Mode `adaptive`: per-broker collections flushed behind the work pending in the engine."""

    name = "adaptive"
    reasons = REASONS

    def __init__(
        self,
        accumulator: QueueView,
        leaders: list[int],
        limits: RequestLimits,
        max_wait_s: float | None = None,
        max_partitions: int = -1,
        max_bytes: int | None = None,
    ) -> None:
        request_cap = max_bytes is None
        super().__init__(accumulator, leaders, limits, max_partitions=max_partitions,
                         max_bytes=limits.max_request_size if request_cap else max_bytes or -1)
        self.request_cap = request_cap
        """The size cap is one full request: a cap send is that one request."""
        self.max_wait_s = max_wait_s
        self._tickets: deque[tuple[float, int, int]] = deque()
        """Flush tickets in queue order: (queued at, broker, collection number)."""
        self._numbers: dict[int, int] = {}
        """Broker -> number of its current (or last) collection."""
        self._flush_ran: dict[int, int] = {}
        """Broker -> number of the last collection whose flush ticket ran."""
        self._now = 0.0
        self.tickets_queued = 0
        self.flushes_run = 0
        self.stale_flushes = 0

    def triggers(self) -> list[Trigger]:
        wait = [] if self.max_wait_s is None else [MaxWait(self.max_wait_s)]
        return [Flush(), *caps(self.max_partitions, self.max_bytes), QueuedFlush(), *wait,
                RetryJoined()]

    # ------------------------------------------------------------------ tickets
    def collection_started(self, broker: int, now: float) -> None:
        """A collection that starts gets a number and a flush ticket."""
        number = self._numbers[broker] = self._numbers.get(broker, 0) + 1
        self._tickets.append((now, broker, number))
        self.tickets_queued += 1

    def _waits_for_backlog(self, queued_at: float) -> bool:
        """Messages due by `queued_at` are not all appended yet: they are ahead of it.

        Not while flushing (nothing more comes) nor while the generator waits for buffer
        memory (those messages cannot be appended until something is sent).
        """
        backlog = self.context.backlog
        return (backlog is not None and backlog <= queued_at and not self.flushing
                and not self.memory_exhausted)

    def _is_stale(self, broker: int, number: int) -> bool:
        """The ticket's collection was already sent (a newer one may have started)."""
        collector = self._collectors.get(broker)
        return self._numbers.get(broker) != number or collector is None or not collector.slots

    def _run_tickets(self) -> None:
        """Run the tickets queued before this poll, in order, as far as nothing pending
        is ahead of them. Tickets queued during this poll (by its sends) wait for the next.

        A stale ticket at the head is dropped even while pending work is ahead of it: it
        would do nothing when it ran (under an unthrottled load, where work is always
        pending, this keeps the queue from growing)."""
        tickets = self._tickets
        while tickets:
            queued_at, broker, number = tickets[0]
            if self._is_stale(broker, number):
                tickets.popleft()
                self.stale_flushes += 1
                continue
            if self._waits_for_backlog(queued_at):
                break
            tickets.popleft()
            self._flush_ran[broker] = number
            self.flushes_run += 1

    def set_leaders(self, leaders: list[int]) -> None:
        """Collections rebuilt under new leaders are new collections, each with a new
        number and a ticket (earlier tickets become stale)."""
        before = self._collectors
        super().set_leaders(leaders)
        if self._collectors is before:  # no partition moved: the collections stand
            return
        for broker, collector in self._collectors.items():
            if collector.slots:
                self.collection_started(broker, self._now)

    # ---------------------------------------------------------------- decisions
    def flush_requested(self, collector: Collector) -> bool:
        """The flush ticket of the collector's current collection ran."""
        broker = collector.broker
        return self._flush_ran.get(broker, -1) == self._numbers.get(broker)

    def start_send(self, broker: int, collector: Collector, reason: str, now: float) -> None:
        """A send of everything collected, except when a collection reaches the default
        size cap (a full request): then the send is that one request, the head batch of
        each partition that fits, oldest-joined first, and the rest (partitions that do
        not fit, later batches of those that do) starts the next collection at once."""
        if reason != "max_bytes" or not self.request_cap:
            super().start_send(broker, collector, reason, now)
            return
        fit = self._one_request(collector)
        rest = {slot: joined for slot, joined in collector.slots.items() if slot not in fit}
        collector.slots = {slot: collector.slots[slot] for slot in fit}
        super().start_send(broker, collector, reason, now)
        send = self._pending.get(broker)
        if send is not None:
            for slot in send.remaining:
                send.remaining[slot] = 1
        if rest:
            for slot, joined in rest.items():
                del self._collected[slot]
                self.add(slot, now)
                collector.slots[slot] = joined
            collector.first_add = min(rest.values())

    def _one_request(self, collector: Collector) -> list[int]:
        """The collected partitions whose head batches fill one request, in joining order
        (as `drain_request` would take them)."""
        accumulator = self.accumulator
        limit, most = self.limits.max_request_size, self.limits.max_partitions
        size = REQUEST_OVERHEAD_BYTES
        fit: list[int] = []
        for slot in collector.slots:
            head = accumulator.head(slot)
            if head is None:
                continue
            if most is not None and len(fit) >= most:
                break
            need = head.size_bytes() + PARTITION_OVERHEAD_BYTES
            if fit and size + need > limit:
                continue
            size += need
            fit.append(slot)
        return fit

    def poll(self, now: float, context: PollContext) -> list[RequestPlan]:
        self.context = context
        self._now = max(self._now, now)
        self._run_tickets()
        return super().poll(now, context)

    def next_wakeup(self) -> float | None:
        """When to poll again without an event.

        A ticket that nothing pending is ahead of is reported at its queueing time (in the
        past): the engine polls as soon as its loop has run what is ready. A ticket waiting
        for overdue messages is not: the generator's next pass appends them and polls. A
        collection that is due but waits for a request slot is not either (a response
        unblocks it). Otherwise the earliest time a trigger holds (`CollectorPolicy`).
        """
        tickets = self._tickets
        ticket = tickets[0][0] if tickets and not self._waits_for_backlog(tickets[0][0]) else None
        collections = super().next_wakeup()
        if ticket is None or (collections is not None and collections < ticket):
            return collections
        return ticket

    # ------------------------------------------------------------------ metrics
    def stats(self) -> dict[str, object]:
        """The collector's send metrics, and what became of the flush tickets."""
        result = super().stats()
        result["flush_tickets"] = {
            "queued": self.tickets_queued,
            "ran": self.flushes_run,
            "stale": self.stale_flushes,
            "waiting": len(self._tickets),
        }
        return result
