"""The producer's request/response/retry/timeout/idempotence logic, without I/O.

A pure state machine in the style of h11: the engine tells it what happened (a request
was written, a response or an error came back, time passed) and it answers with actions
(acknowledge these batches, retry that one, fail these with a reason, their outcome is
unknown, close the connection to broker N, refresh metadata, get a new producer epoch).
It never reads a clock or touches a socket, so every failure path is tested with
synthetic time (tests/unit/test_sender.py).

Semantics follow Apache Kafka's Java producer (Sender, TransactionManager):

- every batch is bounded by `delivery.timeout.ms` from its creation to its outcome,
  whether queued, in flight or waiting to be retried; retries are bounded by `retries`;
- a request that gets no answer within `request.timeout.ms` closes its connection (as
  NetworkClient does), so nothing it carried can be applied later; everything in flight
  on that connection may have been written and is retried or, when out of time, unknown;
- with idempotence, each partition's batches get consecutive sequence numbers at their
  first send; a retry keeps its sequence and goes back in sequence order, so the broker
  both de-duplicates it and refuses anything out of order. A batch whose outcome became
  unknown leaves its partition's sequence unresolved: once nothing is in flight, the
  producer gets a new epoch (InitProducerId) and sequences start again at 0.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from aiokafka.errors import for_code

from producer_core.engine.core.accumulator import ProducerBatch, TopicPartition

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
LEADER_NOT_AVAILABLE = 5
NOT_LEADER_OR_FOLLOWER = 6
NETWORK_EXCEPTION = 13
OUT_OF_ORDER_SEQUENCE_NUMBER = 45
DUPLICATE_SEQUENCE_NUMBER = 46
INVALID_PRODUCER_EPOCH = 47
KAFKA_STORAGE_ERROR = 56
UNKNOWN_PRODUCER_ID = 59
FENCED_LEADER_EPOCH = 74
UNKNOWN_LEADER_EPOCH = 75
PRODUCER_FENCED = 90
MISSING_IN_RESPONSE = -2
"""Not a Kafka code: the response did not mention a partition the request carried."""

METADATA_ERRORS = frozenset({
    UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER,
    NETWORK_EXCEPTION, KAFKA_STORAGE_ERROR, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH,
})
"""Errors after which the partition's leader may have moved (Java's InvalidMetadataException
and friends): the batch is retried and metadata refreshed."""

FENCING_ERRORS = frozenset({INVALID_PRODUCER_EPOCH, PRODUCER_FENCED})

SEQUENCE_LIMIT = 2**31
"""Sequences are int32 and wrap to 0 (as Java's DefaultRecordBatch.incrementSequence)."""


# --------------------------------------------------------------------------- actions
@dataclass
class Acknowledge:
    """The broker wrote these batches (offset per batch; -1 when it did not say)."""

    broker: int
    batches: list[tuple[ProducerBatch, int]]


@dataclass
class Written:
    """acks=0: the batches are on the wire; no acknowledgement was asked for."""

    batches: list[ProducerBatch]


@dataclass
class Hold:
    """A batch of the partition waits for retry.backoff.ms: drain nothing of it meanwhile
    (as in Java, where the retried batch waits at the head of its deque)."""

    slot: int


@dataclass
class Requeue:
    """retry.backoff.ms is over: put the batch back at the head of its partition's queue
    (in first-send order, which with idempotence is sequence order) to be sent again;
    `release` when no other batch of the partition still waits."""

    batch: ProducerBatch
    release: bool


@dataclass
class Fail:
    """The batches were not written and will not be: failed with `reason`."""

    batches: list[ProducerBatch]
    reason: str


@dataclass
class Unknown:
    """The batches may or may not have been written: their outcome is unknown."""

    batches: list[ProducerBatch]
    reason: str


@dataclass
class DropConnection:
    """The connection to `broker` is of no more use (its requests will not be answered
    usefully): the producer answers with its `CloseConnection` command."""

    broker: int


@dataclass
class MetadataStale:
    """The leaders the sender knows are out of date: the producer answers with its
    `RefreshMetadata` command."""


@dataclass
class NeedProducerId:
    """The sender needs a (new) producer id and epoch before it can go on: the producer
    recovers one (its `InitProducerId` command) and answers `Sender.on_producer_id`."""


Action = Acknowledge | Written | Hold | Requeue | Fail | Unknown | DropConnection | \
    MetadataStale | NeedProducerId


@dataclass(frozen=True)
class SenderConfig:
    """The settings the sender acts on (seconds, counts)."""

    acks: int
    idempotent: bool
    retries: int
    retry_backoff_s: float
    request_timeout_s: float
    delivery_timeout_s: float
    max_in_flight: int
    transactional: bool = False
    """Batches carry the isTransactional attribute."""


@dataclass
class InFlight:
    """One ProduceRequest on the wire and the batches it carries that are not settled."""

    request_id: int
    broker: int
    batches: list[ProducerBatch]
    sent_at: float
    deadline: float
    """request.timeout.ms from the send."""
    expires: float
    """When the youngest batch's delivery.timeout.ms ends: nothing can be acknowledged in
    time after it, so the request is given up then."""


@dataclass
class Outgoing:
    """What `Sender.build` made of a plan: the batches to write (expired ones removed)."""

    request_id: int
    broker: int
    batches: list[ProducerBatch]
    partitions: list[tuple[str, list[tuple[int, bytes]]]]
    """Per topic, (partition, record batch bytes): the ProduceRequest's topic data."""


@dataclass
class IdempotenceState:
    """Producer id and epoch, and what the results say about them."""

    producer_id: int = -1
    epoch: int = -1
    epoch_bumps: int = 0
    next_sequence: dict[int, int] = field(default_factory=dict)
    unsettled: dict[int, dict[int, ProducerBatch]] = field(default_factory=dict)
    """slot -> base sequence -> batch stamped in this epoch and not settled yet."""


class Sender:
    """Decides, for every batch that leaves the accumulator, how its story ends."""

    def __init__(self, slots: list[TopicPartition], config: SenderConfig) -> None:
        self.slots = slots
        self.config = config
        self.in_flight: dict[int, InFlight] = {}
        self.in_flight_by_broker: dict[int, int] = {}
        self._next_request_id = 0
        self._in_flight_batches = 0
        self._next_order = 0
        self._retries: list[tuple[float, int, ProducerBatch]] = []  # (due, tiebreak, batch)
        self._retry_order = 0
        self.parked: list[ProducerBatch] = []
        """Drained while a producer id was being fetched: sent once it is there."""
        self.waiting: dict[int, int] = {}
        """slot -> batches of it waiting for retry.backoff.ms (the slot is held)."""
        self.id = IdempotenceState()
        self.bump_needed = False
        self.awaiting_producer_id = config.idempotent
        self.fatal: str | None = None
        self.stopped = False

    # ----------------------------------------------------------------- queries
    @property
    def ready(self) -> bool:
        """Whether requests may be sent now (not while a producer id is being fetched)."""
        return not self.awaiting_producer_id and not self.stopped

    def free_slots(self, brokers: Iterable[int]) -> dict[int, int]:
        """Requests each broker may still take (max.in.flight per connection). While a
        producer id is fetched, batches are drained as usual but parked (see `build`), so
        that delivery.timeout.ms still bounds them however long the broker takes."""
        if self.stopped:
            return {}
        limit = self.config.max_in_flight
        if self.awaiting_producer_id:
            return dict.fromkeys(brokers, limit)
        free = {}
        for broker in brokers:
            room = limit - self.in_flight_by_broker.get(broker, 0)
            if room > 0:
                free[broker] = room
        return free

    @property
    def pending(self) -> int:
        """Batches sent at least once whose outcome is not settled (in flight or retrying)."""
        return self._in_flight_batches + len(self._retries) + len(self.parked)

    def next_wakeup(self) -> float | None:
        """The next time `poll` has something to do: a request or delivery deadline, a retry."""
        times = [min(r.deadline, r.expires) for r in self.in_flight.values()]
        if self._retries:
            times.append(self._retries[0][0])
        if self.parked:
            times.append(min(self._batch_deadline(b) for b in self.parked))
        return min(times) if times else None

    def _batch_deadline(self, batch: ProducerBatch) -> float:
        return batch.created + self.config.delivery_timeout_s

    # --------------------------------------------------------------- producer id
    def on_producer_id(self, producer_id: int, epoch: int) -> list[Action]:
        """InitProducerId answered: sequences start again at 0 under this id and epoch.

        Every batch stamped before is re-stamped at its next send, even when the id and
        epoch are the ones it carries: a restarted broker that lost its state (Tansu is in
        memory) hands out the same producer id and epoch again, and a batch keeping its old
        sequence would be refused while a newer batch, stamped 0, is written ahead of it.
        """
        if self.id.producer_id >= 0:
            self.id.epoch_bumps += 1
        self.id.producer_id, self.id.epoch = producer_id, epoch
        self.id.next_sequence.clear()
        for stamped in self.id.unsettled.values():
            for batch in stamped.values():
                batch.sequence = -1
        self.id.unsettled.clear()
        self.awaiting_producer_id = False
        self.bump_needed = False
        parked, self.parked = self.parked, []
        return [Requeue(batch, release=batch.slot not in self.waiting) for batch in parked]

    def on_producer_id_error(self, reason: str) -> list[Action]:
        """InitProducerId failed for good: nothing can be sent idempotently."""
        return self._go_fatal(f"InitProducerId failed: {reason}")

    # ------------------------------------------------------------ transactions
    def park(self, batches: list[ProducerBatch]) -> None:
        """Hold drained batches unsent (their partitions are not in the open transaction
        yet) until `unpark`; they stay bounded by delivery.timeout.ms meanwhile."""
        for batch in batches:
            if batch.order < 0:
                batch.order = self._next_order
                self._next_order += 1
        self.parked.extend(batches)

    def unpark(self, slots: set[int]) -> list[Action]:
        """These partitions joined the transaction: their parked batches go back to their
        queues (in drain order) to be sent."""
        back = [batch for batch in self.parked if batch.slot in slots]
        self.parked = [batch for batch in self.parked if batch.slot not in slots]
        return [Requeue(batch, release=batch.slot not in self.waiting) for batch in back]

    # -------------------------------------------------------------------- send
    def build(self, broker: int, batches: list[ProducerBatch], now: float
              ) -> tuple[Outgoing | None, list[Action]]:
        """Turn a policy's plan into a request: drop expired batches, stamp sequences.

        Returns None (and the actions settling what was dropped) when nothing is left.
        """
        actions: list[Action] = []
        keep = []
        expired = []
        for batch in batches:
            if self.fatal is not None:
                actions.append(self._final([batch], self.fatal))
            elif now >= self._batch_deadline(batch):
                expired.append(batch)
            else:
                keep.append(batch)
        for batch in expired:
            actions.append(self._final([batch], "delivery.timeout.ms"))
        if keep and self.awaiting_producer_id:
            for batch in keep:  # in drain order: they go back to their queues in this order
                if batch.order < 0:
                    batch.order = self._next_order
                    self._next_order += 1
            self.parked.extend(keep)
            keep = []
        if not keep:
            return None, actions
        by_topic: dict[str, list[tuple[int, bytes]]] = {}
        for batch in keep:
            if batch.order < 0:
                batch.order = self._next_order
                self._next_order += 1
            if self.config.idempotent:
                self._stamp(batch)
            else:
                batch.seal()
            batch.attempts += 1
            tp = self.slots[batch.slot]
            by_topic.setdefault(tp.topic, []).append((tp.partition, batch.seal()))
        request_id = self._next_request_id
        self._next_request_id += 1
        self.in_flight[request_id] = InFlight(
            request_id, broker, keep, now, now + self.config.request_timeout_s,
            max(self._batch_deadline(b) for b in keep))
        self.in_flight_by_broker[broker] = self.in_flight_by_broker.get(broker, 0) + 1
        self._in_flight_batches += len(keep)
        return Outgoing(request_id, broker, keep, list(by_topic.items())), actions

    def _stamp(self, batch: ProducerBatch) -> None:
        state = self.id
        if batch.sequence >= 0 and self._current(batch):
            return  # a retry keeps its sequence: the broker de-duplicates it
        sequence = state.next_sequence.get(batch.slot, 0)
        state.next_sequence[batch.slot] = (sequence + batch.record_count) % SEQUENCE_LIMIT
        batch.stamp(state.producer_id, state.epoch, sequence, self.config.transactional)
        state.unsettled.setdefault(batch.slot, {})[sequence] = batch

    def _take(self, request_id: int) -> InFlight | None:
        request = self.in_flight.pop(request_id, None)
        if request is not None:
            self.in_flight_by_broker[request.broker] -= 1
            self._in_flight_batches -= len(request.batches)
        return request

    # ---------------------------------------------------------------- outcomes
    def on_send_error(self, request_id: int, reason: str, now: float) -> list[Action]:
        """The request could not be written at all (no connection): nothing reached the
        broker, so its batches are retried (or fail) and leaders are looked up again."""
        request = self._take(request_id)
        if request is None:
            return []
        for batch in request.batches:
            batch.attempts -= 1  # not on the wire: not a send
        actions: list[Action] = [MetadataStale()]
        for batch in request.batches:
            actions.extend(self._retry_or_settle(batch, reason, now))
        return actions

    def on_request_failed(self, request_id: int, reason: str, now: float) -> list[Action]:
        """No answer (request timeout) or the connection was lost after the request was
        written: it may have been applied. Closes the connection, so every other request in
        flight on it ends the same way."""
        request = self.in_flight.get(request_id)
        if request is None:
            return []
        return self._lose_connection(request.broker, now, request_id, reason)

    def _lose_connection(self, broker: int, now: float, request_id: int = -1,
                         reason: str = "connection_lost") -> list[Action]:
        """Close `broker`'s connection: whatever is in flight there may have been written,
        and is retried or, out of time, unknown."""
        actions: list[Action] = [DropConnection(broker), MetadataStale()]
        for other in [r for r in self.in_flight.values() if r.broker == broker]:
            self._take(other.request_id)
            why = reason if other.request_id == request_id else "connection_lost"
            for batch in other.batches:
                batch.maybe_written = True
                actions.extend(self._retry_or_settle(batch, why, now))
        return actions

    def on_response(
        self, request_id: int, errors: Mapping[tuple[str, int], tuple[int, int]] | None,
        now: float,
    ) -> tuple[list[Action], bool]:
        """A ProduceResponse (`errors`: (topic, partition) -> (error code, base offset)),
        or None for acks=0. Returns the actions and whether every batch was acknowledged."""
        request = self._take(request_id)
        if request is None:
            return [], True
        if errors is None:
            for batch in request.batches:
                self._settled(batch)
            return [Written(request.batches)], True
        acknowledged: list[tuple[ProducerBatch, int]] = []
        actions: list[Action] = []
        refresh = False
        for batch in request.batches:
            tp = self.slots[batch.slot]
            code, offset = errors.get((tp.topic, tp.partition), (MISSING_IN_RESPONSE, -1))
            if code in (NONE, DUPLICATE_SEQUENCE_NUMBER):
                self._settled(batch)
                acknowledged.append((batch, offset))
            else:
                refresh = refresh or code in METADATA_ERRORS
                actions.extend(self._on_error(batch, code, now))
        if acknowledged:
            actions.insert(0, Acknowledge(request.broker, acknowledged))
        if refresh:
            actions.append(MetadataStale())
        return actions, len(acknowledged) == len(request.batches)

    def _on_error(self, batch: ProducerBatch, code: int, now: float) -> list[Action]:
        name = for_code(code).__name__ if code != MISSING_IN_RESPONSE else "missing_in_response"
        if code in FENCING_ERRORS:
            return self._go_fatal(f"{name} (another producer has this producer id)", batch)
        if self.config.idempotent and code == OUT_OF_ORDER_SEQUENCE_NUMBER:
            if self._has_earlier_unsettled(batch):
                # an earlier batch of the partition is being retried: this one follows it
                return self._retry_or_settle(batch, name, now, count_attempt=False)
            self._need_bump()  # the broker lost this producer's sequence: start a new epoch
            return self._retry_or_settle(batch, name, now)
        if self.config.idempotent and code == UNKNOWN_PRODUCER_ID:
            self._need_bump()  # the broker no longer knows the producer (state expired)
            return self._retry_or_settle(batch, name, now)
        if code == MISSING_IN_RESPONSE or for_code(code).retriable:
            return self._retry_or_settle(batch, name, now)
        return [self._final([batch], name)]

    def _has_earlier_unsettled(self, batch: ProducerBatch) -> bool:
        unsettled = self.id.unsettled.get(batch.slot, {})
        return any(sequence < batch.sequence for sequence in unsettled)

    def _retry_or_settle(self, batch: ProducerBatch, reason: str, now: float,
                         count_attempt: bool = True) -> list[Action]:
        """Retry if allowed and in time (after retry.backoff.ms); otherwise settle it."""
        config = self.config
        if self.fatal is not None:
            return [self._final([batch], self.fatal)]
        if count_attempt and batch.attempts > config.retries:
            return [self._final([batch], f"{reason} (retries exhausted)")]
        due = now + config.retry_backoff_s
        if due >= self._batch_deadline(batch):
            return [self._final([batch], f"{reason} (delivery.timeout.ms)")]
        heapq.heappush(self._retries, (due, self._retry_order, batch))
        self._retry_order += 1
        waiting = self.waiting.get(batch.slot, 0)
        self.waiting[batch.slot] = waiting + 1
        return [] if waiting else [Hold(batch.slot)]

    def _pop_retry(self) -> Requeue:
        batch = heapq.heappop(self._retries)[2]
        left = self.waiting[batch.slot] - 1
        if left:
            self.waiting[batch.slot] = left
        else:
            del self.waiting[batch.slot]
        return Requeue(batch, release=not left)

    def _final(self, batches: list[ProducerBatch], reason: str) -> Fail | Unknown:
        """The end of these batches: unknown if any attempt may have been written."""
        for batch in batches:
            self._settled(batch)
        if any(batch.maybe_written for batch in batches):
            if self.config.idempotent:
                self._need_bump()  # the partition's sequence is unresolved
            return Unknown(batches, reason)
        return Fail(batches, reason)

    def _settled(self, batch: ProducerBatch) -> None:
        if batch.sequence >= 0 and self._current(batch):
            unsettled = self.id.unsettled.get(batch.slot)
            if unsettled is not None:
                unsettled.pop(batch.sequence, None)

    def _current(self, batch: ProducerBatch) -> bool:
        """Whether the batch's sequence belongs to the current producer id and epoch."""
        return batch.epoch == self.id.epoch and batch.producer_id == self.id.producer_id

    def _need_bump(self) -> None:
        if self.config.idempotent:
            self.bump_needed = True

    def _go_fatal(self, reason: str, batch: ProducerBatch | None = None) -> list[Action]:
        """Fencing: this producer may send nothing more; everything not settled fails."""
        self.fatal = reason
        actions: list[Action] = []
        if batch is not None:
            actions.append(self._final([batch], reason))
        while self._retries:  # back to their queues, to fail when drained
            actions.append(self._pop_retry())
        return actions

    # -------------------------------------------------------------------- time
    def poll(self, now: float) -> list[Action]:
        """Act on time: request timeouts, delivery.timeout.ms of in-flight batches, retries
        that are due, and an epoch bump once nothing is in flight."""
        actions: list[Action] = []
        for request in list(self.in_flight.values()):
            if request.request_id not in self.in_flight:
                continue  # settled with an earlier request on the same connection
            if now >= request.expires:
                # nothing it carries can still be acknowledged in time: give the request up
                self._take(request.request_id)
                for batch in request.batches:
                    batch.maybe_written = True
                actions.append(self._final(request.batches, "delivery.timeout.ms"))
                actions.extend(self._lose_connection(request.broker, now))
            elif now >= request.deadline:
                actions.extend(self.on_request_failed(request.request_id, "request_timeout", now))
        while self._retries and self._retries[0][0] <= now:
            actions.append(self._pop_retry())
        if self.parked:
            expired = [b for b in self.parked if now >= self._batch_deadline(b)]
            if expired:
                self.parked = [b for b in self.parked if now < self._batch_deadline(b)]
                actions.extend(self._final([b], "delivery.timeout.ms") for b in expired)
        if self.bump_needed and not self.in_flight and not self.awaiting_producer_id \
                and self.fatal is None and not self.stopped:
            # every retry goes back to its queue now, in order, to be re-stamped in order
            while self._retries:
                actions.append(self._pop_retry())
            self.awaiting_producer_id = True
            actions.append(NeedProducerId())
        return actions

    def pause(self) -> None:
        """No new requests from now on (a stop's grace); responses are still taken."""
        self.stopped = True

    def stop(self, reason: str = "interrupted") -> list[Action]:
        """End now (a signal, after the grace): nothing more is sent; what is in flight or
        waiting for a retry is settled with `reason` (unknown if it may be written)."""
        self.stopped = True
        actions: list[Action] = []
        for request_id in list(self.in_flight):
            request = self._take(request_id)
            assert request is not None
            for batch in request.batches:
                batch.maybe_written = True
            actions.append(self._final(request.batches, reason))
        while self._retries:
            retry = self._pop_retry()
            actions.append(self._final([retry.batch], reason))
        parked, self.parked = self.parked, []
        actions.extend(self._final([batch], reason) for batch in parked)
        return actions
