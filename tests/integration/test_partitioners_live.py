"""Partitioners on a real broker: librdkafka's own choices (mode librdkafka with a librdkafka
partitioner name lets librdkafka choose) must be the ones kbatch computes for that name,
and the engine's sticky partitioners must put messages where they say, read back."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from producer_core.config import build_settings
from producer_core.engine.drivers.engine import Delivery, run
from producer_core.workload.partitioners.hashes import KEY_HASHES
from producer_core.workload.partitioners.partitioner import key_table
from producer_core.workload.workload import Workload
from tests.kafka_fixtures import fresh_topic
from tests.readback import read_all

pytestmark = pytest.mark.broker


@pytest.mark.parametrize("name", ["consistent", "fnv1a_random", "murmur2"])
def test_librdkafka_chooses_and_agrees_with_kbatch(tansu_broker, name: str) -> None:
    topic = fresh_topic("rdk-part")
    workload = Workload(topic=topic, partitions=7, rate=2000, duration_s=0.5, keys=60)
    settings = build_settings({"partitioner": name}, mode="librdkafka")
    deliveries: list[Delivery] = []
    results = run(workload, settings, "librdkafka", tansu_broker.bootstrap,
                  deliveries=deliveries)
    doc = results.to_dict()
    assert doc["librdkafka"]["config"]["partitioner"] == name
    total = workload.total_messages
    assert doc["messages"]["acknowledged"] == total
    found = asyncio.run(read_all(tansu_broker.bootstrap, topic, 7, expected=total))
    keys, _ = key_table(60, 7)
    placed = {key: partition for partition, records in found.items()
              for _, _, key in records}
    assert len(placed) == 60
    assert placed == {k: KEY_HASHES[name](k, 7) for k in keys}


@pytest.mark.parametrize(("partitioner", "most_touched"), [("round_robin", 64),
                                                           ("sticky", 12),
                                                           ("uniform_sticky", 12)])
def test_engine_sticky_partitioners_read_back(tansu_broker, partitioner: str,
                                              most_touched: int) -> None:
    # 1,000 keyless 100-byte messages in 0.5 s, 16 KiB batches: about 7 batches' worth
    topic = fresh_topic("sticky")
    workload = Workload(topic=topic, partitions=64, rate=2000, duration_s=0.5)
    settings = build_settings({"partitioner": partitioner, "linger.ms": "1000"},
                              mode="partition")
    deliveries: list[Delivery] = []
    results = run(workload, settings, "partition", tansu_broker.bootstrap,
                  deliveries=deliveries)
    total = workload.total_messages
    assert results.to_dict()["messages"]["acknowledged"] == total
    found = asyncio.run(read_all(tansu_broker.bootstrap, topic, 64, expected=total))
    per_partition = Counter({p: len(r) for p, r in found.items() if r})
    assert sum(per_partition.values()) == total
    assert len(per_partition) <= most_touched
    if partitioner == "round_robin":
        assert len(per_partition) == 64
    else:  # sticky: runs of ~130 records (one 16 KiB batch), on few partitions
        assert len(per_partition) >= 5 and max(per_partition.values()) >= 100
