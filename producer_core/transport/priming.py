"""Make a topic ready before a run's clock starts: write each never-written partition once.

Apache Kafka serves a new partition's first writes slowly: on one node with 1,000 new
partitions a run had no acknowledgement for 14 s (issue 47), while the same run on the
same topic a minute later kept its rate. A run on a fresh topic then measures the topic's
creation, not the producer. So before time zero every partition whose log is empty gets
one record, acknowledged by its leader (acks=all), outside every figure of the run.

A priming record is recognisable: key `PRIME_KEY`, null value, no producer id (it takes no
sequence number from the run's idempotent producer). `--verify`'s read-back and the
consumers skip records without a value; `--no-prime` (`TopicCreation.prime`) leaves cold
topics cold, to study them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from aiokafka.errors import for_code
from aiokafka.protocol.offset import OffsetRequest

from producer_core.core.record_batch import RecordBatchWriter
from producer_core.errors import BrokerError
from producer_core.transport.produce_wire import ProduceRequest

PRIME_KEY = b"kbatch.prime"
"""The key of a priming record (its value is null)."""
PARTITIONS_PER_REQUEST = 1_000
"""Priming records per ProduceRequest (one small batch each: ~90 bytes)."""
RETRY_BACKOFF_S = 0.2
LATEST_OFFSET = -1


@dataclass(frozen=True)
class Priming:
    """What priming a topic did: partitions written, partitions already written, time."""

    topic: str
    primed: int
    already_written: int
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        return {"primed": self.primed, "already_written": self.already_written,
                "seconds": round(self.seconds, 3)}


def priming_section(primings: Sequence[Priming]) -> dict[str, Any] | None:
    """The results' `priming` object: totals and each topic's figures; None when no
    partition needed it (warm topics)."""
    if not any(p.primed for p in primings):
        return None
    return {"partitions": sum(p.primed for p in primings),
            "seconds": round(sum(p.seconds for p in primings), 3),
            "topics": {p.topic: p.as_dict() for p in primings}}


def prime_batch(timestamp_ms: int) -> bytes:
    """One priming record as a RecordBatch v2 (uncompressed, no producer id)."""
    writer = RecordBatchWriter(0, 1 << 10)
    writer.append(0, timestamp_ms, PRIME_KEY, None, [])
    return writer.build()


def by_leader(partitions: Sequence[int], leaders: Sequence[int]) -> dict[int, list[int]]:
    """`partitions` grouped by their leader (leaders[p]: node id of partition p)."""
    grouped: dict[int, list[int]] = {}
    for partition in partitions:
        grouped.setdefault(leaders[partition], []).append(partition)
    return grouped


def chunks(items: Sequence[int], size: int) -> list[Sequence[int]]:
    return [items[i:i + size] for i in range(0, len(items), size)]


async def empty_partitions(cluster: Any, topic: str, leaders: Sequence[int]) -> list[int]:
    """The partitions whose leader lists their log end at offset 0 (never written)."""
    empty: list[int] = []
    for leader, parts in by_leader(range(len(leaders)), leaders).items():
        conn = await cluster.connection(leader)
        response = await conn.send(
            OffsetRequest(-1, 0, [(topic, [(p, LATEST_OFFSET) for p in parts])]))
        for entry in response.to_object()["topics"]:
            empty.extend(p["partition"] for p in entry["partitions"]
                         if p["error_code"] == 0 and p["offset"] == 0)
    return sorted(empty)


async def _write(cluster: Any, topic: str, leader: int, parts: Sequence[int],
                 timeout_ms: int) -> dict[int, int]:
    """One ProduceRequest of priming records; the error code of each partition."""
    batch = prime_batch(int(time.time() * 1000))
    await cluster.connection(leader)
    request = ProduceRequest(None, -1, timeout_ms, [(topic, [(p, batch) for p in parts])])
    answer = await cluster.send(leader, request)
    return {entry[0]: entry[1] for _, entries in answer.topics for entry in entries}


Note = Callable[[str], None]
"""Where a progress line goes (the CLI prints it above its live view)."""


async def prime_topic(cluster: Any, topic: str, timeout_s: float = 60.0,
                      on_note: Note | None = None) -> Priming:
    """Write one acknowledged record to every empty partition of `topic` (whose leaders
    serve it: `Cluster.ensure_topic` first). Refused partitions are asked again, at the
    leaders metadata then names, until `timeout_s`; after it, a BrokerError says which
    error the broker gave, and that `--no-prime` runs on the cold topic instead."""
    loop = asyncio.get_running_loop()
    began = loop.time()
    deadline = began + timeout_s
    view = await cluster.refresh_metadata([topic])
    leaders = view.leaders[topic]
    todo = await empty_partitions(cluster, topic, leaders)
    primed = len(todo)
    if todo and on_note is not None:
        on_note(f"Priming topic {topic}: one record to each of its {primed:,} empty "
                "partitions, acknowledged before the clock starts (--no-prime: leave it "
                "cold).")
    timeout_ms = int(max(1.0, timeout_s) * 1000)
    while todo:
        refused: dict[int, int] = {}
        for leader, parts in by_leader(todo, leaders).items():
            for chunk in chunks(parts, PARTITIONS_PER_REQUEST):
                try:
                    codes = await _write(cluster, topic, leader, chunk, timeout_ms)
                except Exception as exc:  # noqa: BLE001 - asked again until the deadline
                    codes = {p: -1 for p in chunk}
                    if loop.time() >= deadline:
                        raise BrokerError(f"Could not prime topic {topic!r}: {exc}. Use "
                                          "--no-prime to run on the cold topic.") from exc
                refused.update({p: c for p, c in codes.items() if c != 0})
                refused.update({p: -1 for p in chunk if p not in codes})
        todo = sorted(refused)
        if not todo:
            break
        if loop.time() >= deadline:
            code = next(c for c in refused.values() if c != -1) if any(
                c != -1 for c in refused.values()) else -1
            reason = for_code(code).__name__ if code != -1 else "no answer"
            raise BrokerError(
                f"Could not prime topic {topic!r}: {len(todo):,} partitions still refused "
                f"a first record after {timeout_s:.0f} s ({reason}). Use --no-prime to run "
                "on the cold topic.")
        await asyncio.sleep(RETRY_BACKOFF_S)
        leaders = (await cluster.refresh_metadata([topic])).leaders[topic]
    total = len(leaders)
    return Priming(topic, primed, total - primed, loop.time() - began)
