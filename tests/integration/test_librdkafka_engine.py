"""Mode librdkafka against the embedded broker: the real client on kbatch's workload.

Its Produce request count (from librdkafka's statistics) must agree with the Produce
frames a wire proxy saw, and its messages must land where they were sent."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import replace

import pytest

from producer_core.config import build_settings
from producer_core.engine import Delivery, run
from producer_core.partitioner import key_table
from producer_core.workload import Workload
from tests.kafka_fixtures import fresh_topic
from tests.readback import read_all

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
    assert doc["messages"] == {"intended": total, "sent": total, "acknowledged": total,
                               "failed": 0, "failed_reasons": {}, "discarded": 0,
                               "discard_reasons": {}, "unknown": 0, "unknown_reasons": {},
                               "sent_unacknowledged": 0, "aborted": 0}
    assert doc["complete"] is True and doc["idempotence"] == {"enabled": True}
    # librdkafka's own count of Produce requests is the wire's
    assert results.requests_sent == proxy.produce_requests
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

    # every message is in the topic once, at the partition and offset reported, and keys
    # were partitioned exactly as the engine does (Java murmur2)
    reported = {d.message_ids[0]: (d.partition, d.base_offset) for d in deliveries}
    assert sorted(reported) == list(range(total))
    found = asyncio.run(read_all(proxy.address, workload.topic, 12, expected=total))
    stored = Counter(mid for records in found.values() for _, mid, _ in records)
    assert set(stored) == set(range(total)) and max(stored.values()) == 1
    keys, partition_of_key = key_table(40, 12)
    expected_partition = dict(zip(keys, partition_of_key, strict=True))
    for partition, records in found.items():
        for offset, message_id, key in records:
            assert reported[message_id] == (partition, offset)
            assert expected_partition[key] == partition


def test_librdkafka_sends_the_engines_messages_to_the_same_partitions(broker_bootstrap):
    bootstrap = broker_bootstrap.bootstrap
    base = Workload(topic="same", partitions=6, rate=4000, messages=800, duration_s=None,
                    keys=25, message_size=40)
    stored = {}
    for mode in ("partition", "librdkafka"):
        workload = replace(base, topic=fresh_topic(f"same-{mode}"))
        results = run(workload, build_settings(mode=mode), mode, bootstrap)
        assert results.metrics.messages_acked == 800
        found = asyncio.run(read_all(bootstrap, workload.topic, 6, expected=800))
        stored[mode] = {mid: (partition, key)
                        for partition, records in found.items() for _, mid, key in records}
    assert len(stored["partition"]) == 800
    assert stored["librdkafka"] == stored["partition"]
