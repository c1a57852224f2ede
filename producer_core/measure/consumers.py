"""Consumers in their own processes, reading a run's partitions while it runs.

They never share the producer's event loop or its GIL: each is a `spawn`ed process with
a librdkafka consumer (confluent-kafka), assigned (no group rebalances) to its share of
the run's partitions from the offsets the run starts at. A process keeps, per record,
its topic, partition, message id, when it was read (the monotonic clock, which on one
host is the producer's clock, and the wall clock) and the record's timestamp, and writes
them to a file when told to stop; a shared array shows how many it has read so far (the
live lag). Problems (cannot connect, authentication, a topic gone) are collected as
short lines for the consumer section, never as tracebacks; properties are not logged.
"""

from __future__ import annotations

import json
import multiprocessing
import time
import uuid
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from producer_core.measure.e2e import Consumed
from producer_core.security import scrub

READY_TIMEOUT_S = 20.0
"""How long consumers may take to start and reach the brokers before the run starts
without them."""
POLL_S = 0.05
BATCH = 10_000
MAX_PROBLEMS = 5
"""Distinct problems a consumer reports (the first ones say what went wrong)."""
NOT_READY, FAILED = -2, -3
"""Special values of a process's live count while it is not reading."""

DEFAULTS: dict[str, Any] = {
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
    "enable.partition.eof": False,
    "auto.offset.reset": "earliest",
    "allow.auto.create.topics": False,
    "topic.metadata.refresh.interval.ms": 1000,
}
"""A reader that commits nothing and creates nothing; the rest is librdkafka's defaults
(fetch.wait.max.ms 500, fetch.min.bytes 1) unless --consumer-config says otherwise."""


@dataclass(frozen=True)
class Assignment:
    topic: str
    topic_index: int
    partition: int
    offset: int


@dataclass(frozen=True)
class ConsumerPlan:
    """What one consumer process reads, and with which properties (security included:
    passed to the child through its pipe, never written anywhere)."""

    index: int
    bootstrap: str
    properties: Mapping[str, Any]
    assignments: tuple[Assignment, ...]
    out_path: str


def spread(assignments: Sequence[Assignment], consumers: int) -> list[tuple[Assignment, ...]]:
    """Partitions dealt round-robin to `consumers` (at most one consumer per partition)."""
    count = max(1, min(consumers, len(assignments)))
    return [tuple(assignments[i::count]) for i in range(count)]


def consumer_properties(bootstrap: str, security: Mapping[str, str],
                        user: Mapping[str, str], read_committed: bool) -> dict[str, Any]:
    """librdkafka consumer properties: kbatch's defaults, the run's security, the user's
    --consumer-config (last wins), and the isolation level a transactional run needs."""
    props: dict[str, Any] = {**DEFAULTS, **security, **user}
    props["bootstrap.servers"] = bootstrap
    props["group.id"] = f"kbatch-e2e-{uuid.uuid4().hex[:12]}"
    props.setdefault("isolation.level",
                     "read_committed" if read_committed else "read_uncommitted")
    return props


def consume_main(plan: ConsumerPlan, counts: Any, stop: Any) -> None:
    """A consumer process: read until `stop`, then write what was read to `out_path`."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    problems: dict[str, str] = {}
    secrets = dict(plan.properties)

    def note(key: str, text: str) -> None:
        """One line per kind of problem (the first), secrets scrubbed."""
        if key not in problems and len(problems) < MAX_PROBLEMS:
            problems[key] = scrub(text, secrets)

    def on_error(err: Any) -> None:
        note(err.name(), f"{err.name()}: {err.str()}")

    topic_index = {a.topic: a.topic_index for a in plan.assignments}
    columns: dict[str, array[Any]] = {name: array(kind) for name, kind in (
        ("topic_index", "q"), ("partition", "q"), ("ids", "Q"), ("consume_s", "d"),
        ("consume_wall", "d"), ("timestamp_ms", "q"))}
    short_values = 0
    read = 0
    try:
        consumer = Consumer({**plan.properties, "error_cb": on_error})
    except Exception as exc:  # noqa: BLE001 - a bad property is one line, not a traceback
        note("config", f"the consumer refused its properties: {exc}")
        counts[plan.index] = FAILED
        _write(plan.out_path, columns, problems, 0)
        return
    try:
        consumer.assign([TopicPartition(a.topic, a.partition, a.offset)
                         for a in plan.assignments])
        if _reachable(consumer, plan.assignments, note):
            counts[plan.index] = 0
        else:
            counts[plan.index] = FAILED
        while not stop.is_set():
            first = consumer.poll(POLL_S)
            if first is None:
                continue
            mono, wall = time.monotonic(), time.time()
            batch = [first, *consumer.consume(BATCH, timeout=0)]
            for msg in batch:
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._AUTO_OFFSET_RESET:
                        note(err.name(), f"{msg.topic()}[{msg.partition()}]: the offset the "
                                         "consumer was at no longer exists (topic deleted, "
                                         f"re-created or truncated during the run?): {err.str()}")
                    elif err.code() != KafkaError._PARTITION_EOF:
                        note(err.name(), f"{err.name()}: {msg.topic()}[{msg.partition()}]: "
                                         f"{err.str()}")
                    continue
                value = msg.value()
                if value is None or len(value) < 8:
                    short_values += 1
                    continue
                # a message read has a topic (the client types it optional)
                columns["topic_index"].append(
                    topic_index.get(msg.topic(), -1))  # type: ignore[arg-type]  # see above
                columns["partition"].append(msg.partition())
                columns["ids"].append(int.from_bytes(value[:8], "big"))
                columns["consume_s"].append(mono)
                columns["consume_wall"].append(wall)
                columns["timestamp_ms"].append(msg.timestamp()[1])
                read += 1
            counts[plan.index] = read  # reading: whatever the start said, it works
        _gone_topics(consumer, plan.assignments, note)
    finally:
        consumer.close()
    _write(plan.out_path, columns, problems, short_values)


def _reachable(consumer: Any, assignments: Sequence[Assignment], note: Any) -> bool:
    """One metadata round trip: the brokers answer (and authenticate us), and they know
    every assigned partition. Per-partition requests would take seconds for 1,000."""
    from confluent_kafka import KafkaException

    try:
        topics = consumer.list_topics(timeout=10).topics
    except KafkaException as exc:
        err = exc.args[0]
        note(err.name(), f"{err.name()}: {err.str()}")
        return False
    unknown = [f"{a.topic}[{a.partition}]" for a in assignments
               if a.topic not in topics or a.partition not in topics[a.topic].partitions]
    if unknown:
        note("unknown", f"the brokers do not know {len(unknown):,} assigned partitions "
                        f"({', '.join(unknown[:3])}{', ...' if len(unknown) > 3 else ''})")
        return False
    return True


def _gone_topics(consumer: Any, assignments: Sequence[Assignment], note: Any) -> None:
    """Name the run's topics the cluster no longer has (deleted while the run ran): a
    consumer assigned to one reads nothing more and says nothing itself."""
    from confluent_kafka import KafkaException

    try:
        existing = consumer.list_topics(timeout=5).topics
    except KafkaException:
        return
    for topic in sorted({a.topic for a in assignments}):
        if topic not in existing:
            note(f"gone:{topic}", f"topic {topic!r} no longer exists (deleted during the run?):"
                                  " the consumers could not read what came after")


def _write(path: str, columns: Mapping[str, array[Any]], problems: Mapping[str, str],
           short_values: int) -> None:
    # no column is named allow_pickle, savez's one keyword that is not an array
    np.savez(path, **{  # type: ignore[arg-type]  # see above
        name: np.frombuffer(column, dtype=column.typecode) if len(column)
        else np.zeros(0, dtype=column.typecode) for name, column in columns.items()})
    Path(path + ".json").write_text(json.dumps(
        {"problems": list(problems.values()), "short_values": short_values}))


class ConsumerProcesses:
    """The consumer processes of one run: start, wait ready, count live, stop, collect."""

    def __init__(self, plans: Sequence[ConsumerPlan]) -> None:
        context = multiprocessing.get_context("spawn")
        self.plans = list(plans)
        self.counts = context.Array("q", [NOT_READY] * len(plans), lock=False)
        self.stop = context.Event()
        self.processes = [context.Process(target=consume_main, args=(plan, self.counts,
                                                                     self.stop),
                                          name=f"kbatch-consumer-{plan.index}", daemon=True)
                          for plan in plans]

    def start(self, timeout_s: float = READY_TIMEOUT_S) -> bool:
        """Start them and wait until each reached its partitions (False: some did not)."""
        for process in self.processes:
            process.start()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            states = list(self.counts)
            if all(s != NOT_READY for s in states):
                return all(s >= 0 for s in states)
            if not any(p.is_alive() for p in self.processes):
                return False
            time.sleep(0.02)
        return False

    def consumed(self) -> int:
        """Records read so far by the processes that are reading."""
        return sum(max(0, c) for c in self.counts)

    def drain(self, expected: int, timeout_s: float, quiet_s: float) -> bool:
        """After the run: read on until `expected` records (True), or nothing new for
        `quiet_s`, or `timeout_s` (False: the consumers were behind or lost records)."""
        deadline = time.monotonic() + timeout_s
        last, last_change = self.consumed(), time.monotonic()
        while time.monotonic() < deadline:
            now_count = self.consumed()
            if now_count >= expected:
                return True
            if now_count != last:
                last, last_change = now_count, time.monotonic()
            elif time.monotonic() - last_change >= quiet_s:
                return False
            time.sleep(0.05)
        return False

    def finish(self, join_timeout_s: float = 30.0) -> tuple[Consumed, list[str], int]:
        """Stop them and collect what they read, their problems and short values."""
        self.stop.set()
        parts, problems, short = [], [], 0
        for process, plan in zip(self.processes, self.plans, strict=True):
            process.join(join_timeout_s)
            if process.is_alive():
                process.kill()
                process.join(5)
                problems.append(f"consumer {plan.index} did not stop; its records are lost")
                continue
            try:
                with np.load(plan.out_path + ".npz") as data:
                    parts.append(Consumed(**{k: data[k] for k in data.files}))
                status = json.loads(Path(plan.out_path + ".json").read_text())
            except (OSError, ValueError) as exc:
                problems.append(f"consumer {plan.index} ended without results "
                                f"(exit code {process.exitcode}): {exc}")
                continue
            problems.extend(p for p in status["problems"] if p not in problems)
            short += int(status["short_values"])
        return Consumed.concat(parts), problems, short

    def kill(self) -> None:
        """Stop at once (the run failed)."""
        self.stop.set()
        for process in self.processes:
            process.join(5)
            if process.is_alive():
                process.kill()
