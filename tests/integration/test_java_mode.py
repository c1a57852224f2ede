"""Mode java against the embedded broker: node-level drain on the wire, and Java's
buffer accounting (whole batches held until their response) with max.block.ms."""

from __future__ import annotations

import pytest

from producer_core.config import build_settings
from producer_core.engine.core.memory import MAX_BLOCK_REASON
from producer_core.engine.drivers.engine import run
from producer_core.workload.workload import Workload
from tests.wire_proxy import produce_frames_of

pytestmark = pytest.mark.broker


def test_java_drains_every_partition_of_the_broker_and_the_wire_agrees(counted_broker):
    broker, proxy = counted_broker
    workload = Workload(topic="java-wire", partitions=16, rate=4000, duration_s=1.0)
    settings = build_settings({"linger.ms": "50"}.items(), mode="java")
    results = run(workload, settings, "java", proxy.address)
    doc = results.to_dict()
    assert doc["messages"]["acknowledged"] == workload.total_messages
    assert proxy.produce_requests == produce_frames_of(results)
    # one broker: once any partition expires, every partition with data rides along
    assert doc["partitions_per_request"]["mean"] > 10
    assert results.requests_sent < 60
    assert doc["policy"]["requests_by_reason"]["linger"] > 0
    assert doc["generator_blocked"]["episodes"] == 0


def test_exhausted_memory_with_max_block_ms_zero_fails_messages_with_the_reason(tansu_broker):
    # two 1 KiB batches of memory for 8 partitions: memory runs out on every pass
    workload = Workload(topic="java-block0", partitions=8, rate=10000, duration_s=0.5)
    settings = build_settings({"batch.size": "1024", "buffer.memory": "2048",
                               "max.block.ms": "0"}.items(), mode="java")
    results = run(workload, settings, "java", tansu_broker.bootstrap)
    doc = results.to_dict()
    messages = doc["messages"]
    assert messages["failed"] > 0
    assert messages["failed_reasons"] == {MAX_BLOCK_REASON: messages["failed"]}
    assert messages["acknowledged"] + messages["failed"] == workload.total_messages
    assert doc["generator_blocked"]["episodes"] > 0
    assert doc["policy"]["requests_by_reason"]["memory"] > 0
    assert any("blocked on buffer.memory" in w for w in doc["warnings"])


def test_exhausted_memory_blocks_the_generator_and_shows_for_how_long(tansu_broker):
    workload = Workload(topic="java-block", partitions=8, rate=10000, duration_s=0.5)
    settings = build_settings({"batch.size": "1024", "buffer.memory": "2048"}.items(),
                              mode="java")
    results = run(workload, settings, "java", tansu_broker.bootstrap)
    doc = results.to_dict()
    assert doc["messages"]["acknowledged"] == workload.total_messages
    blocked = doc["generator_blocked"]
    assert blocked["episodes"] > 0 and blocked["total_ms"] > 0
    assert 0 < blocked["max_ms"] <= blocked["total_ms"]
