"""Mode kafka-java against real brokers: the Java producer on kbatch's workload, and the
guard that keeps mode java making the Java producer's decisions (a trace replay).

Its Produce request count (the driver's wrapped KafkaClient) must agree with the frames a
wire proxy saw, every acknowledged message must be in the topic where the driver said,
and its results must validate against the schema."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
import time
from collections.abc import Iterator

import jsonschema
import pytest

from producer_core.analysis.compare import parse_mode_configs
from producer_core.analysis.trace_replay import replay
from producer_core.brokers.embedded import EmbeddedBroker
from producer_core.config import build_settings
from producer_core.engine.core.accumulator import TopicPartition
from producer_core.engine.core.linger.java_policy import java_metadata_order
from producer_core.engine.drivers.engine import Delivery, run
from producer_core.engine.drivers.kafka_java.driver import KAFKA_CLIENTS_VERSION
from producer_core.engine.drivers.kafka_java.run import run_traced
from producer_core.errors import BrokerError
from producer_core.results.results_io import add_facts, results_schema, validate_document
from producer_core.workload.workload import Workload
from tests.client_checks import (
    all_acknowledged,
    assert_read_back_where_reported,
    assert_same_partitions,
)
from tests.kafka_fixtures import fresh_topic, own_embedded_broker
from tests.readback import read_all
from tests.wire_proxy import produce_frames_of

pytestmark = pytest.mark.broker


def test_kafka_java_counts_match_the_wire_and_every_ack_reads_back(counted_broker):
    broker, proxy = counted_broker
    workload = Workload(topic="kj-wire", partitions=12, rate=3000, duration_s=2.0, keys=40)
    settings = build_settings({"linger.ms": "20", "acks": "all"}.items(), mode="kafka-java")
    deliveries: list[Delivery] = []
    results = run(workload, settings, "kafka-java", proxy.address, deliveries=deliveries)
    doc = results.to_dict()
    total = workload.total_messages
    assert doc["mode"] == "kafka-java"
    assert doc["messages"] == all_acknowledged(total)
    # the driver's count of Produce requests is the wire's, per request what it carried
    assert doc["kafka_java"]["request_counting"] == "sender-client"
    assert produce_frames_of(results) == proxy.produce_requests  # (priming on it too)
    assert results.requests_sent > 20
    assert sum(doc["requests_by_broker"].values()) == results.requests_sent
    assert doc["records_sent"] == total and doc["bytes_sent"] > total * 100
    assert 1 < doc["partitions_per_request"]["max"] <= 12  # Java drains a broker's partitions
    assert doc["msgs_per_req"] == pytest.approx(total / results.requests_sent, abs=1e-3)
    # the client's own node metrics count every request type: at least the Produce ones
    assert sum(doc["kafka_java"]["node_request_total"].values()) >= results.requests_sent
    latency = doc["latency"]
    assert latency["count"] == total and doc["rtt"]["count"] == results.requests_sent
    assert 1.0 < latency["p50_ms"] <= latency["p99_ms"] <= latency["max_ms"] < 10_000
    assert doc["settings"]["linger.ms"] == 20
    assert doc["kafka_java"]["properties"]["acks"] == "all"
    add_facts(doc, embedded=True)
    document = json.loads(json.dumps(doc))
    validate_document(document)
    jsonschema.validate(document, results_schema())

    assert_read_back_where_reported(proxy.address, workload.topic, 12, 40, total, deliveries)


def test_kafka_java_sends_the_engines_messages_to_the_same_partitions(broker_bootstrap):
    assert_same_partitions(broker_bootstrap.bootstrap, "java", "kafka-java")


def test_kafka_java_acks_zero_is_sent_unacknowledged_or_a_clear_error(broker_bootstrap):
    # Apache Kafka does not answer acks=0 Produce requests: every message is written and
    # unacknowledged. Tansu answers them, which breaks the Java client's NetworkClient (it
    # loses the completions and flush() would wait delivery.timeout.ms): kbatch stops the
    # run at once and says why.
    topic = fresh_topic("kj-acks0")
    workload = Workload(topic=topic, partitions=3, rate=1000, duration_s=2.0, keys=40)
    settings = build_settings({"acks": "0", "enable.idempotence": "false"}.items(),
                              mode="kafka-java")
    deliveries: list[Delivery] = []
    began = time.monotonic()
    if broker_bootstrap.implementation == "tansu":
        with pytest.raises(BrokerError, match="answered Produce requests sent with acks=0"):
            run(workload, settings, "kafka-java", broker_bootstrap.bootstrap)
        assert time.monotonic() - began < 60  # not delivery.timeout.ms (120 s) + 60 s
        return
    results = run(workload, settings, "kafka-java", broker_bootstrap.bootstrap,
                  deliveries=deliveries)
    m = results.metrics
    total = workload.total_messages
    assert m.messages_sent_unacknowledged == total == m.messages_generated
    assert m.messages_acked == 0 and not deliveries and results.requests_sent > 0
    found = asyncio.run(read_all(broker_bootstrap.bootstrap, topic, 3, total, timeout_s=20))
    assert sum(len(records) for records in found.values()) == total


@pytest.fixture()
def own_broker() -> Iterator[EmbeddedBroker]:
    """A broker of this test alone: pausing it must not disturb any other test."""
    with own_embedded_broker() as broker:
        yield broker


def test_kafka_java_settles_a_hung_brokers_messages_as_the_engine_does(own_broker,
                                                                       monkeypatch):
    # the broker stops answering 1 s after the first acknowledgement: the batches in Produce
    # requests then may be in the topic (unknown), those never sent are not (failed).
    # Java 4.x re-bootstraps when its only broker is unreachable, forgetting the topic, and
    # then blocks every send() for max.block.ms; recovery "none" keeps this run short.
    from producer_core.engine.drivers.kafka_java import run as kafka_java

    properties = kafka_java.java_properties
    monkeypatch.setattr(kafka_java, "java_properties", lambda values: {
        **properties(values), "metadata.recovery.strategy": "none"})
    pid = own_broker.pid
    assert pid is not None
    workload = Workload(topic="kj-hung", partitions=6, rate=2000, duration_s=4.0, keys=40)
    settings = build_settings({"delivery.timeout.ms": "3000", "request.timeout.ms": "2000",
                               "linger.ms": "5"}.items(), mode="kafka-java")
    deliveries: list[Delivery] = []
    done = threading.Event()

    def hang_once_acknowledging() -> None:  # the JVM's start takes a varying while
        while not deliveries and not done.wait(0.01):
            pass
        if not done.wait(1.0):
            os.kill(pid, signal.SIGSTOP)

    hanger = threading.Thread(target=hang_once_acknowledging, daemon=True)
    hanger.start()
    try:
        results = run(workload, settings, "kafka-java", own_broker.bootstrap,
                      deliveries=deliveries)
    finally:
        done.set()
        hanger.join()
        os.kill(pid, signal.SIGCONT)
    m = results.metrics
    assert m.messages_generated == workload.total_messages == m.settled()
    assert m.messages_acked > 0 and m.messages_unknown > 0 and m.messages_failed > 0
    assert set(m.unknown_reasons) <= {"TimeoutException", "NetworkException"}
    doc = results.to_dict()
    assert doc["messages"]["unknown"] == m.messages_unknown
    topic = doc["topics"]["kj-hung"]["messages"]
    assert (topic["acknowledged"], topic["failed"], topic["unknown"]) == (
        m.messages_acked, m.messages_failed, m.messages_unknown)
    validate_document(json.loads(json.dumps(doc)))
    found = asyncio.run(read_all(own_broker.bootstrap, "kj-hung", 6, m.messages_generated,
                                 timeout_s=20))
    stored = {mid for records in found.values() for _, mid, _ in records}
    acknowledged = {mid for d in deliveries for mid in d.message_ids}
    assert len(acknowledged) == m.messages_acked
    assert acknowledged <= stored, "an acknowledged message is missing"
    # what is in the topic beyond the acknowledged was reported unknown, never failed
    assert len(stored - acknowledged) <= m.messages_unknown



def test_the_java_emulation_makes_the_java_producers_decisions(tansu_broker):
    """The guard of mode java (issue 42): the real Java producer's trace, replayed through
    mode java's policy in synthetic time, request by request. Whole-run totals of two runs
    follow how fast the machine ran each (a fresh machine's JVM batched 10% more); the
    replay gives the emulation the client's own timing, so its verdict does not. Whole-run
    figures are printed by benchmarks/fidelity.py."""
    workload = Workload(topic=fresh_topic("fidelity-java"), partitions=64, rate=2000,
                        duration_s=6, message_size=100)
    runs = {r.mode: r.settings for r in parse_mode_configs(
        ["kafka-java", "java"], [("acks", "all")], [], linger_ms=5)}
    results, trace = asyncio.run(run_traced(workload, runs["kafka-java"],
                                            tansu_broker.bootstrap))
    assert results.to_dict()["messages"]["acknowledged"] == workload.total_messages
    # the trace holds every message and request the client reported
    assert len(trace.start_ns) == len(trace.slots) == workload.total_messages
    assert len(trace.requests) == results.requests_sent
    assert sum(r.records for r in trace.requests) == workload.total_messages
    # the client walks a node's partitions in the order mode java computes for it
    order = java_metadata_order([TopicPartition(workload.topic, p) for p in range(64)])
    assert trace.drain_order and all(o == order for o in trace.drain_order.values())
    report = replay(trace, "java", runs["java"], workload.topic_specs())
    assert report.compared >= results.requests_sent - report.retried > 0
    assert report.share_identical >= 0.99, "\n".join(report.lines())
    # (how soon after mode java's ready time the client sent depends on this machine's
    # speed: tests/unit/test_trace_replay.py checks it on a recorded trace instead)


def test_a_cancelled_run_leaves_no_java_process(tansu_broker):
    from producer_core.engine.drivers.kafka_java import run as kafka_java

    started: list[kafka_java.KafkaJavaRun] = []
    original = kafka_java.KafkaJavaRun.run

    def tracked(self: kafka_java.KafkaJavaRun) -> object:
        started.append(self)
        return original(self)

    async def cancel_after(seconds: float) -> None:
        workload = Workload(topic=fresh_topic("kj-cancel"), partitions=4, rate=500,
                            duration_s=60)
        task = asyncio.create_task(kafka_java.run_async(
            workload, build_settings(mode="kafka-java"), "kafka-java", tansu_broker.bootstrap))
        await asyncio.sleep(seconds)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kafka_java.KafkaJavaRun, "run", tracked)
        asyncio.run(cancel_after(6.0))
    proc = started[0]._proc
    assert proc is not None
    proc.wait(timeout=15)  # killed, not left running
    assert proc.returncode is not None


def test_jars_are_fetched_and_the_driver_compiled_once_per_source(tmp_path, monkeypatch):
    from producer_core.engine.drivers.kafka_java import driver

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    messages: list[str] = []
    first = driver.prepare(progress=messages.append)
    assert any(f"Fetching kafka-clients {KAFKA_CLIENTS_VERSION}" in m for m in messages)
    assert any("Compiling" in m for m in messages)
    libs = tmp_path / "kbatch" / f"kafka-clients-{KAFKA_CLIENTS_VERSION}" / "libs"
    assert (libs / f"kafka-clients-{KAFKA_CLIENTS_VERSION}.jar").is_file()
    assert any(libs.glob("HdrHistogram-*.jar"))
    messages.clear()
    assert driver.prepare(progress=messages.append) == first and messages == []  # cached
    # an edited driver is a different build, compiled beside the first
    original = driver.source_text()
    monkeypatch.setattr(driver, "source_text", lambda: original + "\n// edited\n")
    edited = driver.prepare(progress=messages.append)
    assert edited.classpath != first.classpath and any("Compiling" in m for m in messages)
    builds = list((tmp_path / "kbatch" / "kafka-java-driver").iterdir())
    assert len(builds) == 2 and all((b / "KbatchProducerDriver.class").is_file()
                                    for b in builds)


@pytest.mark.parametrize("overrides,expected", [
    ({}, True),                                   # Java's default since 3.0
    ({"enable.idempotence": "false"}, False),
    ({"acks": "1"}, False),                       # kbatch and Java both turn it off
])
def test_kafka_java_reports_the_producers_own_idempotence(broker_bootstrap, overrides,
                                                          expected):
    """The results carry what the Java producer ran with (its TransactionManager), so
    --verify judges duplicates and reorders by the truth (issue 35)."""
    workload = Workload(topic=fresh_topic("kj-idem"), partitions=3, rate=500, duration_s=0.5)
    settings = build_settings(overrides.items(), mode="kafka-java")
    doc = run(workload, settings, "kafka-java", broker_bootstrap.bootstrap).to_dict()
    assert doc["messages"]["acknowledged"] == workload.total_messages
    assert doc["idempotence"]["enabled"] is expected
    if expected:
        assert isinstance(doc["idempotence"]["producer_id"], int)
        assert doc["idempotence"]["producer_id"] >= 0 and doc["idempotence"]["producer_epoch"] >= 0
    else:
        assert "producer_id" not in doc["idempotence"]
    validate_document(doc)
