"""Mode librdkafka's delivery reports, with synthetic time and a recording producer.

Every message produced gets the same callback object (nothing per message for Python's
garbage collector to track), and a report names its message by the id its value
carries: latency from that message's intended time, counts to its topic, whatever order
the reports come in. Values too short to carry the id keep a callback per message."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from producer_core.config import build_settings
from producer_core.engine.drivers.generator import ClientBatching, Generator
from producer_core.engine.drivers.librdkafka import LibrdkafkaRun, ProduceSink
from producer_core.workload.payload import PayloadSpec
from producer_core.workload.workload import (
    RateSpec,
    SizeSpec,
    TopicSpec,
    Workload,
    values_carry_ids,
)


@dataclass
class Produced:
    topic: str
    value: bytes
    partition: int
    callback: object


class RecordingProducer:
    """confluent-kafka's `produce` signature; keeps what it was given."""

    def __init__(self) -> None:
        self.produced: list[Produced] = []

    def produce(self, topic, value, key, partition, on_delivery, timestamp, headers=None):
        self.produced.append(Produced(topic, value, partition, on_delivery))


@dataclass
class Report:
    """The parts of a delivery report's `Message` the driver reads."""

    produced: Produced
    offset_: int = 0

    def value(self) -> bytes:
        return self.produced.value

    def topic(self) -> str:
        return self.produced.topic

    def partition(self) -> int:
        return self.produced.partition

    def offset(self) -> int:
        return self.offset_


class Error:
    def __init__(self, name: str) -> None:
        self._name = name

    def name(self) -> str:
        return self._name


TWO_TOPICS = (TopicSpec("orders", 3, RateSpec("constant", 100.0)),
              TopicSpec("clicks", 2, RateSpec("constant", 50.0)))


def produce_for(workload: Workload, seconds: float) -> tuple[LibrdkafkaRun, RecordingProducer]:
    """Run the real generator into the driver's sink for `seconds` of synthetic time."""
    run = LibrdkafkaRun(workload, build_settings(mode="librdkafka"), "127.0.0.1:1")
    now = [0.0]
    run.clock = lambda: now[0]
    producer = RecordingProducer()
    generator = Generator(workload, run.first_slots, ProduceSink(run, producer),  # type: ignore[arg-type]  # a sink, duck-typed
                          ClientBatching(), run.metrics, run.partitioning)  # type: ignore[arg-type]  # a stand-in policy
    generator.begin(0.0)
    while now[0] < seconds:
        now[0] += 0.01
        generator.generate(now[0])
    return run, producer


def test_one_callback_object_and_reports_in_any_order_name_their_message():
    workload = Workload(topics=TWO_TOPICS, duration_s=1.0)
    run, producer = produce_for(workload, 1.0)
    produced = producer.produced
    assert len(produced) == 150
    assert len({id(p.callback) for p in produced}) == 1  # the same object every time
    assert len(run.in_flight) == 150

    # reported 2 s after the run's start, out of order
    reports = list(produced)
    random.Random(7).shuffle(reports)
    run.clock = lambda: 2.0
    failed = reports[:5]
    for p in failed:
        p.callback(Error("_MSG_TIMED_OUT" if p is failed[0] else "_INVALID_MSG"), Report(p))
    for p in reports[5:]:
        p.callback(None, Report(p))
    assert run.in_flight == {}

    # each acknowledged message's latency is 2 s minus its own intended time: message k
    # of a 100/s topic is intended at k/100 s
    latencies = run._latencies
    for index, spec in enumerate(TWO_TOPICS):
        rate = spec.rate.rate
        mine = [p for p in reports[5:] if p.topic == spec.name]
        ids = sorted(int.from_bytes(p.value[:8], "big") & ((1 << 40) - 1) for p in mine)
        expected = sorted(2.0 - seq / rate for seq in ids)
        assert sorted(latencies[index]) == pytest.approx(expected)
    topics = run.metrics.topics
    for spec in TWO_TOPICS:
        n_failed = sum(1 for p in failed if p.topic == spec.name)
        timed_out = sum(1 for p in failed[:1] if p.topic == spec.name)
        assert topics[spec.name].acknowledged == spec.rate.rate - n_failed
        assert topics[spec.name].failed == n_failed - timed_out
        assert topics[spec.name].unknown == timed_out
    assert run.metrics.messages_acked == 145

    run._collect()
    assert run.metrics.latency.count == 145
    assert sum(topics[s.name].latency.count for s in TWO_TOPICS) == 145


def test_a_report_of_a_message_not_in_flight_is_counted_not_recorded():
    run, producer = produce_for(Workload(topic="t", partitions=2, rate=100,
                                            duration_s=0.1), 0.1)
    first = producer.produced[0]
    first.callback(None, Report(first))
    first.callback(None, Report(first))  # the same message again: librdkafka never does
    assert run.metrics.messages_acked == 1
    assert run._errors == {"delivery report of an unknown message": 1}


def test_a_message_refused_at_once_leaves_nothing_in_flight():
    from confluent_kafka import KafkaError, KafkaException

    class Refusing(RecordingProducer):
        def produce(self, topic, value, key, partition, on_delivery, timestamp, headers=None):
            raise KafkaException(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE))

    workload = Workload(topic="t", partitions=2, rate=100, duration_s=0.1)
    run = LibrdkafkaRun(workload, build_settings(mode="librdkafka"), "127.0.0.1:1")
    generator = Generator(workload, run.first_slots, ProduceSink(run, Refusing()),  # type: ignore[arg-type]  # a sink, duck-typed
                          ClientBatching(), run.metrics, run.partitioning)  # type: ignore[arg-type]  # a stand-in policy
    generator.begin(0.0)
    generator.generate(0.2)
    assert run.metrics.messages_failed == 10 and run.in_flight == {}


def test_short_values_keep_a_callback_per_message():
    workload = Workload(topic="t", partitions=2, rate=100, duration_s=0.1, message_size=4)
    run, producer = produce_for(workload, 0.1)
    assert run.in_flight is None
    produced = producer.produced
    assert len({id(p.callback) for p in produced}) == len(produced) == 10
    run.clock = lambda: 1.0
    for p in reversed(produced):
        p.callback(None, Report(p))
    assert sorted(run._latencies[0]) == pytest.approx(sorted(1.0 - k / 100 for k in range(10)))
    assert run.metrics.topics["t"].acknowledged == 10


@pytest.mark.parametrize(("spec", "carries"), [
    (TopicSpec("t", 1, sizes=SizeSpec("fixed", 100)), True),
    (TopicSpec("t", 1, sizes=SizeSpec("fixed", 8)), True),
    (TopicSpec("t", 1, sizes=SizeSpec("fixed", 7)), False),
    (TopicSpec("t", 1, sizes=SizeSpec("fixed", 0)), False),
    (TopicSpec("t", 1, sizes=SizeSpec("uniform", minimum=8, maximum=50)), True),
    (TopicSpec("t", 1, sizes=SizeSpec("uniform", minimum=4, maximum=50)), False),
    (TopicSpec("t", 1, sizes=SizeSpec("weighted", sizes=(10, 200), weights=(1, 1))), True),
    (TopicSpec("t", 1, sizes=SizeSpec("weighted", sizes=(3, 200), weights=(1, 1))), False),
    (TopicSpec("t", 1, sizes=SizeSpec("fixed", 3), payload=PayloadSpec("file", file="x")),
     True),
])
def test_which_values_carry_their_whole_id(spec, carries):
    assert values_carry_ids(spec) is carries
