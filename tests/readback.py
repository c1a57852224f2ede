"""Read a topic back with assign + fetch (Tansu's group subscribe may not deliver)."""

from __future__ import annotations

import asyncio
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition

from producer_core.engine.transport.priming import PRIME_KEY
from producer_core.workload.workload import message_id_of


def is_priming(record: Any) -> bool:
    """A priming record (key kbatch.prime, no value: written before a run's clock,
    `producer_core.engine.transport.priming`), not one of the run's."""
    return record.value is None and record.key == PRIME_KEY


def _kept(record: Any, priming: bool) -> bool:
    return priming or not is_priming(record)


def _entry(record: Any) -> tuple[int, int, bytes | None]:
    message_id = -1 if record.value is None else message_id_of(record.value)
    return record.offset, message_id, record.key


async def read_all(
    bootstrap: str, topic: str, partitions: int, expected: int, timeout_s: float = 30.0,
    priming: bool = False, **client_kwargs: Any,
) -> dict[int, list[tuple[int, int, bytes | None]]]:
    """Return, per partition, (offset, message id, key) of every record, in offset order;
    priming records (id -1) only with `priming`.

    `client_kwargs` reach the consumer: a secured cluster's
    `SecurityConfig.aiokafka_kwargs()` (security protocol, SSL context, SASL).

    Stops once `expected` records are read (or times out), because Tansu's high watermark
    from ListOffsets can lag behind what fetch already returns. Starts at offset 0, not at
    ListOffsets(earliest): the topics are fresh, and Tansu 0.x sometimes lists a later
    batch's base offset as a partition's earliest after two producers wrote to it at once.
    """
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
        auto_offset_reset="earliest", fetch_max_bytes=16 * 1024 * 1024,
        max_partition_fetch_bytes=4 * 1024 * 1024, **client_kwargs,
    )
    await consumer.start()
    found: dict[int, list[tuple[int, int, bytes | None]]] = {p: [] for p in range(partitions)}
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        for tp in tps:
            consumer.seek(tp, 0)
        total = 0
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while total < expected and loop.time() < deadline:
            batch = await consumer.getmany(timeout_ms=500, max_records=100_000)
            for tp, records in batch.items():
                for record in records:
                    if _kept(record, priming):
                        found[tp.partition].append(_entry(record))
                        total += 1
        # one more short poll: anything beyond `expected` would be a duplicate
        for tp, records in (await consumer.getmany(timeout_ms=300)).items():
            for record in records:
                if _kept(record, priming):
                    found[tp.partition].append(_entry(record))
    finally:
        await consumer.stop()
    return found
