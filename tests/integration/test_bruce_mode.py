"""Mode `bruce` against the embedded broker: every admitted message is stored exactly once,
keyless messages of one request share a partition (round-robin from request to request),
keyed messages are on their murmur2 partition, and the rate limit discards exactly the
excess, reported per topic."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from producer_core.workload.message_source import TOPIC_ID_SHIFT
from producer_core.workload.partitioners.partitioner import key_table
from producer_core.workload.workload_file import parse_workload
from tests.integration.test_engine_against_broker import produce
from tests.readback import read_all

pytestmark = pytest.mark.broker

WORKLOAD = """\
duration_s: 2.5
seed: 5
topics:
  - name: bruce-keyless
    partitions: 4
    rate: {constant: 1200}
    batching: {max_delay_ms: 20}
  - name: bruce-keyed
    partitions: 4
    rate: {constant: 800}
    keys: {uniform: 30}
    batching: {max_messages: 150, max_delay_ms: 50}
  - name: bruce-mixed-keyless
    partitions: 3
    rate: {constant: 400}
  - name: bruce-mixed-keyed
    partitions: 3
    rate: {constant: 400}
    keys: {zipf: {keys: 20, exponent: 1.0}}
  - name: bruce-limited
    partitions: 2
    rate: {constant: 2000}
    rate_limit: {interval_ms: 1000, max_messages: 500}
"""
KEYLESS = ("bruce-keyless", "bruce-mixed-keyless", "bruce-limited")
KEYED = {"bruce-keyed": 30, "bruce-mixed-keyed": 20}


def test_bruce_mode_end_to_end(tansu_broker):
    workload = parse_workload(WORKLOAD)
    results, deliveries = produce(tansu_broker.bootstrap, "bruce", workload,
                                  **{"bruce.combined.max.delay.ms": "30"})
    doc = results.to_dict()
    assert doc["messages"]["failed"] == 0
    topics = doc["topics"]

    # the rate limit: 2000 msg/s for 2.5 s, 500 admitted per 1 s window (three windows)
    limited = topics["bruce-limited"]["messages"]
    assert limited["sent"] == 5000
    assert limited["acknowledged"] == 1500
    assert limited["discarded"] == 3500
    assert limited["discard_reasons"] == {"rate_limit (bruce-limited)": 3500}
    assert doc["policy"]["rate_limit_discards"] == {"bruce-limited": 3500}
    for name, topic in topics.items():
        messages = topic["messages"]
        assert messages["acknowledged"] + messages["discarded"] == messages["sent"], name
        if name != "bruce-limited":
            assert messages["discarded"] == 0 and messages["sent"] > 0, name

    # every admitted message is stored exactly once, where the engine reported it
    reported = {mid: (d.topic, d.partition, d.base_offset + i)
                for d in deliveries for i, mid in enumerate(d.message_ids)}
    stored: dict[str, dict[int, list[tuple[int, int, bytes | None]]]] = {}
    for index, spec in enumerate(workload.topics):
        acked = topics[spec.name]["messages"]["acknowledged"]
        found = asyncio.run(read_all(tansu_broker.bootstrap, spec.name, spec.partitions,
                                     expected=acked))
        ids = Counter(mid for recs in found.values() for _, mid, _ in recs)
        assert sum(ids.values()) == acked and max(ids.values()) == 1, spec.name
        assert {mid >> TOPIC_ID_SHIFT for mid in ids} == {index}
        for partition, recs in found.items():
            for offset, mid, _ in recs:
                assert reported[mid] == (spec.name, partition, offset)
        stored[spec.name] = found

    # keyless: a request carries one partition of the topic (one batch per request); in id
    # order the partition moves round-robin, one step per request that emptied it (a request
    # that could not take all of it keeps it for the next, so runs <= requests)
    for name in KEYLESS:
        batches = [d for d in deliveries if d.topic == name]
        assert len(batches) == topics[name]["requests"], name
        by_id = sorted((mid, p) for p, recs in stored[name].items() for _, mid, _ in recs)
        runs = [p for i, (_, p) in enumerate(by_id) if i == 0 or by_id[i - 1][1] != p]
        partitions = len(stored[name])
        assert runs == [i % partitions for i in range(len(runs))], name
        assert len(batches) / 2 <= len(runs) <= len(batches), name

    # keyed: on their key's murmur2 partition
    for name, key_count in KEYED.items():
        spec = next(t for t in workload.topics if t.name == name)
        keys, partition_of_key = key_table(key_count, spec.partitions)
        expected = dict(zip(keys, partition_of_key, strict=True))
        for partition, recs in stored[name].items():
            assert all(expected[key] == partition for _, _, key in recs), name

    # batches: per-topic thresholds and the combined batch both fired; requests combine them
    policy = doc["policy"]
    assert policy["topic_batches"] > 0 and policy["combined_batches"] > 0
    assert policy["batches_by_reason"]["max_delay"] > 0
    assert doc["requests_sent"] < sum(t["requests"] for t in topics.values())
    assert doc["requests_sent"] == policy["requests"]
