"""The cheap send path (issue 23) writes the same bytes as the general one.

- an idempotent batch built with its producer id and sequence equals the built batch
  patched and re-checksummed (the path retries and transactions take);
- an uncompressed batch's builder size is its built size (so building can wait until
  the first send), while a compressed batch is built when it leaves the queue;
- `produce_wire` encodes requests and decodes responses as aiokafka does.
"""

from __future__ import annotations

import struct

import pytest
from aiokafka.protocol.produce import ProduceRequest as AiokafkaProduceRequest
from aiokafka.protocol.produce import (
    ProduceResponse_v3,
    ProduceResponse_v5,
    ProduceResponse_v7,
)
from aiokafka.record.default_records import DefaultRecordBatch

from producer_core.engine.core.accumulator import Accumulator, TopicPartition, drain_request
from producer_core.engine.transport.produce_wire import ProduceRequest, decode_produce_response

SLOTS = [TopicPartition("t", 0), TopicPartition("t", 1)]
VERSIONS_V7 = {0: (0, 7)}


def _filled(records: int, compression: str = "none", keyed: bool = False) -> Accumulator:
    acc = Accumulator(SLOTS, 1 << 20, compression)
    for i in range(records):
        key = b"k%d" % i if keyed else None
        acc.append(0, i, key, b"value-%d" % i * 3, float(i), 0.0, 1_700_000_000_000 + i)
    return acc


@pytest.mark.parametrize("keyed", [False, True])
@pytest.mark.parametrize("state", [(7, 0, 0), (123456789, 3, 41), (1, 32767, 2**31 - 1)])
def test_built_with_state_equals_patched(keyed: bool, state: tuple[int, int, int]) -> None:
    built = _filled(5, keyed=keyed).pop_head(0, 0.0)
    patched = _filled(5, keyed=keyed).pop_head(0, 0.0)
    patched.seal()  # already built: the header is patched and the CRC recomputed
    built.stamp(*state)
    patched.stamp(*state)
    assert built.payload == patched.payload
    assert (built.producer_id, built.epoch, built.sequence) == state
    batch = DefaultRecordBatch(bytearray(built.payload))
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == state
    assert batch.validate_crc()
    assert [r.value for r in batch] == [b"value-%d" % i * 3 for i in range(5)]


def test_restamp_after_epoch_bump_rewrites_the_built_batch() -> None:
    batch = _filled(3).pop_head(0, 0.0)
    batch.stamp(9, 0, 10)
    batch.stamp(9, 1, 0)  # new epoch: sequences start again
    record_batch = DefaultRecordBatch(bytearray(batch.payload))
    assert (record_batch.producer_epoch, record_batch.base_sequence) == (1, 0)
    assert record_batch.validate_crc()


def test_transactional_stamp_sets_the_attribute_bit() -> None:
    batch = _filled(3).pop_head(0, 0.0)
    batch.stamp(9, 0, 0, transactional=True)
    record_batch = DefaultRecordBatch(bytearray(batch.payload))
    assert record_batch.is_transactional and record_batch.validate_crc()


@pytest.mark.parametrize("records", [1, 17, 300])
def test_uncompressed_builder_size_is_built_size(records: int) -> None:
    acc = _filled(records, keyed=True)
    head = acc.head(0)
    assert head is not None
    estimated = head.size_bytes()
    batch = acc.pop_head(0, 0.0)
    assert batch.payload is None and batch.closed  # built at its first send
    assert batch.size_bytes() == estimated == len(batch.seal())


def test_compressed_batch_is_built_when_it_leaves_the_queue() -> None:
    acc = _filled(50, compression="gzip")
    batch = acc.pop_head(0, 0.0)
    assert batch.payload is not None and batch.size_bytes() == len(batch.payload)


def test_popped_batch_takes_no_more_records_after_requeue() -> None:
    acc = _filled(2)
    batch = acc.pop_head(0, 0.0)
    acc.requeue_front(batch)
    acc.append(0, 99, None, b"later", 0.0, 0.0, 0)
    assert [len(b.ids) for b in acc.queues[0]] == [2, 1]


def _topics() -> list[tuple[str, list[tuple[int, bytes]]]]:
    acc = Accumulator([TopicPartition(t, p) for t in ("a", "bé") for p in range(3)], 1 << 20)
    for slot in range(6):
        for i in range(slot + 1):
            acc.append(slot, i, None, b"v%d" % i, 0.0, 0.0, 5)
    batches = drain_request(acc, list(range(6)), 0.0, 1 << 20, None)
    by_topic: dict[str, list[tuple[int, bytes]]] = {}
    for batch in batches:
        tp = acc.slots[batch.slot]
        by_topic.setdefault(tp.topic, []).append((tp.partition, batch.seal()))
    return list(by_topic.items())


@pytest.mark.parametrize("transactional_id", [None, "txn-1"])
@pytest.mark.parametrize("max_version", [3, 5, 7])
def test_request_bytes_equal_aiokafka(transactional_id: str | None, max_version: int) -> None:
    topics = _topics()
    versions = {0: (0, max_version)}
    ours = ProduceRequest(transactional_id, -1, 30000, topics).prepare(versions)
    theirs = AiokafkaProduceRequest(transactional_id, -1, 30000, topics).prepare(versions)
    assert ours.API_VERSION == theirs.API_VERSION == max_version
    assert ours.encode() == theirs.encode()
    header = ours.build_request_header(correlation_id=7, client_id="kbatch").encode()
    assert header == theirs.build_request_header(correlation_id=7, client_id="kbatch").encode()


def test_old_versions_use_aiokafka_encoding() -> None:
    topics = _topics()
    ours = ProduceRequest(None, 1, 1000, topics).prepare({0: (0, 2)})
    theirs = AiokafkaProduceRequest(None, 1, 1000, topics).prepare({0: (0, 2)})
    assert ours.encode() == theirs.encode()


@pytest.mark.parametrize("response_type,entries", [
    (ProduceResponse_v3, [(0, 0, 10, -1), (2, 6, -1, -1)]),
    (ProduceResponse_v5, [(0, 0, 10, -1, 0), (1, 46, 2**40, 1_700_000_000_000, 7)]),
    (ProduceResponse_v7, [(p, p % 3, p * 10, -1, 0) for p in range(1000)]),
])
def test_response_decodes_as_aiokafka(response_type: type, entries: list[tuple]) -> None:
    raw = response_type([("a", entries), ("bé", entries[:1]), ("c", [])], 250).encode()
    expected = response_type.decode(raw)
    topics, throttle = decode_produce_response(raw, response_type.API_VERSION)
    assert topics == expected.topics and throttle == expected.throttle_time_ms == 250
    request = ProduceRequest(None, -1, 1, _topics()).prepare(
        {0: (0, response_type.API_VERSION)})
    decoded = request.RESPONSE_TYPE.decode(raw)
    assert decoded.topics == expected.topics
    assert decoded.throttle_time_ms == 250
    assert isinstance(decoded, response_type)


def test_truncated_response_is_an_error() -> None:
    raw = ProduceResponse_v7([("a", [(0, 0, 1, -1, 0)])], 0).encode()
    with pytest.raises(struct.error):
        decode_produce_response(raw[:-6], 7)


class _Policy:
    def __init__(self) -> None:
        self.latencies: list[float] = []

    def on_acknowledged(self, broker: int, latencies_s: object, now: float) -> None:
        self.latencies.extend(latencies_s)  # type: ignore[call-overload]  # latencies: a sequence of floats


def _ledger(slots: list[TopicPartition], warmup_s: float, deliveries: list,
            policy: _Policy) -> object:
    """The run's outcome ledger, as the producer core builds it."""
    from producer_core.engine.core.ledger import Ledger
    from producer_core.results.metrics import RunMetrics, TopicMetrics

    metrics = RunMetrics()
    for name in ("a", "b"):
        metrics.topics[name] = TopicMetrics()
    ledger = Ledger(metrics, slots, deliveries, on_acknowledged=policy.on_acknowledged)
    ledger.warmup_until = 1.0 if warmup_s else None
    return ledger


@pytest.mark.parametrize("warmup_s", [0.0, 1.0])
def test_acknowledge_all_accounts_every_message_per_topic(warmup_s: float) -> None:
    slots = [TopicPartition("a", 0), TopicPartition("b", 0), TopicPartition("a", 1)]
    acc = Accumulator(slots, 1 << 20)
    intended = {0: [0.5, 1.5, 2.0], 1: [0.25, 3.0], 2: [1.0]}
    message_id = 0
    for slot, times in intended.items():
        for when in times:
            acc.append(slot, message_id, None, b"v", when, 0.0, 0)
            message_id += 1
    batches = [acc.pop_head(slot, 0.0) for slot in (0, 1, 2)]
    deliveries: list = []
    policy = _Policy()
    ledger = _ledger(slots, warmup_s, deliveries, policy)
    ledger.acknowledge(3, [(b, 10 * b.slot) for b in batches], 4.0)  # type: ignore[attr-defined]  # a stand-in policy

    kept = [t for t in intended[0] + intended[2] + intended[1] if not warmup_s or t >= 1.0]
    assert policy.latencies == [4.0 - t for t in kept]
    metrics = ledger.metrics  # type: ignore[attr-defined]  # the stand-in's
    assert metrics.messages_acked == 6
    assert metrics.topics["a"].acknowledged == 4 and metrics.topics["b"].acknowledged == 2
    assert metrics.latency.count == len(kept)
    a_kept = [t for t in intended[0] + intended[2] if not warmup_s or t >= 1.0]
    assert metrics.topics["a"].latency.count == len(a_kept)
    assert metrics.topics["a"].latency.percentile_ms(100) == pytest.approx(
        (4.0 - min(a_kept)) * 1000, rel=1e-3)
    assert [(d.topic, d.partition, d.base_offset, d.message_ids) for d in deliveries] == [
        ("a", 0, 0, [0, 1, 2]), ("b", 0, 10, [3, 4]), ("a", 1, 20, [5])]
