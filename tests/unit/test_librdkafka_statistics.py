"""Mode librdkafka: its statistics are read without the per-partition objects (which are
most of the document at many partitions), and nothing kbatch reads is lost."""

from __future__ import annotations

import json
import time
from typing import Any

from producer_core.engine.drivers.librdkafka import parse_statistics


def _without_partitions(stats: dict[str, Any]) -> dict[str, Any]:
    for broker in stats.get("brokers", {}).values():
        broker["toppars"] = {}
    for topic in stats.get("topics", {}).values():
        topic["partitions"] = {}
    return stats


def _librdkafka_statistics() -> str:
    """A statistics document from librdkafka itself (no broker needed: the bootstrap
    address refuses, messages wait in partition queues)."""
    from confluent_kafka import Producer

    texts: list[str] = []
    producer = Producer({"bootstrap.servers": "127.0.0.1:1", "statistics.interval.ms": 100,
                         "stats_cb": texts.append, "log_level": 0})
    for partition in range(5):
        producer.produce("stats-topic", b"x", partition=partition)
    deadline = time.monotonic() + 10
    while len(texts) < 2 and time.monotonic() < deadline:
        producer.poll(0.05)
    producer.purge()
    producer.flush(0)
    assert texts, "librdkafka emitted no statistics"
    return texts[-1]


def test_librdkafka_statistics_lose_only_the_per_partition_objects():
    text = _librdkafka_statistics()
    full = json.loads(text)
    assert full["topics"]["stats-topic"]["partitions"]  # there was something to cut
    stats = parse_statistics(text)
    assert stats["topics"]["stats-topic"]["partitions"] == {}
    assert stats == _without_partitions(full)


def _document(partitions: int, member: str = '{ "partition":%d, "msgq_cnt":0}') -> str:
    """librdkafka's layout (spaces and all) for 3 brokers and one topic."""
    brokers = ", ".join(
        f'"127.0.0.1:{9090 + n}/{n}": {{ "name":"b{n}", "nodeid":{n}, "req": {{ "Produce": '
        f'{10 * n} }}, "rtt": {{ "p50": 1023, "cnt":7 }}, "toppars":{{ '
        + " , ".join(f'"t-{p}": {{ "topic":"t", "partition":{p}}}'
                     for p in range(partitions) if p % 3 == n - 1)
        + " } }" for n in (1, 2, 3))
    members = " , ".join(f'"{p}": ' + member % p for p in range(-1, partitions))
    return (f'{{ "name": "rdkafka#producer-1", "brokers":{{ {brokers} }}, "topics":{{ "t": '
            f'{{ "topic":"t", "batchcnt": {{ "sum": 9, "cnt": 3 }}, "partitions":{{ {members} '
            '} } }, "eos": { "idemp_state":"Assigned" } }')


def test_many_partitions_are_cut_and_the_rest_kept():
    text = _document(1000)
    stats = parse_statistics(text)
    assert stats == _without_partitions(json.loads(text))
    assert [b["req"]["Produce"] for b in stats["brokers"].values()] == [10, 20, 30]
    assert stats["topics"]["t"]["batchcnt"] == {"sum": 9, "cnt": 3}
    assert stats["eos"]["idemp_state"] == "Assigned"


def test_empty_per_partition_objects():
    text = ('{ "brokers":{ "b/1": { "nodeid":1, "toppars":{ } } }, "topics":{ "t": '
            '{ "partitions":{ } } }, "eos": { } }')
    assert parse_statistics(text) == json.loads(text)


def test_a_deeper_partition_object_falls_back_to_the_whole_document():
    """Should librdkafka nest objects in a partition's, the cut would not be JSON: the
    whole document is parsed instead, so nothing is misread."""
    text = _document(4, member='{ "partition":%d, "lag": { "p50": 1 } }')
    assert parse_statistics(text) == json.loads(text)
