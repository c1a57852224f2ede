"""The engine against real brokers (the embedded Tansu, and Apache Kafka where the test takes
``broker_bootstrap``): every message lands exactly once, where the engine said, and
requests_sent equals the Produce frames on the wire."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from producer_core.config import build_settings
from producer_core.engine.drivers.engine import Delivery, run
from producer_core.errors import BrokerError
from producer_core.workload.workload import Workload
from tests.kafka_fixtures import fresh_topic
from tests.readback import read_all
from tests.wire_proxy import produce_frames_of

pytestmark = pytest.mark.broker


def produce(bootstrap: str, mode: str, workload: Workload, **settings: str):
    deliveries: list[Delivery] = []
    results = run(workload, build_settings(settings.items(), mode=mode), mode, bootstrap,
                  deliveries=deliveries)
    return results, deliveries


@pytest.mark.parametrize("mode", ["partition", "none"])
def test_every_acknowledged_message_is_in_the_topic_once_where_reported(broker_bootstrap, mode):
    bootstrap = broker_bootstrap.bootstrap
    workload = Workload(topic=fresh_topic(f"roundtrip-{mode}"), partitions=8, rate=4000,
                        messages=3000, duration_s=None, keys=50)
    results, deliveries = produce(bootstrap, mode, workload, **{"linger.ms": "20"})
    assert results.metrics.messages_acked == 3000
    assert results.metrics.messages_failed == 0
    assert sum(len(d.message_ids) for d in deliveries) == 3000

    # what the engine reported: message id -> (partition, offset)
    reported = {}
    for d in deliveries:
        for i, message_id in enumerate(d.message_ids):
            reported[message_id] = (d.partition, d.base_offset + i)
    assert sorted(reported) == list(range(3000))

    found = asyncio.run(read_all(bootstrap, workload.topic, 8, expected=3000))
    stored = Counter(mid for records in found.values() for _, mid, _ in records)
    assert set(stored) == set(range(3000))
    assert max(stored.values()) == 1, "a message is stored more than once"
    for partition, records in found.items():
        for offset, message_id, _ in records:
            assert reported[message_id] == (partition, offset)


def test_requests_sent_equals_produce_frames_on_the_wire(counted_broker):
    broker, proxy = counted_broker
    workload = Workload(topic="wire-count", partitions=12, rate=3000, duration_s=1.5)
    results, _ = produce(proxy.address, "partition", workload, **{"linger.ms": "10"})
    assert results.requests_sent > 50  # staggered expiry: many small requests
    assert (results.priming or {}).get("requests", 0) >= 2  # a new topic: two rounds
    assert proxy.produce_requests == produce_frames_of(results)
    assert results.metrics.records_sent == workload.total_messages


def test_keyed_messages_land_on_the_murmur2_partition(broker_bootstrap):
    from producer_core.workload.partitioners.partitioner import key_table

    bootstrap = broker_bootstrap.bootstrap
    workload = Workload(topic=fresh_topic("keyed"), partitions=6, rate=5000, messages=500,
                        duration_s=None, keys=20)
    results, deliveries = produce(bootstrap, "none", workload)
    assert results.metrics.messages_acked == 500
    keys, partition_of_key = key_table(20, 6)
    expected_partition = dict(zip(keys, partition_of_key, strict=True))
    found = asyncio.run(read_all(bootstrap, workload.topic, 6, expected=500))
    records = [(p, key) for p, recs in found.items() for _, _, key in recs]
    assert len(records) == 500
    assert all(expected_partition[key] == partition for partition, key in records)
    assert len({key for _, key in records}) == 20


def test_unreachable_bootstrap_fails_fast_with_a_clear_error():
    workload = Workload(topic="nowhere", partitions=1, rate=10, messages=1, duration_s=None)
    with pytest.raises(BrokerError, match="Could not reach any bootstrap server"):
        produce("127.0.0.1:1", "none", workload)


def test_generator_passes_are_paced_and_every_message_still_lands(tansu_broker, monkeypatch):
    """At 20,000 msg/s a pass per message kept the process busy; passes that wait for the
    schedule come at most every GENERATOR_PASS_INTERVAL_S, each appending several messages
    (run_control.GENERATOR_PASS_INTERVAL_S's docstring). Counted against the same run
    unpaced."""
    from producer_core.engine.drivers import run_control
    from producer_core.engine.drivers.generator import Generator

    passes = 0
    original = Generator.generate

    def counted(self, now, limit=None):
        nonlocal passes
        passes += 1
        return original(self, now, limit)

    monkeypatch.setattr(Generator, "generate", counted)

    def passes_of_a_run(interval_s: float) -> tuple[int, object]:
        nonlocal passes
        passes = 0
        monkeypatch.setattr(run_control, "GENERATOR_PASS_INTERVAL_S", interval_s)
        workload = Workload(topic=fresh_topic("paced"), partitions=16, rate=20_000,
                            duration_s=2.0)
        results, _ = produce(tansu_broker.bootstrap, "broker",
                             workload, **{"broker.linger.ms": "50"})
        assert results.metrics.messages_acked == 40_000
        assert results.metrics.messages_failed == 0
        return passes, results

    unpaced, unpaced_results = passes_of_a_run(0.0)
    paced, results = passes_of_a_run(0.00025)
    lag_ms = results.metrics.generator_lag.percentile_ms(99)
    unpaced_lag_ms = unpaced_results.metrics.generator_lag.percentile_ms(99)
    print(f"passes: {unpaced:,} unpaced, {paced:,} paced; generator lag p99 "
          f"{unpaced_lag_ms:.2f} ms unpaced, {lag_ms:.2f} ms paced")
    assert paced <= 2.0 / 0.00025 + 2 * results.requests_sent + 100
    assert paced < 0.7 * unpaced
    # pacing costs the schedule at most a pass interval: under 5 ms on a quiet machine;
    # on a loaded one both runs lag, so compare with the unpaced run of the same moment
    assert lag_ms < max(5.0, 3 * unpaced_lag_ms)
