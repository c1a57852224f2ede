"""Mode broker against the embedded broker: one request per window, not per partition."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from producer_core.workload.workload import Workload
from tests.integration.test_engine_against_broker import produce
from tests.readback import read_all
from tests.wire_proxy import produce_frames_of

pytestmark = pytest.mark.broker


def test_broker_collector_sends_about_one_request_per_window(counted_broker):
    broker, proxy = counted_broker
    duration, window = 5.0, 0.200
    workload = Workload(topic="collector", partitions=200, rate=2000, duration_s=duration)
    results, deliveries = produce(proxy.address, "broker", workload,
                                  **{"broker.linger.ms": "200"})
    ideal = duration / window
    assert abs(results.requests_sent - ideal) <= 0.10 * ideal + 2, results.requests_sent
    assert proxy.produce_requests == produce_frames_of(results)
    assert results.metrics.messages_acked == 10_000 and results.metrics.messages_failed == 0
    collector = results.to_dict()["collector"]
    assert collector["sends_by_reason"].get("broker_linger", 0) >= ideal - 3
    # no message waits in the collector much longer than the window
    assert results.to_dict()["linger"]["max_ms"] < 200 + 50

    found = asyncio.run(read_all(proxy.address, "collector", 200, expected=10_000))
    stored = Counter(mid for recs in found.values() for _, mid, _ in recs)
    assert set(stored) == set(range(10_000)) and max(stored.values()) == 1
    reported = {mid: (d.partition, d.base_offset + i)
                for d in deliveries for i, mid in enumerate(d.message_ids)}
    assert all(reported[mid] == (p, off) for p, recs in found.items() for off, mid, _ in recs)

    partition_results, _ = produce(proxy.address, "partition",
                                   Workload(topic="per-partition", partitions=200, rate=2000,
                                            duration_s=duration),
                                   **{"linger.ms": "200"})
    assert partition_results.requests_sent > 4 * results.requests_sent
