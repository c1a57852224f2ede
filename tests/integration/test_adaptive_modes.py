"""Modes adaptive and aimd against real brokers (Tansu and Apache Kafka): every message
delivered once; and adaptive sends at once when the load is low (on Tansu)."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from producer_core.results.results_io import validate_document
from producer_core.workload.workload import Workload
from tests.integration.test_engine_against_broker import produce
from tests.kafka_fixtures import fresh_topic
from tests.readback import read_all

pytestmark = pytest.mark.broker


@pytest.mark.parametrize("mode, settings", [
    ("adaptive", {}),
    ("aimd", {}),
    ("aimd", {"aimd.target.p99.ms": "20", "aimd.target.interval.ms": "100"}),
])
def test_every_message_is_delivered_once_where_reported(broker_bootstrap, mode, settings):
    bootstrap = broker_bootstrap.bootstrap
    topic = fresh_topic(f"{mode}-{len(settings)}")
    workload = Workload(topic=topic, partitions=16, rate=3000, messages=4500,
                        duration_s=None, keys=100)
    results, deliveries = produce(bootstrap, mode, workload, **settings)
    assert results.metrics.messages_acked == 4500 and results.metrics.messages_failed == 0
    document = results.to_dict()
    validate_document(document)
    collector = document["collector"]
    assert sum(collector["sends_by_reason"].values()) == collector["sends"] > 0
    if mode == "aimd":
        low, high = collector["aimd"]["bounds_ms"]
        assert collector["window_over_time"][0][0] == 0.0
        assert all(low <= w <= high for _, _, w in collector["window_over_time"])
    else:
        tickets = collector["flush_tickets"]
        assert tickets["ran"] + tickets["stale"] + tickets["waiting"] == tickets["queued"]

    found = asyncio.run(read_all(bootstrap, topic, 16, expected=4500))
    stored = Counter(mid for recs in found.values() for _, mid, _ in recs)
    assert set(stored) == set(range(4500)) and max(stored.values()) == 1
    reported = {mid: (d.partition, d.base_offset + i)
                for d in deliveries for i, mid in enumerate(d.message_ids)}
    assert all(reported[mid] == (p, off) for p, recs in found.items() for off, mid, _ in recs)


def test_adaptive_at_low_load_sends_each_message_at_once(tansu_broker):
    workload = Workload(topic="adaptive-low", partitions=16, rate=100, duration_s=2.0)
    results, _ = produce(tansu_broker.bootstrap, "adaptive", workload)
    document = results.to_dict()
    assert document["messages"]["acknowledged"] == 200
    # nothing is pending between messages 10 ms apart: every flush runs at the end of the
    # pass that appended its message, so each message is its own request
    assert document["msgs_per_req"] < 1.1
    assert document["batch_linger"]["p50_ms"] < 1.0
    assert document["batch_linger"]["p99_ms"] < 5.0  # mode broker's default window
    collector = document["collector"]
    assert collector["sends_by_reason"]["queued_flush"] >= 0.9 * collector["sends"]
    assert document["send_rate_per_s"] == pytest.approx(
        document["requests_sent"] / document["duration_s"], rel=1e-3)
