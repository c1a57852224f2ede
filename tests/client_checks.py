"""Read-back checks shared by the real-client drivers' tests (librdkafka, kafka-java)."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import replace

from producer_core.config import build_settings
from producer_core.engine.drivers.engine import Delivery, run
from producer_core.workload.partitioners.partitioner import key_table
from producer_core.workload.workload import Workload
from tests.kafka_fixtures import fresh_topic
from tests.readback import read_all


def all_acknowledged(total: int) -> dict[str, object]:
    """A run's `messages` block when every one of `total` messages was acknowledged."""
    return {"intended": total, "sent": total, "acknowledged": total, "failed": 0,
            "failed_reasons": {}, "discarded": 0, "discard_reasons": {}, "unknown": 0,
            "unknown_reasons": {}, "sent_unacknowledged": 0, "aborted": 0}


def assert_read_back_where_reported(bootstrap: str, topic: str, partitions: int, keys: int,
                                    total: int, deliveries: list[Delivery]) -> None:
    """Every message is in the topic once, at the partition and offset the driver
    reported, and keys were partitioned as the engine does (Java murmur2)."""
    reported = {d.message_ids[0]: (d.partition, d.base_offset) for d in deliveries}
    assert sorted(reported) == list(range(total))
    found = asyncio.run(read_all(bootstrap, topic, partitions, expected=total))
    stored = Counter(mid for records in found.values() for _, mid, _ in records)
    assert set(stored) == set(range(total)) and max(stored.values()) == 1
    key_values, partition_of_key = key_table(keys, partitions)
    expected_partition = dict(zip(key_values, partition_of_key, strict=True))
    for partition, records in found.items():
        for offset, message_id, key in records:
            assert reported[message_id] == (partition, offset)
            assert expected_partition[key] == partition


def assert_same_partitions(bootstrap: str, engine_mode: str, client_mode: str) -> None:
    """The client mode, fed by kbatch's generator, stores every message (id and key) in the
    partition the engine mode does."""
    base = Workload(topic="same", partitions=6, rate=4000, messages=800, duration_s=None,
                    keys=25, message_size=40)
    stored = {}
    for mode in (engine_mode, client_mode):
        workload = replace(base, topic=fresh_topic(f"same-{mode}"))
        results = run(workload, build_settings(mode=mode), mode, bootstrap)
        assert results.metrics.messages_acked == 800
        found = asyncio.run(read_all(bootstrap, workload.topic, 6, expected=800))
        stored[mode] = {mid: (partition, key)
                        for partition, records in found.items() for _, mid, key in records}
    assert len(stored[engine_mode]) == 800
    assert stored[client_mode] == stored[engine_mode]
