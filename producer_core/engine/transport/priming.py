"""Make a topic ready before a run's clock starts: write each never-written partition.

Apache Kafka serves a new partition's first writes slowly: on one node with 1,000 new
partitions a run had no acknowledgement for 14 s (issue 47), while the same run on the
same topic a minute later kept its rate. The stall came ~5 s into the run, when each
partition had taken about `index.interval.bytes` (4 KB): the append that follows makes
Kafka write the partition's first offset and time index entries, and create their
(lazily opened, 10 MB preallocated, memory-mapped) index files, a thousand at once. So
before time zero every partition whose log is empty gets two records, each round
acknowledged by the leaders (acks=all): one padded past `index.interval.bytes`, then one
more, whose append writes the first index entries. All of it stays outside the run's
figures.

A priming record is recognisable: key `PRIME_KEY`, null value (the padding is a header),
no producer id (it takes no sequence number from the run's idempotent producer).
`--verify`'s read-back and the consumers skip records without a value; `--no-prime`
(`TopicCreation.prime`) leaves cold topics cold, to study them.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiokafka.errors import for_code
from aiokafka.protocol.offset import OffsetRequest

from producer_core.engine.core.record_batch import RecordBatchWriter
from producer_core.engine.transport.produce_wire import ProduceRequest
from producer_core.errors import BrokerError

PRIME_KEY = b"kbatch.prime"
"""The key of a priming record (its value is null)."""
PAD_HEADER = "kbatch.prime.pad"
INDEX_INTERVAL_BYTES = 4096
"""Kafka's default `index.interval.bytes`: bytes appended between two index entries."""
PARTITIONS_PER_REQUEST = 200
"""Priming batches per ProduceRequest (the padded ones are ~4 KB: ~1 MB a request)."""
RETRY_BACKOFF_S = 0.2
LATEST_OFFSET = -1
TOO_LARGE = {10, 18}
"""MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE: a topic whose max.message.bytes is below the
padded record takes the small one only (primed, its first index entry left to the run)."""


@dataclass(frozen=True)
class Priming:
    """What priming a topic did: partitions written, partitions already written, time."""

    topic: str
    primed: int
    already_written: int
    seconds: float
    requests_by_broker: dict[int, int] = field(default_factory=dict)
    """ProduceRequests written per leader (a broker's own count of the run has them)."""

    @property
    def requests(self) -> int:
        return sum(self.requests_by_broker.values())

    def as_dict(self) -> dict[str, Any]:
        return {"primed": self.primed, "already_written": self.already_written,
                "seconds": round(self.seconds, 3), "requests": self.requests}


def priming_section(primings: Sequence[Priming]) -> dict[str, Any] | None:
    """The results' `priming` object: totals and each topic's figures; None when no
    partition needed it (warm topics)."""
    if not any(p.primed for p in primings):
        return None
    by_broker: Counter[int] = Counter()
    for priming in primings:
        by_broker.update(priming.requests_by_broker)
    return {"partitions": sum(p.primed for p in primings),
            "seconds": round(sum(p.seconds for p in primings), 3),
            "requests": sum(by_broker.values()),
            "requests_by_broker": {str(k): v for k, v in sorted(by_broker.items())},
            "topics": {p.topic: p.as_dict() for p in primings}}


def prime_batch(timestamp_ms: int, pad: int = 0) -> bytes:
    """One priming record as a RecordBatch v2 (uncompressed, no producer id), with a
    header of `pad` bytes when asked (so the batch passes `index.interval.bytes`)."""
    writer = RecordBatchWriter(0, pad + (1 << 10))
    headers: list[tuple[str, bytes | None]] = [(PAD_HEADER, bytes(pad))] if pad else []
    writer.append(0, timestamp_ms, PRIME_KEY, None, headers)
    return writer.build()


def pad_bytes(topic_configs: Sequence[tuple[str, str]] = ()) -> int:
    """Padding that takes a first batch past the topic's `index.interval.bytes`."""
    interval = dict(topic_configs).get("index.interval.bytes", "")
    return (int(interval) if interval.isdigit() else INDEX_INTERVAL_BYTES) + 128


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
                         if p["error_code"] == 0 and _end(p) == 0)
    return sorted(empty)


def _end(entry: dict[str, Any]) -> int | None:
    """A ListOffsets partition entry's offset (v1+: `offset`; v0: `offsets`, a list)."""
    if "offset" in entry:
        return int(entry["offset"])
    offsets = entry.get("offsets") or []
    return int(offsets[0]) if offsets else None


async def _write(cluster: Any, topic: str, leader: int, parts: Sequence[int],
                 timeout_ms: int, pad: int) -> dict[int, int]:
    """One ProduceRequest of priming records; the error code of each partition."""
    batch = prime_batch(int(time.time() * 1000), pad)
    await cluster.connection(leader)
    request = ProduceRequest(None, -1, timeout_ms, [(topic, [(p, batch) for p in parts])])
    # the direct produce path has no timeout of its own (the producer core keeps them)
    answer = await asyncio.wait_for(cluster.send(leader, request), timeout_ms / 1000 + 5)
    return {entry[0]: entry[1] for _, entries in answer.topics for entry in entries}


Note = Callable[[str], None]
"""Where a progress line goes (the CLI prints it above its live view)."""


async def prime_topic(cluster: Any, topic: str, timeout_s: float = 60.0,
                      on_note: Note | None = None, pad: int = INDEX_INTERVAL_BYTES + 128
                      ) -> Priming:
    """Write two acknowledged records (the first padded by `pad` bytes) to every empty
    partition of `topic`, whose leaders serve it (`Cluster.ensure_topic` first)."""
    loop = asyncio.get_running_loop()
    began = loop.time()
    deadline = began + timeout_s
    view = await cluster.refresh_metadata([topic])
    todo = await empty_partitions(cluster, topic, view.leaders[topic])
    if todo and on_note is not None:
        on_note(f"Priming {topic}: 2 records in each of its {len(todo):,} empty partitions "
                "before the clock starts (--no-prime: leave it cold).")
    leaders = view.leaders[topic]
    requests: Counter[int] = Counter()
    for round_pad in (pad, 0):
        try:
            leaders, sent = await _round(cluster, topic, todo, leaders, deadline, timeout_s,
                                         round_pad)
        except _TooLarge:  # max.message.bytes below the padding: the small record only
            continue
        requests.update(sent)
    return Priming(topic, len(todo), len(leaders) - len(todo), loop.time() - began,
                   dict(requests))


class _TooLarge(Exception):
    """The topic refused the padded record for its size."""


async def _round(cluster: Any, topic: str, todo: list[int], leaders: list[int],
                 deadline: float, timeout_s: float, pad: int
                 ) -> tuple[list[int], Counter[int]]:
    """One priming record to each partition of `todo`; the leaders it ended with and the
    requests it wrote.
    Refused partitions are asked again, at the leaders metadata then names, until the
    deadline; after it, a BrokerError says which error the broker gave, and that
    `--no-prime` runs on the cold topic instead."""
    loop = asyncio.get_running_loop()
    timeout_ms = int(max(1.0, timeout_s) * 1000)
    requests: Counter[int] = Counter()
    while todo:
        refused: dict[int, int] = {}
        for leader, parts in by_leader(todo, leaders).items():
            for chunk in chunks(parts, PARTITIONS_PER_REQUEST):
                requests[leader] += 1
                try:
                    codes = await _write(cluster, topic, leader, chunk, timeout_ms, pad)
                except Exception as exc:  # noqa: BLE001 - asked again until the deadline
                    codes = {p: -1 for p in chunk}
                    if loop.time() >= deadline:
                        raise BrokerError(f"Could not prime topic {topic!r}: {exc}. Use "
                                          "--no-prime to run on the cold topic.") from exc
                if pad and TOO_LARGE & set(codes.values()):
                    raise _TooLarge()
                final = {c for c in codes.values() if c > 0 and not for_code(c).retriable}
                if final:
                    raise BrokerError(
                        f"Could not prime topic {topic!r}: the broker answered "
                        f"{for_code(min(final)).__name__}. Use --no-prime to run on the "
                        "cold topic.")
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
    return leaders, requests
