"""Mode librdkafka against the embedded broker: the real client on kbatch's workload.

Its Produce request count (from librdkafka's statistics) must agree with the Produce
frames a wire proxy saw, and its messages must land where they were sent; and mode
partition must make its decisions (a trace replay)."""

from __future__ import annotations

import asyncio

import pytest

from producer_core.analysis.trace_replay import replay, settings_from_trace
from producer_core.config import build_settings
from producer_core.engine.drivers.engine import Delivery, run
from producer_core.engine.drivers.librdkafka import run_traced
from producer_core.workload.workload import Workload
from tests.client_checks import (
    all_acknowledged,
    assert_read_back_where_reported,
    assert_same_partitions,
)
from tests.kafka_fixtures import fresh_topic
from tests.readback import read_all
from tests.wire_proxy import produce_frames_of

pytestmark = pytest.mark.broker


def test_librdkafka_counts_latencies_and_wire_agree(counted_broker):
    broker, proxy = counted_broker
    workload = Workload(topic="rdk-wire", partitions=12, rate=3000, duration_s=1.5, keys=40)
    settings = build_settings({"linger.ms": "20"}.items(), mode="librdkafka")
    deliveries: list[Delivery] = []
    results = run(workload, settings, "librdkafka", proxy.address, deliveries=deliveries)
    doc = results.to_dict()
    total = workload.total_messages
    assert doc["mode"] == "librdkafka"
    assert doc["messages"] == all_acknowledged(total)
    assert doc["complete"] is True and doc["idempotence"] == {"enabled": True}
    # librdkafka's own count of Produce requests is the wire's
    assert produce_frames_of(results) == proxy.produce_requests
    assert sum(doc["requests_by_broker"].values()) == results.requests_sent
    # stock librdkafka: one partition per request (librdkafka issue #1700)
    assert doc["partitions_per_request"] == {"mean": 1.0, "p50": 1.0, "max": 1.0}
    assert doc["records_sent"] == total and doc["bytes_sent"] > total * 100
    assert doc["msgs_per_req"] == pytest.approx(total / results.requests_sent, abs=1e-3)
    # 12 partitions expiring on their own every ~20 ms: many small requests
    assert results.requests_sent > 100
    latency = doc["latency"]
    assert latency["count"] == total
    assert 1.0 < latency["p50_ms"] < 200.0 and latency["p99_ms"] < 1000.0
    assert latency["p50_ms"] <= latency["p99_ms"] <= latency["max_ms"]
    assert doc["librdkafka"]["config"]["linger.ms"] == "20"
    assert doc["settings"] == {"acks": "all", "client.id": "kbatch", "linger.ms": 20,
                               "enable.idempotence": "true"}

    assert_read_back_where_reported(proxy.address, workload.topic, 12, 40, total, deliveries)


def test_librdkafka_sends_the_engines_messages_to_the_same_partitions(broker_bootstrap):
    assert_same_partitions(broker_bootstrap.bootstrap, "partition", "librdkafka")


def test_librdkafka_values_too_short_for_an_id_are_reported_per_message(tansu_broker):
    """4-byte values cannot name their message: each keeps its own callback, and every
    report still lands on its message, at the partition and offset stored."""
    workload = Workload(topic=fresh_topic("rdk-short"), partitions=4, rate=2000,
                        duration_s=0.5, message_size=4)
    deliveries: list[Delivery] = []
    results = run(workload, build_settings(mode="librdkafka"), "librdkafka",
                  tansu_broker.bootstrap, deliveries=deliveries)
    doc = results.to_dict()
    assert doc["messages"] == all_acknowledged(1000)
    assert doc["latency"]["count"] == 1000
    assert sorted(d.message_ids[0] for d in deliveries) == list(range(1000))
    found = asyncio.run(read_all(tansu_broker.bootstrap, workload.topic, 4, expected=1000))
    stored = {(partition, offset) for partition, records in found.items()
              for offset, _, _ in records}
    assert {(d.partition, d.base_offset) for d in deliveries} == stored
    assert len(stored) == 1000


def test_the_partition_emulation_makes_librdkafkas_decisions(counted_broker):
    """The guard of mode partition (issue 42): a real librdkafka run, traced from its debug
    log, replayed through mode partition's policy in synthetic time, request by request.
    Which of several ready partitions librdkafka sends first (its broker thread's round
    robin, one request per loop while a request slot is taken) follows this machine's
    timing: the guard counts those as `choice` and asks every request to be one the
    emulation made or held ready alike, never a timing comparison."""
    broker, proxy = counted_broker
    workload = Workload(topic=fresh_topic("fidelity-librdkafka"), partitions=16, rate=2000,
                        duration_s=3, message_size=100)
    settings = build_settings([("acks", "all"), ("linger.ms", "5")], mode="librdkafka")
    results, trace = asyncio.run(run_traced(workload, settings, proxy.address))
    assert results.to_dict()["messages"] == all_acknowledged(workload.total_messages)
    # the trace holds every message, and every Produce request the wire saw
    assert len(trace.start_ns) == len(trace.slots) == workload.total_messages
    assert len(trace.requests) == results.requests_sent
    assert produce_frames_of(results) == proxy.produce_requests
    assert sum(r.records for r in trace.requests) == workload.total_messages
    # librdkafka built no request before its rule (linger.ms since the first message's
    # produce()) allowed, as far as its log and the next messages tell
    assert trace.timing["built_before_rule"] == 0
    replayed = settings_from_trace(trace, "partition", [("produce.request.max.partitions", "1")])
    report = replay(trace, "partition", replayed, workload.topic_specs())
    assert report.compared == len(trace.requests) - report.retried > 0
    assert report.share_same_rule >= 0.99, "\n".join(report.lines())
    # a linger one millisecond stricter than librdkafka's would not have sent them
    stricter = settings_from_trace(trace, "partition", [
        ("produce.request.max.partitions", "1"), ("linger.ms", "6")])
    assert replay(trace, "partition", stricter).share_same_rule < 0.5
