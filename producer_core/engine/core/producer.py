"""The producer as one pure state machine: events in, commands out.

`Producer` holds the accumulator, the linger policy, the sender (retries, timeouts,
idempotence), the transaction manager (`transactions.Transactions`) and the outcome ledger
(`ledger.Ledger`). It never reads a clock or touches a socket. The asyncio shell
(`producer_core.engine.drivers.engine`) tells it what happened -- `handle(event, now)` -- and
when time has passed -- `expire(now)`, `send_ready(now, inputs)` -- and carries out the commands
it answers (find the transaction coordinator, ask for a producer id, write this request,
add these partitions to the transaction, end it, re-read metadata, close a connection),
feeding the results back as events. The shell asks `next_wakeup()` when to call again.
This is the shape of Kafka's `Sender.runOnce` and `TransactionManager`, and of h11: the
protocol decisions are here, testable with synthetic time
(tests/unit/test_producer_core.py); the shell only does I/O.

The session opens with `open()`: a transactional producer finds its coordinator
(`FindCoordinator` -> `CoordinatorFound`) and asks it for a producer id (which fences any
older producer with the same transactional id); an idempotent one asks any broker. Until
`ready` nothing is sent, and a failure is `fatal`. A transaction ends in three steps:
`begin_transaction_end` (everything queued is flushed), `finish_transaction` (once every
batch has its outcome and no AddPartitionsToTxn is in flight: `EndTransaction`), and the
`TransactionEnded` event, which opens the next transaction.

Producer-id recovery (KIP-360) is here too: after unresolved sequences the sender asks for
a new epoch; a broker that refuses the bump is asked for a new producer id; a failure is
asked again after `retry.backoff.ms` (at least 50 ms), for at most `delivery.timeout.ms`,
after which the producer is fatal and every message still open fails with the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from producer_core.engine.core.accumulator import Accumulator, ProducerBatch, TopicPartition
from producer_core.engine.core.events import (
    NO_INPUTS,
    AddPartitions,
    CloseConnection,
    Command,
    CoordinatorFound,
    EndTransaction,
    Event,
    FindCoordinator,
    InitProducerId,
    MetadataFailed,
    MetadataUpdated,
    PartitionsAdded,
    ProducerIdAssigned,
    ProducerIdFailed,
    RefreshMetadata,
    RequestFailed,
    RequestWritten,
    ResponseReceived,
    Send,
    SendFailed,
    SendInputs,
    Stop,
    TransactionEnded,
    TransactionFailed,
    Wake,
)
from producer_core.engine.core.ledger import Ledger
from producer_core.engine.core.linger.base import (
    LatencyFeedback,
    LingerPolicy,
    PollContext,
    RequestPlan,
    RunStart,
)
from producer_core.engine.core.memory import BatchMemory
from producer_core.engine.core.sender import (
    Acknowledge,
    Action,
    DropConnection,
    Fail,
    Hold,
    MetadataStale,
    NeedProducerId,
    Requeue,
    Sender,
    Unknown,
    Written,
)
from producer_core.engine.core.transactions import Transactions
from producer_core.errors import BrokerError
from producer_core.results.metrics import RequestRecord, RunMetrics

PRODUCER_ID_MIN_BACKOFF_S = 0.05
"""Least pause before InitProducerId is asked again after a failure."""

TRANSACTIONAL_UNKNOWN = (
    "A transactional batch's outcome became unknown (a request timed out or its "
    "connection was lost), so the transaction cannot be completed; kbatch does "
    "not recover transactional producers from this. Raise request.timeout.ms or "
    "check the brokers.")


@dataclass
class _Request:
    broker: int
    record: RequestRecord
    sent_at: float
    batches: list[ProducerBatch]
    lingers: list[float]


@dataclass
class _Recovery:
    """Producer-id recovery in progress: since when, and when to ask again."""

    since: float
    retry_at: float | None = None
    asked_fresh: bool = False


@dataclass
class ProducerConfig:
    acks: int
    retry_backoff_s: float
    delivery_timeout_s: float
    request_timeout_ms: int
    idempotent: bool


@dataclass
class Producer:
    """One producer's state; see the module docstring for the protocol."""

    slots: list[TopicPartition]
    leaders: list[int]
    accumulator: Accumulator
    policy: LingerPolicy
    sender: Sender
    ledger: Ledger
    config: ProducerConfig
    txn: Transactions | None = None
    batch_memory: BatchMemory | None = None
    buffer_memory: int = 1 << 62
    brokers: set[int] = field(default_factory=set)
    start: float = 0.0
    fatal: BrokerError | None = None
    """A producer that cannot go on (its session could not open; a transactional producer
    fenced, refused or with an unknown outcome): the shell ends the run with it."""
    _opening: type | None = None
    """While the session opens: the event awaited (`CoordinatorFound`, `ProducerIdAssigned`)."""
    _requests: dict[int, _Request] = field(default_factory=dict)
    _recovery: _Recovery | None = None
    _refreshing: bool = False
    _refresh_at: float | None = None
    _requests_before_end: int = 0
    _flushed_at: float = 0.0
    _end_asked: bool = False
    _flushing: bool = False
    """A transaction is being flushed (`begin_transaction_end` to `finish_transaction`)."""

    def __post_init__(self) -> None:
        self._feedback = (self.policy.on_acknowledged
                          if isinstance(self.policy, LatencyFeedback) else None)
        self.ledger.on_acknowledged = self._feedback
        if self.txn is not None:
            self.ledger.on_txn_ack = self.txn.on_acknowledged

    # ------------------------------------------------------------------ session
    def open(self) -> list[Command]:
        """Open the producer's session: what to ask before the first send."""
        if self.txn is not None:
            self._opening = CoordinatorFound
            return [FindCoordinator(self.txn.config.transactional_id)]
        if self.config.idempotent:
            self._opening = ProducerIdAssigned
            return [InitProducerId()]
        return []

    @property
    def ready(self) -> bool:
        """The session is open: the producer may send."""
        return self._opening is None

    def begin(self, start: float, warmup_s: float = 0.0) -> None:
        """The run's schedule starts at `start` (its first `warmup_s` are not measured)."""
        self.start = start
        if warmup_s:
            self.ledger.warmup_until = start + warmup_s
        if isinstance(self.policy, RunStart):
            self.policy.begin(start)
        if self.txn is not None:
            self.txn.begin(start)

    # ------------------------------------------------------------------ queries
    def next_wakeup(self) -> float | None:
        """The next time `expire` / `send_ready` have something to do by the clock."""
        times = [self.policy.next_wakeup(), self.sender.next_wakeup(), self._refresh_at,
                 self._recovery.retry_at if self._recovery is not None else None]
        known = [t for t in times if t is not None]
        return min(known) if known else None

    def memory_full(self) -> bool:
        """No room for the next message: buffer.memory (Java-style in mode java) is used up."""
        accumulator = self.accumulator
        if self.batch_memory is not None:
            return self.batch_memory.exhausted(accumulator.queued_batches)
        return accumulator.queued_bytes >= self.buffer_memory

    def free_batches(self) -> int | None:
        """Mode java: how many new batches `buffer.memory` still holds (None: the other
        modes count bytes, and any message waits once they are used up)."""
        if self.batch_memory is None:
            return None
        return self.batch_memory.free(self.accumulator.queued_batches)

    @property
    def idle(self) -> bool:
        """Nothing queued and nothing awaiting an outcome."""
        return self.accumulator.empty and self.sender.pending == 0

    @property
    def flushing(self) -> bool:
        """A transaction is being flushed: everything queued goes, whatever its window."""
        return self._flushing

    @property
    def requests_in_flight(self) -> int:
        """Requests written and not yet answered (nor given up)."""
        return len(self.sender.in_flight)

    @property
    def metrics(self) -> RunMetrics:
        """What the run measured so far (the ledger's)."""
        return self.ledger.metrics

    # --------------------------------------------------------------------- time
    def expire(self, now: float) -> list[Command]:
        """Act on time: request and delivery deadlines, retries that are due, and a
        producer-id or metadata request to ask again."""
        commands = self._apply(self.sender.poll(now), now)
        recovery = self._recovery
        if recovery is not None and recovery.retry_at is not None and now >= recovery.retry_at:
            recovery.retry_at = None
            commands.append(self._ask_producer_id(fresh=False))
        if self._refresh_at is not None and now >= self._refresh_at:
            self._refresh_at = None
            commands.extend(self._refresh())
        return commands

    def send_ready(self, now: float, inputs: SendInputs | None = None) -> list[Command]:
        """Ask the policy what to send now and turn each plan into a request; `inputs`:
        what the shell knows (the generator's backlog, memory, whether it is done)."""
        if self._opening is not None:  # no producer id yet: nothing may go
            return []
        if inputs is None:
            inputs = NO_INPUTS
        plans = self.policy.poll(now, PollContext(
            self.sender.free_slots(self.brokers), inputs.backlog, inputs.memory_exhausted,
            inputs.flushing or self._flushing))
        commands: list[Command] = []
        for plan in plans:
            commands.extend(self._send(plan, now))
        return commands

    # ------------------------------------------------------------------- events
    def handle(self, event: Event, now: float) -> list[Command]:
        """What happened, at `now`; returns what to do (each event's handler: HANDLERS)."""
        handler = HANDLERS.get(type(event))
        if handler is None:
            raise TypeError(f"not a producer event: {event!r}")
        return handler(self, event, now)

    def _on_send_failed(self, event: SendFailed, now: float) -> list[Command]:
        self._requests.pop(event.request_id, None)
        return self._apply(self.sender.on_send_error(event.request_id, event.reason, now), now)

    def _on_producer_id(self, event: ProducerIdAssigned, now: float) -> list[Command]:
        self._recovery = None
        self._opening = None
        return [*self._apply(self.sender.on_producer_id(event.producer_id, event.epoch), now),
                Wake()]

    def _on_partitions_added(self, event: PartitionsAdded, now: float) -> list[Command]:
        assert self.txn is not None
        done = self.txn.on_added()
        return [*self._apply(self.sender.unpark(set(done)), now), *self._start_add(), Wake()]

    def _on_transaction_failed(self, event: TransactionFailed, now: float) -> list[Command]:
        self.fatal = event.error
        return [Wake()]

    def _on_transaction_ended(self, event: TransactionEnded, now: float) -> list[Command]:
        self._end_transaction(event.committed, now)
        return []

    def _on_metadata(self, event: MetadataUpdated, now: float) -> list[Command]:
        self._refreshing = False
        if len(event.leaders) != len(self.leaders):  # missing partitions: ask again
            return self.handle(MetadataFailed("metadata is missing partitions"), now)
        self.brokers.update(event.brokers)
        self.leaders[:] = event.leaders
        self.policy.set_leaders(self.leaders)
        return [Wake()]

    def _on_metadata_failed(self, event: MetadataFailed, now: float) -> list[Command]:
        self._refreshing = False
        self._refresh_at = now + self.config.retry_backoff_s
        return [Wake()]

    def _on_stop(self, event: Stop, now: float) -> list[Command]:
        self.sender.pause()
        return []

    # ------------------------------------------------------------------- sending
    def _send(self, plan: RequestPlan, now: float) -> list[Command]:
        batches = plan.batches
        commands: list[Command] = []
        txn = self.txn
        if txn is not None:  # nothing goes before its partition is in the transaction
            missing = set(txn.missing(b.slot for b in batches))
            if missing:
                self.sender.park([b for b in batches if b.slot in missing])
                batches = [b for b in batches if b.slot not in missing]
                txn.need(missing)
                commands.extend(self._start_add())
                if not batches:
                    return commands
        outgoing, settled = self.sender.build(plan.broker, batches, now)
        commands.extend(self._apply(settled, now))
        if outgoing is None:
            return commands
        records = size = attempt = 0
        oldest = now
        lingers: list[float] = []
        for batch in outgoing.batches:
            records += batch.record_count
            size += len(batch.seal())
            attempt = max(attempt, batch.attempts)
            oldest = min(oldest, batch.created)
            if batch.attempts == 1:
                lingers.append(now - batch.created)
        record = RequestRecord(
            send_time_s=now - self.start, broker=plan.broker, partitions=len(outgoing.batches),
            records=records, bytes=size, reason=plan.reason,
            linger_ms=(now - oldest) * 1000, attempt=attempt,
        )
        self._requests[outgoing.request_id] = _Request(plan.broker, record, now,
                                                       outgoing.batches, lingers)
        commands.append(Send(outgoing.request_id, plan.broker, outgoing.partitions,
                             expect_response=self.config.acks != 0))
        return commands

    def _on_written(self, event: RequestWritten, now: float) -> list[Command]:
        request = self._requests[event.request_id]
        self._sync_memory()
        self.ledger.record_request(request.record, request.batches, request.lingers)
        request.batches = []
        request.lingers = []
        return []

    def _on_request_failed(self, event: RequestFailed, now: float) -> list[Command]:
        request = self._requests.get(event.request_id)
        if event.request_id not in self.sender.in_flight or request is None:
            self._requests.pop(event.request_id, None)
            return []  # the sender gave the request up already (timeout, closed connection)
        del self._requests[event.request_id]
        self.policy.on_response(request.broker, now - request.sent_at, now, 0, True)
        return self._apply(self.sender.on_request_failed(event.request_id, event.reason, now),
                           now)

    def _on_response(self, event: ResponseReceived, now: float) -> list[Command]:
        request = self._requests.pop(event.request_id, None)
        if event.request_id not in self.sender.in_flight or request is None:
            return []  # the sender gave the request up already (timeout, closed connection)
        record = request.record
        record.rtt_ms = (now - request.sent_at) * 1000
        self.ledger.metrics.rtt.record_us(int(record.rtt_ms * 1000))
        if event.topics is None:  # acks=0
            self.policy.on_response(request.broker, now - request.sent_at, now, 0, False)
            return self._apply(self.sender.on_response(event.request_id, None, now)[0], now)
        outcome: dict[tuple[str, int], tuple[int, int]] = {}
        for topic, partitions in event.topics:
            for partition_response in partitions:
                partition, error_code, offset = partition_response[:3]
                outcome[(topic, partition)] = (error_code, offset)
        actions, all_ok = self.sender.on_response(event.request_id, outcome, now)
        self.policy.on_response(request.broker, now - request.sent_at, now,
                                event.throttle_ms, not all_ok)
        return self._apply(actions, now)

    # -------------------------------------------------------------- sender actions
    def _apply(self, actions: list[Action], now: float) -> list[Command]:
        """Carry out what the sender decided; what needs I/O becomes a command."""
        if not actions:
            return []
        self._sync_memory()
        commands: list[Command] = []
        accumulator = self.accumulator
        for action in actions:
            if isinstance(action, Acknowledge):
                self.ledger.acknowledge(action.broker, action.batches, now)
            elif isinstance(action, Hold):
                accumulator.hold(action.slot)
            elif isinstance(action, Requeue):
                accumulator.requeue_front(action.batch)
                if action.release:
                    accumulator.release(action.batch.slot)
                self.policy.on_requeue(action.batch.slot, now)
                commands.append(Wake())
            elif isinstance(action, Fail | Unknown | Written):
                count = self.ledger.settle(action)
                if self.txn is not None and not isinstance(action, Written):
                    self.txn.on_failed(count)
            elif isinstance(action, DropConnection):
                commands.append(CloseConnection(action.broker))
            elif isinstance(action, MetadataStale):
                commands.extend(self._refresh())
            elif isinstance(action, NeedProducerId):
                commands.extend(self._start_recovery(now))
        return commands

    def _sync_memory(self) -> None:
        """Mode java: a batch holds batch.size of buffer.memory from its first send until
        its outcome (retries included); queued batches are counted by the accumulator."""
        if self.batch_memory is not None:
            self.batch_memory.held = self.sender.pending

    def _refresh(self) -> list[Command]:
        if self._refreshing:
            return []
        self._refreshing = True
        return [RefreshMetadata()]

    # ------------------------------------------------------------- producer id
    def _start_recovery(self, now: float) -> list[Command]:
        """A new epoch after unresolved sequences (KIP-360)."""
        if self.txn is not None:
            self.fatal = BrokerError(TRANSACTIONAL_UNKNOWN)
            return [Wake()]
        self._recovery = _Recovery(since=now)
        return [self._ask_producer_id(fresh=False)]

    def _ask_producer_id(self, fresh: bool) -> InitProducerId:
        assert self._recovery is not None
        self._recovery.asked_fresh = fresh
        if fresh:
            return InitProducerId()
        state = self.sender.id
        return InitProducerId(state.producer_id, state.epoch)

    def _on_coordinator_found(self, event: CoordinatorFound, now: float) -> list[Command]:
        """The transactional session's second step: a producer id from the coordinator."""
        assert self.txn is not None and self._opening is CoordinatorFound
        self._opening = ProducerIdAssigned
        config = self.txn.config
        return [InitProducerId(transactional_id=config.transactional_id,
                               transaction_timeout_ms=config.timeout_ms)]

    def _on_producer_id_failed(self, event: ProducerIdFailed, now: float) -> list[Command]:
        if self._opening is not None:  # no producer id to start with: the run cannot go on
            self.fatal = BrokerError(
                event.reason if event.refused else
                f"InitProducerId got no answer ({event.reason}): check that the brokers "
                "are up and reachable.")
            return [Wake()]
        recovery = self._recovery
        if recovery is None:
            return []
        if event.refused and not recovery.asked_fresh:
            return [self._ask_producer_id(fresh=True)]  # the broker cannot bump: a new id
        if now - recovery.since >= self.config.delivery_timeout_s:
            self._recovery = None  # every batch waiting for it is out of time: give up
            return self._apply(self.sender.on_producer_id_error(event.reason), now)
        recovery.retry_at = now + max(self.config.retry_backoff_s, PRODUCER_ID_MIN_BACKOFF_S)
        return []

    # ------------------------------------------------------------- transactions
    def track_partitions(self) -> list[Command]:
        """Partitions that got data join the transaction ahead of their first send (as
        Java adds a partition at its first append to a transaction)."""
        txn = self.txn
        if txn is None or len(txn.added) >= len(self.slots):
            return []
        txn.need(self.accumulator.nonempty_slots())
        return self._start_add()

    def _start_add(self) -> list[Command]:
        assert self.txn is not None
        slots = self.txn.next_add()
        if not slots:
            return []
        state = self.sender.id
        return [AddPartitions([(self.slots[s].topic, self.slots[s].partition) for s in slots],
                              state.producer_id, state.epoch)]

    def transaction_due(self, now: float) -> bool:
        return self.txn is not None and self.txn.due(now)

    @property
    def adding_partitions(self) -> bool:
        return self.txn is not None and bool(self.txn.adding)

    @property
    def transaction_ending(self) -> bool:
        """From `begin_transaction_end` until the transaction has ended."""
        return self.txn is not None and self.txn.ending

    def begin_transaction_end(self, now: float) -> None:
        """The open transaction ends: flush everything queued (whatever its window)."""
        assert self.txn is not None
        self.txn.start_end(now)
        self._requests_before_end = len(self.ledger.metrics.requests)
        self._flushing = True

    def finish_transaction(self, now: float) -> list[Command]:
        """End the ending transaction once every batch of it has its outcome and no
        AddPartitionsToTxn is in flight: EndTxn (or, for an empty transaction, nothing: it
        ends here). Before that, and once EndTxn was asked, nothing."""
        txn = self.txn
        if (txn is None or not txn.ending or self._end_asked or not self.idle
                or self.adding_partitions):
            return []
        self._end_asked = True
        self._flushing = False
        self._flushed_at = now
        txn.on_flushed(now, len(self.ledger.metrics.requests) - self._requests_before_end)
        commit = txn.commits()
        if txn.empty:
            self._end_transaction(commit, now)
            return []
        state = self.sender.id
        return [EndTransaction(commit, state.producer_id, state.epoch)]

    def _end_transaction(self, committed: bool, now: float) -> None:
        assert self.txn is not None
        self._end_asked = False
        aborted = self.txn.on_ended(committed, now - self._flushed_at, now)
        if aborted:
            self.ledger.abort(aborted)
        self.ledger.transaction_closed()

    # --------------------------------------------------------------------- end
    def close(self, reason: str, now: float) -> None:
        """The run stops now: what is in flight, retrying or queued ends with `reason`
        (unknown where it may have been written, failed where it never was)."""
        self._apply(self.sender.stop(reason), now)
        queued = self.accumulator.take_all()
        unknown = [b for b in queued if b.maybe_written]
        never = [b for b in queued if not b.maybe_written]
        if unknown:
            self._apply([Unknown(unknown, reason)], now)
        if never:
            self._apply([Fail(never, reason)], now)

HANDLERS: dict[type[Any], Callable[[Producer, Any, float], list[Command]]] = {
    ResponseReceived: Producer._on_response,
    RequestWritten: Producer._on_written,
    SendFailed: Producer._on_send_failed,
    RequestFailed: Producer._on_request_failed,
    CoordinatorFound: Producer._on_coordinator_found,
    ProducerIdAssigned: Producer._on_producer_id,
    ProducerIdFailed: Producer._on_producer_id_failed,
    PartitionsAdded: Producer._on_partitions_added,
    TransactionFailed: Producer._on_transaction_failed,
    TransactionEnded: Producer._on_transaction_ended,
    MetadataUpdated: Producer._on_metadata,
    MetadataFailed: Producer._on_metadata_failed,
    Stop: Producer._on_stop,
}
"""Each event type's handler (`Producer.handle`): one table, one handler per event."""
