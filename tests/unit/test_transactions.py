"""The transaction bookkeeping with synthetic time: which partitions must be added before
their batches go, when a transaction ends, whether it commits, and what results say."""

from __future__ import annotations

import pytest

from producer_core.config import ConfigError, build_settings
from producer_core.engine.core.accumulator import ProducerBatch, TopicPartition
from producer_core.engine.core.sender import Requeue, Sender, SenderConfig
from producer_core.engine.core.transactions import TransactionConfig, Transactions
from producer_core.measure.verify import check_topic, verify_document


def txns(duration_s: float = 1.0, abort_every: int = 0) -> Transactions:
    t = Transactions(TransactionConfig("tx", duration_s, abort_every))
    t.begin(0.0)
    return t


def test_partitions_join_once_and_one_add_request_at_a_time() -> None:
    t = txns()
    t.need([3, 1])
    assert t.missing([1, 2, 3]) == [1, 2, 3]
    assert t.next_add() == [1, 3]
    t.need([1, 2])  # 1 is being added: only 2 is wanted next
    assert t.next_add() is None  # one AddPartitionsToTxn in flight at a time
    assert t.on_added() == [1, 3]
    assert t.missing([1, 2, 3]) == [2]
    assert t.next_add() == [2]
    t.on_added()
    assert t.missing([1, 2, 3]) == []
    assert t.stats.add_partitions_requests == 2
    assert t.stats.partitions_added == 3


def test_a_transaction_ends_after_its_duration_and_the_next_starts_empty() -> None:
    t = txns(duration_s=0.1)
    assert not t.due(0.099)
    assert t.due(0.1)
    t.need([0])
    t.next_add()
    t.on_added()
    t.on_acknowledged(0, 40)
    t.start_end(0.1)
    assert not t.due(0.5)  # already ending
    t.on_flushed(0.12, requests=2)
    assert t.commits()
    assert t.on_ended(True, end_txn_s=0.005, now=0.125) == {}
    assert t.number == 2 and t.started == 0.125 and t.missing([0]) == [0]
    assert t.stats.committed == 1 and t.stats.records == [40]
    assert t.stats.flush_requests == 2
    assert t.stats.end_latencies_s == [pytest.approx(0.025)]


def test_every_kth_transaction_and_one_with_a_failure_abort() -> None:
    t = txns(abort_every=3)
    outcomes = []
    for n in range(1, 7):
        t.need([0])
        t.next_add()
        t.on_added()
        t.on_acknowledged(0, 10)
        if n == 5:
            t.on_failed(1)
        t.start_end(float(n))
        commit = t.commits()
        outcomes.append(commit)
        aborted = t.on_ended(commit, 0.001, float(n))
        assert aborted == ({} if commit else {0: 10})
    assert outcomes == [True, True, False, True, False, False]
    assert t.stats.committed == 3 and t.stats.aborted == 3 and t.stats.aborted_records == 30


def test_an_empty_transaction_sends_no_end_txn_and_is_not_counted() -> None:
    t = txns()
    t.start_end(1.0)
    assert t.empty
    t.on_ended(True, 0.0, 1.0)
    doc = t.as_dict()
    assert doc["committed"] == 0 and doc["control_requests"]["end_txn"] == 0


def test_results_object() -> None:
    t = txns()
    for n in range(1, 4):
        t.need([0, 1])
        t.next_add()
        t.on_added()
        t.on_acknowledged(0, 100 * n)
        t.start_end(float(n))
        t.on_ended(True, 0.002, n + 0.01 * n)
    doc = t.as_dict()
    assert doc["committed"] == 3
    assert doc["records_per_transaction"] == {"mean": 200.0, "min": 100, "max": 300}
    assert doc["commit_latency"]["max_ms"] == pytest.approx(30.0)
    assert doc["control_requests"] == {"add_partitions_to_txn": 3, "end_txn": 3}
    # the requests actually sent, retries included, when the coordinator counted them
    sent = t.as_dict({"AddPartitionsToTxn": 5, "EndTxn": 4, "FindCoordinator": 1,
                      "InitProducerId": 1})
    assert sent["control_requests"] == {"add_partitions_to_txn": 5, "end_txn": 4,
                                        "find_coordinator": 1, "init_producer_id": 1}


def _batch(slot: int, records: int = 1) -> ProducerBatch:
    from producer_core.engine.core.accumulator import Accumulator

    acc = Accumulator([TopicPartition("t", 0), TopicPartition("t", 1)], 1024)
    for i in range(records):
        acc.append(slot, i, None, b"x" * 10, 0.0, 0.0, 0)
    return acc.pop_head(slot, 0.0)


def test_parked_batches_wait_for_their_partition_and_come_back_in_order() -> None:
    sender = Sender([TopicPartition("t", 0), TopicPartition("t", 1)], SenderConfig(
        acks=-1, idempotent=True, retries=5, retry_backoff_s=0.1, request_timeout_s=30,
        delivery_timeout_s=120, max_in_flight=5, transactional=True))
    sender.on_producer_id(7, 0)
    first, second, other = _batch(0), _batch(0), _batch(1)
    sender.park([first, second, other])
    assert sender.pending == 3
    back = sender.unpark({0})
    assert [a.batch for a in back if isinstance(a, Requeue)] == [first, second]
    assert first.order < second.order
    assert sender.parked == [other]
    outgoing, _ = sender.build(0, [first], 1.0)
    assert outgoing is not None
    header = first.seal()
    assert int.from_bytes(header[21:23], "big") & 0x10  # isTransactional attribute


def test_settings() -> None:
    settings = build_settings([("transactional.id", "a")])
    assert settings.transactional_id == "a" and settings.idempotent
    assert build_settings([]).transactional_id is None
    with pytest.raises(ConfigError, match="needs idempotence"):
        build_settings([("transactional.id", "a"), ("enable.idempotence", "false")])
    with pytest.raises(ConfigError, match="acks=all"):
        build_settings([("transactional.id", "a"), ("acks", "1")])
    with pytest.raises(ConfigError, match="needs -X transactional.id"):
        build_settings([("transaction.abort.every", "2")])
    with pytest.raises(ConfigError, match="librdkafka"):
        build_settings([("transactional.id", "a")], mode="librdkafka")


def test_verify_flags_visible_aborted_records() -> None:
    check = check_topic([0, 1, 2], {0: [0, 1, 2, 5]}, aborted=[4, 5])
    assert check.aborted_visible == 1 and check.unacknowledged_found == 1
    doc = verify_document({"t": check}, True, True, 0.1, transactional=True)
    assert doc["aborted_visible"] == 1
    assert doc["problems"] == ["1 records of aborted transactions visible to read_committed"]
    clean = verify_document({"t": check_topic([0], {0: [0]}, aborted=[1])}, True, True, 0.1,
                            transactional=True)
    assert clean["problems"] == []
