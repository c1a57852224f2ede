"""The producer core on synthetic time, no broker: producer-id recovery (KIP-360) and its
bound, fencing, and the transaction protocol (AddPartitionsToTxn before a partition's
first batch, flush, EndTxn, aborts). The test plays the shell: it answers each command
with the event a broker would cause."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from producer_core.config import build_settings
from producer_core.engine.core.accumulator import Accumulator, TopicPartition
from producer_core.engine.core.events import (
    AddPartitions,
    Command,
    CoordinatorFound,
    EndTransaction,
    FindCoordinator,
    InitProducerId,
    MetadataUpdated,
    PartitionsAdded,
    ProducerIdAssigned,
    ProducerIdFailed,
    RefreshMetadata,
    RequestWritten,
    ResponseReceived,
    Send,
    TransactionEnded,
    TransactionFailed,
    Wake,
)
from producer_core.engine.core.ledger import Ledger
from producer_core.engine.core.producer import Producer, ProducerConfig
from producer_core.engine.core.sender import Sender, SenderConfig
from producer_core.engine.core.transactions import TransactionConfig, Transactions
from producer_core.engine.modes import make_policy
from producer_core.engine.transport.txn_rpc import TransactionFenced
from producer_core.errors import BrokerError
from producer_core.results.metrics import RunMetrics, TopicMetrics

UNKNOWN_PRODUCER_ID = 59
PRODUCER_FENCED = 90


@dataclass
class Rig:
    """A Producer of mode partition over 4 partitions (leaders 1, 1, 2, 2), idempotent,
    with producer id 7 epoch 0, and the commands it gave, in order."""

    producer: Producer
    commands: list[Command] = field(default_factory=list)
    message_id: int = 0

    @classmethod
    def build(cls, transactional: bool = False, abort_every: int = 0,
              delivery_timeout_ms: int = 2000, opened: bool = True) -> Rig:
        settings = build_settings({"linger.ms": "0", "retry.backoff.ms": "10",
                                   "delivery.timeout.ms": str(delivery_timeout_ms),
                                   "request.timeout.ms": "1000"})
        slots = [TopicPartition("t", p) for p in range(4)]
        accumulator = Accumulator(slots, 16384)
        leaders = [1, 1, 2, 2]
        policy = make_policy("partition", accumulator, leaders, settings)
        sender = Sender(slots, SenderConfig(
            acks=-1, idempotent=True, retries=1_000, retry_backoff_s=0.01,
            request_timeout_s=1.0, delivery_timeout_s=delivery_timeout_ms / 1000,
            max_in_flight=5, transactional=transactional))
        if opened:  # else the test opens the session itself (`Producer.open`)
            sender.on_producer_id(7, 0)
        metrics = RunMetrics()
        metrics.topics["t"] = TopicMetrics()
        txn = None
        if transactional:
            txn = Transactions(TransactionConfig("tx", 1.0, abort_every, timeout_ms=9000))
            txn.begin(0.0)
        producer = Producer(
            slots, leaders, accumulator, policy, sender, Ledger(metrics, slots),
            ProducerConfig(acks=-1, retry_backoff_s=0.01,
                           delivery_timeout_s=delivery_timeout_ms / 1000,
                           request_timeout_ms=1000, idempotent=True),
            txn=txn, brokers={1, 2})
        return cls(producer)

    @property
    def metrics(self) -> RunMetrics:
        return self.producer.ledger.metrics

    def append(self, slot: int, now: float, count: int = 1) -> None:
        for _ in range(count):
            event = self.producer.accumulator.append(slot, self.message_id, None, b"v" * 10,
                                                     now, now, 0)
            self.message_id += 1
            if event:
                self.producer.policy.on_append(slot, event, now)

    def tick(self, now: float) -> list[Command]:
        """What the shell does each pass: expire, (transactions) add partitions, send."""
        out = self.producer.expire(now) + self.producer.track_partitions()
        out += self.producer.send_ready(now)
        for command in out:
            if isinstance(command, Send):  # every write succeeds
                self.producer.handle(RequestWritten(command.request_id), now)
        self.commands.extend(out)
        return out

    def answer(self, send: Send, now: float, code: int = 0) -> list[Command]:
        topics = [(topic, [(partition, code, 0 if code == 0 else -1, -1, 0)
                           for partition, _ in parts]) for topic, parts in send.topics]
        out = self.producer.handle(ResponseReceived(send.request_id, topics), now)
        self.commands.extend(out)
        return out


def sends(commands: list[Command]) -> list[Send]:
    return [c for c in commands if isinstance(c, Send)]


def only(commands: list[Command], kind: type) -> list:
    return [c for c in commands if isinstance(c, kind)]


# ------------------------------------------------------------------ metadata
def test_metadata_missing_partitions_is_asked_again_after_the_backoff() -> None:
    rig = Rig.build()
    rig.append(0, now=0.0)
    [send] = sends(rig.tick(0.0))
    rig.answer(send, 0.002, code=6)  # NOT_LEADER_OR_FOLLOWER: re-read the leaders
    [refresh] = only(rig.commands, RefreshMetadata)
    assert refresh == RefreshMetadata()
    rig.producer.handle(MetadataUpdated([2, 1, 2], frozenset({1, 2})), 0.003)
    assert rig.producer.leaders == [1, 1, 2, 2]  # three of four partitions: not taken
    early = rig.tick(0.0125)
    assert only(early, RefreshMetadata) == []  # asked again after retry.backoff.ms
    assert only(rig.tick(0.0131), RefreshMetadata) == [RefreshMetadata()]
    rig.producer.handle(MetadataUpdated([2, 2, 1, 1], frozenset({1, 2, 3})), 0.014)
    assert rig.producer.leaders == [2, 2, 1, 1] and rig.producer.brokers == {1, 2, 3}
    for send in sends(early + rig.tick(0.02)):
        rig.answer(send, 0.022)
    assert rig.metrics.messages_acked == 1


# ---------------------------------------------------------------- the session
def test_an_idempotent_session_opens_with_a_producer_id_before_any_send() -> None:
    rig = Rig.build(opened=False)
    assert rig.producer.open() == [InitProducerId()]
    assert not rig.producer.ready
    rig.append(0, now=0.0)
    assert sends(rig.tick(0.0)) == []  # no producer id yet: nothing goes
    assert Wake() in rig.producer.handle(ProducerIdAssigned(40, 2), 0.001)
    assert rig.producer.ready and rig.producer.fatal is None
    [send] = sends(rig.tick(0.001))
    rig.answer(send, 0.003)
    assert rig.metrics.messages_acked == 1
    assert (rig.producer.sender.id.producer_id, rig.producer.sender.id.epoch) == (40, 2)


def test_a_transactional_session_finds_its_coordinator_then_asks_it_for_an_id() -> None:
    rig = Rig.build(transactional=True, opened=False)
    assert rig.producer.open() == [FindCoordinator("tx")]
    assert rig.producer.handle(CoordinatorFound(3), 0.002) == [
        InitProducerId(transactional_id="tx", transaction_timeout_ms=9000)]
    assert not rig.producer.ready
    rig.producer.handle(ProducerIdAssigned(41, 5), 0.004)
    assert rig.producer.ready
    rig.append(1, now=0.005)
    [add] = only(rig.tick(0.005), AddPartitions)
    assert add == AddPartitions([("t", 1)], 41, 5)  # under the coordinator's id and epoch


def test_a_plain_session_is_open_at_once() -> None:
    rig = Rig.build(opened=False)
    rig.producer.config.idempotent = False
    assert rig.producer.open() == [] and rig.producer.ready


@pytest.mark.parametrize(("event", "message"), [
    (ProducerIdFailed("InitProducerId was refused: ClusterAuthorizationFailedError.",
                      refused=True),
     "InitProducerId was refused: ClusterAuthorizationFailedError."),
    (ProducerIdFailed("connection_lost", refused=False),
     "InitProducerId got no answer (connection_lost): check that the brokers are up"),
])
def test_a_session_that_gets_no_producer_id_is_fatal_not_retried(event: ProducerIdFailed,
                                                                 message: str) -> None:
    rig = Rig.build(opened=False)
    rig.producer.open()
    assert rig.producer.handle(event, 0.01) == [Wake()]
    assert rig.producer.fatal is not None and str(rig.producer.fatal).startswith(message)
    assert not rig.producer.ready
    assert rig.producer.next_wakeup() is None  # nothing is asked again


def test_a_refused_find_coordinator_is_fatal() -> None:
    rig = Rig.build(transactional=True, opened=False)
    rig.producer.open()
    error = BrokerError("FindCoordinator for transactional.id='tx' was refused: X.")
    assert rig.producer.handle(TransactionFailed(error), 0.01) == [Wake()]
    assert rig.producer.fatal is error and not rig.producer.ready


# ------------------------------------------------------------ producer-id recovery
def _needs_bump(rig: Rig) -> None:
    """One request answered UNKNOWN_PRODUCER_ID: the sender wants a new epoch."""
    rig.append(0, now=0.0)
    [send] = sends(rig.tick(0.0))
    assert rig.answer(send, 0.002, UNKNOWN_PRODUCER_ID) == []  # retried after the backoff


def test_unknown_producer_id_bumps_the_epoch_and_resends_under_it() -> None:
    rig = Rig.build()
    _needs_bump(rig)
    commands = rig.tick(0.02)  # the retry is due, nothing in flight: ask for a new epoch
    assert only(commands, InitProducerId) == [InitProducerId(7, 0)]
    assert sends(commands) == []  # drained batches wait (parked) for the new epoch
    assert rig.producer.next_wakeup() is not None  # bounded by delivery.timeout.ms
    after = rig.producer.handle(ProducerIdAssigned(7, 1), 0.03)
    assert Wake() in after
    [resend] = sends(rig.tick(0.03))
    rig.answer(resend, 0.032)
    assert rig.metrics.messages_acked == 1 and rig.metrics.messages_failed == 0
    assert rig.producer.sender.id.epoch == 1 and rig.producer.sender.id.epoch_bumps == 1


def test_a_refused_bump_asks_for_a_new_id_and_a_lost_answer_is_asked_again() -> None:
    rig = Rig.build()
    _needs_bump(rig)
    rig.tick(0.02)
    refused = rig.producer.handle(ProducerIdFailed("InvalidProducerEpoch", refused=True), 0.021)
    assert refused == [InitProducerId(-1, -1)]  # Tansu cannot bump: a new producer id
    lost = rig.producer.handle(ProducerIdFailed("connection_lost", refused=False), 0.022)
    assert lost == []  # asked again after retry.backoff.ms (at least 50 ms)
    assert rig.producer.next_wakeup() == pytest.approx(0.072)
    assert only(rig.tick(0.05), InitProducerId) == []
    retry_at = rig.producer.next_wakeup()
    assert retry_at is not None
    assert only(rig.tick(retry_at), InitProducerId) == [InitProducerId(7, 0)]
    rig.producer.handle(ProducerIdAssigned(8, 0), 0.08)
    [resend] = sends(rig.tick(0.08))
    rig.answer(resend, 0.082)
    assert rig.metrics.messages_acked == 1
    assert rig.producer.sender.id.producer_id == 8


def test_producer_id_recovery_gives_up_after_delivery_timeout() -> None:
    rig = Rig.build(delivery_timeout_ms=300)
    _needs_bump(rig)
    rig.append(1, now=0.01, count=3)  # more messages wait behind the recovery
    now = 0.02
    rig.tick(now)
    asked = 1
    while rig.producer.sender.fatal is None:
        rig.producer.handle(ProducerIdFailed("connection_lost", refused=False), now)
        now = rig.producer.next_wakeup() or now + 0.05
        asked += len(only(rig.tick(now), InitProducerId))
        assert now < 1.0, "the recovery must end"
    assert 3 <= asked <= 7  # one ask per 50 ms for ~300 ms
    rig.tick(now + 0.01)
    m = rig.metrics
    assert m.messages_acked == 0
    assert m.messages_failed + m.messages_unknown == 4  # every message has its outcome
    reasons = {**m.failed_reasons, **m.unknown_reasons}
    assert any("InitProducerId failed" in r or "delivery.timeout.ms" in r for r in reasons)


# ------------------------------------------------------------------------- fencing
def test_a_fenced_producer_fails_everything_it_still_holds() -> None:
    rig = Rig.build()
    rig.append(0, now=0.0)
    rig.append(2, now=0.0)
    first, second = sends(rig.tick(0.0))
    rig.answer(first, 0.002, PRODUCER_FENCED)
    rig.append(1, now=0.003, count=2)  # queued after the fence: may never be sent
    rig.answer(second, 0.003)
    assert sends(rig.tick(0.004)) == []
    m = rig.metrics
    assert m.messages_acked == 1 and m.messages_failed == 3
    assert all("another producer has this producer id" in r for r in m.failed_reasons)
    assert only(rig.commands, InitProducerId) == []  # fencing is not recovered


# --------------------------------------------------------------------- transactions
def test_partitions_join_before_their_first_batch_then_commit() -> None:
    rig = Rig.build(transactional=True)
    rig.append(0, now=0.0)
    rig.append(2, now=0.0)
    first = rig.tick(0.0)
    [add] = only(first, AddPartitions)
    assert add == AddPartitions([("t", 0), ("t", 2)], 7, 0)
    assert sends(first) == []  # parked until the partitions are in the transaction
    assert rig.tick(0.001) == []  # one AddPartitionsToTxn at a time, nothing to send
    assert Wake() in rig.producer.handle(PartitionsAdded(), 0.002)
    batches = sends(rig.tick(0.002))
    assert sorted(p for s in batches for _, parts in s.topics for p, _ in parts) == [0, 2]
    for send in batches:
        rig.answer(send, 0.004)
    rig.producer.begin_transaction_end(1.0)
    assert rig.producer.flushing and rig.producer.idle
    assert rig.producer.finish_transaction(1.0) == [EndTransaction(True, 7, 0)]
    assert rig.producer.handle(TransactionEnded(True), 1.002) == []
    txn = rig.producer.txn
    assert txn is not None and txn.stats.committed == 1 and txn.stats.records == [2]
    assert txn.number == 2 and not txn.added  # the next transaction starts empty
    assert rig.metrics.messages_acked == 2 and rig.metrics.messages_aborted == 0


def test_an_aborted_transaction_moves_its_records_from_acknowledged_to_aborted() -> None:
    rig = Rig.build(transactional=True, abort_every=1)
    rig.append(1, now=0.0, count=3)
    rig.tick(0.0)
    rig.producer.handle(PartitionsAdded(), 0.001)
    [send] = sends(rig.tick(0.001))
    rig.answer(send, 0.003)
    rig.producer.begin_transaction_end(1.0)
    [end] = rig.producer.finish_transaction(1.0)
    assert end == EndTransaction(False, 7, 0)
    rig.producer.handle(TransactionEnded(False), 1.001)
    m = rig.metrics
    assert m.messages_acked == 0 and m.messages_aborted == 3
    assert m.topics["t"].aborted == 3 and m.topics["t"].acknowledged == 0


def test_an_empty_transaction_ends_without_end_txn() -> None:
    rig = Rig.build(transactional=True)
    rig.producer.begin_transaction_end(1.0)
    assert rig.producer.finish_transaction(1.0) == []
    assert rig.producer.txn is not None and rig.producer.txn.number == 2


def test_a_refused_add_partitions_is_fatal() -> None:
    rig = Rig.build(transactional=True)
    rig.append(0, now=0.0)
    rig.tick(0.0)
    error = BrokerError("AddPartitionsToTxn was refused: TransactionalIdAuthorizationFailed.")
    assert rig.producer.handle(TransactionFailed(error), 0.001) == [Wake()]
    assert rig.producer.fatal is error


def test_a_transactional_outcome_unknown_is_fatal_not_recovered() -> None:
    rig = Rig.build(transactional=True, delivery_timeout_ms=1500)
    rig.append(0, now=0.0)
    rig.tick(0.0)
    rig.producer.handle(PartitionsAdded(), 0.001)
    assert len(sends(rig.tick(0.001))) == 1
    # no answer within request.timeout.ms: the connection closes, the batch is retried
    assert only(rig.tick(1.01), RefreshMetadata) == [RefreshMetadata()]
    assert len(sends(rig.tick(1.02))) == 1 and rig.producer.fatal is None
    # the retry is not answered either: at delivery.timeout.ms its outcome is unknown
    rig.tick(1.51)
    m = rig.metrics
    assert m.messages_unknown == 1
    assert isinstance(rig.producer.fatal, BrokerError)
    assert "cannot be completed" in str(rig.producer.fatal)
    assert only(rig.commands, InitProducerId) == []  # no epoch bump in a transaction


def test_end_txn_waits_for_every_outcome_and_the_add_partitions_in_flight() -> None:
    rig = Rig.build(transactional=True)
    producer = rig.producer
    rig.append(0, now=0.0)
    rig.tick(0.0)
    producer.handle(PartitionsAdded(), 0.001)
    [send] = sends(rig.tick(0.001))
    producer.begin_transaction_end(0.002)
    assert producer.transaction_ending and producer.flushing
    assert producer.finish_transaction(0.002) == []  # the batch has no outcome yet
    rig.append(3, now=0.003)  # its partition is being added when the flush is done
    rig.tick(0.003)
    assert producer.adding_partitions
    rig.answer(send, 0.004)
    [late] = sends(rig.tick(0.004) + producer.handle(PartitionsAdded(), 0.005)
                   + rig.tick(0.005))
    assert producer.finish_transaction(0.005) == []  # the late batch is in flight
    rig.answer(late, 0.007)
    assert producer.finish_transaction(0.007) == [EndTransaction(True, 7, 0)]
    assert producer.finish_transaction(0.008) == []  # asked once
    assert producer.transaction_ending and not producer.flushing
    producer.handle(TransactionEnded(True), 0.010)
    assert not producer.transaction_ending
    txn = producer.txn
    assert txn is not None and txn.stats.committed == 1 and txn.stats.records == [2]
    assert txn.stats.end_txn_latencies_s == [pytest.approx(0.003)]
    assert txn.stats.end_latencies_s == [pytest.approx(0.008)]


def test_a_fenced_end_txn_is_fatal_with_the_fencing_error() -> None:
    rig = Rig.build(transactional=True)
    rig.append(0, now=0.0)
    rig.tick(0.0)
    rig.producer.handle(PartitionsAdded(), 0.001)
    [send] = sends(rig.tick(0.001))
    rig.answer(send, 0.002)
    rig.producer.begin_transaction_end(0.003)
    [end] = rig.producer.finish_transaction(0.003)
    fenced = TransactionFenced("The transactional producer was fenced (EndTxn).")
    assert rig.producer.handle(TransactionFailed(fenced), 0.005) == [Wake()]
    assert rig.producer.fatal is fenced
    assert rig.producer.transaction_ending  # never ended: the run ends with the error
    assert rig.producer.txn is not None and rig.producer.txn.stats.committed == 0
