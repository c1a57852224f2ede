"""Batches framed by kbatch (`RecordBatchWriter`: unthrottled passes of same-sized keyless
values) delivered exactly: produced to a real broker (Tansu, Apache Kafka) with every
codec, idempotent or not, and read back: every message once, in order, at the partition
and offset the engine reported, with its value byte for byte, no key and no headers."""

from __future__ import annotations

import asyncio
import json
import subprocess

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from producer_core.config import build_settings
from producer_core.engine.core.record_batch import RecordBatchWriter
from producer_core.engine.drivers.engine import Delivery, run
from producer_core.workload.message_source import TopicSource
from producer_core.workload.payload import PayloadSpec
from producer_core.workload.workload import Workload, message_id_of
from tests.cli.test_produce_cli import KBATCH, ROOT
from tests.kafka_fixtures import fresh_topic
from tests.readback import is_priming

pytestmark = pytest.mark.broker

PARTITIONS = 4
MESSAGES = 20_000


async def _records(bootstrap: str, topic: str, expected: int
                   ) -> dict[int, list[tuple[int, bytes | None, bytes | None, list]]]:
    """(offset, key, value, headers) of every record per partition, in offset order."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                group_id=None, auto_offset_reset="earliest",
                                fetch_max_bytes=16 << 20, max_partition_fetch_bytes=4 << 20)
    await consumer.start()
    found: dict[int, list[tuple[int, bytes | None, bytes | None, list]]] = {
        p: [] for p in range(PARTITIONS)}
    try:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        for tp in tps:  # not ListOffsets(earliest): see tests/readback.py
            consumer.seek(tp, 0)
        total = 0
        deadline = asyncio.get_running_loop().time() + 30
        while total < expected and asyncio.get_running_loop().time() < deadline:
            for tp, records in (await consumer.getmany(timeout_ms=500)).items():
                records = [r for r in records if not is_priming(r)]
                found[tp.partition] += [(r.offset, r.key, r.value, list(r.headers))
                                       for r in records]
                total += len(records)
        for tp, records in (await consumer.getmany(timeout_ms=300)).items():
            found[tp.partition] += [(r.offset, r.key, r.value, list(r.headers))
                                    for r in records if not is_priming(r)]
    finally:
        await consumer.stop()
    return found


@pytest.mark.parametrize("idempotence", ["true", "false"])
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_framed_batches_read_back_exactly(broker_bootstrap, monkeypatch, codec: str,
                                          idempotence: str) -> None:
    bootstrap = broker_bootstrap.bootstrap
    built = []
    build = RecordBatchWriter.build
    monkeypatch.setattr(RecordBatchWriter, "build",
                        lambda self: built.append(self.count) or build(self))
    workload = Workload(topic=fresh_topic(f"framed-{codec}-{idempotence}"),
                        partitions=PARTITIONS,
                        rate=None, messages=MESSAGES, duration_s=None, message_size=100,
                        payload=PayloadSpec(compressibility=0.5))
    settings = build_settings({"compression.type": codec,
                               "enable.idempotence": idempotence}.items(), mode="partition")
    deliveries: list[Delivery] = []
    results = run(workload, settings, "partition", bootstrap, deliveries=deliveries)
    doc = results.to_dict()
    assert doc["messages"]["acknowledged"] == MESSAGES and doc["messages"]["failed"] == 0
    # the framed path carried (nearly) all of it: passes of 1,000 over 4 partitions
    # (the priming batches, one record each, are built too)
    assert sum(built) >= MESSAGES * 0.9, (sum(built), len(built))

    spec = workload.topic_specs()[0]
    source = TopicSource(spec, 0, workload.seed, workload.share_index)
    expected = dict(zip(range(source.id_base, source.id_base + MESSAGES),
                        source.values(range(source.id_base, source.id_base + MESSAGES)),
                        strict=True))
    reported = {message_id: (d.partition, d.base_offset + i)
                for d in deliveries for i, message_id in enumerate(d.message_ids)}
    assert len(reported) == MESSAGES
    found = asyncio.run(_records(bootstrap, workload.topic, MESSAGES))
    seen = 0
    for partition, records in found.items():
        ids = [message_id_of(value) for _, _, value, _ in records]
        assert ids == sorted(ids), "a partition's messages out of order"
        for (offset, key, value, headers), message_id in zip(records, ids, strict=True):
            assert key is None and headers == []
            assert value == expected.pop(message_id)  # KeyError: unknown or duplicate
            assert reported[message_id] == (partition, offset)
        seen += len(records)
    assert seen == MESSAGES and not expected


def test_transactional_framed_batches_verified_read_committed(kafka_cluster, tmp_path) -> None:
    """Writer batches patched with the transactional bit (and re-checksummed) pass Apache
    Kafka's transaction rules: committed once, aborted never visible (--verify)."""
    topic = fresh_topic("framed-txn")
    path = tmp_path / "r.json"
    done = subprocess.run(
        [*KBATCH, "produce", "--bootstrap-servers", kafka_cluster.bootstrap, "--topic", topic,
         "--partitions", str(PARTITIONS), "--rate", "max", "--messages", str(MESSAGES),
         "--transactional-id", f"kbatch-{topic}", "--transaction-duration-ms", "150",
         "--abort-every", "3", "--verify", "--json", str(path), "--no-progress"],
        cwd=ROOT, text=True, capture_output=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    doc = json.loads(path.read_text())
    messages, verify = doc["messages"], doc["verify"]
    assert messages["failed"] == messages["unknown"] == 0
    assert messages["acknowledged"] + messages["aborted"] == MESSAGES
    assert messages["acknowledged"] > 0 and doc["transactions"]["committed"] >= 1
    assert verify["read_complete"] and verify["problems"] == []
    assert verify["present"] == verify["acknowledged"] == messages["acknowledged"]
    assert verify["aborted_visible"] == 0 and verify["duplicated"] == 0
