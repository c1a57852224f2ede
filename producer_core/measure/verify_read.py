"""`--verify`'s I/O: end offsets before a run, and the run's records read back after it.

Reading uses assign + fetch from the recorded offsets (no consumer group: Tansu's group
subscribe may not deliver). Metadata is asked for all topics, never for named ones, so
looking at a topic the run has yet to create cannot auto-create it with the wrong number
of partitions. Tansu lists a partition's end as its last batch's base offset, so the
offsets before a run are found by fetching past the listed ones; after it, the read goes on
until it has at least as many records as were acknowledged (or the end offsets promise)
and a fetch comes back empty, or, when the broker lost records, until it has caught up
with every high watermark and stayed quiet for STALL_S; READ_TIMEOUT_S bounds it all.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition

from producer_core.engine.core.ledger import Delivery
from producer_core.errors import BrokerError
from producer_core.measure.verify import COUNTS, check_topic, idempotence_enabled, verify_document
from producer_core.workload.workload import ID_BYTES, SizeSpec, Workload, message_id_of

Offsets = dict[tuple[str, int], int]

READ_TIMEOUT_S = 60.0
"""Longest a read-back may take; past it the report says read_complete: false."""
END_PROBE_MS = 500
"""How long an empty fetch beyond the listed end offsets must stay empty."""
END_PROBE_LIMIT_S = 30.0
"""Longest the search past the listed end offsets may take."""
STALL_S = 3.0
"""Fewer records than acknowledged, caught up with the high watermarks, nothing new this
long: the broker holds no more (it lost some); the read is complete."""
QUIET_POLL_MS = 1000
"""An empty fetch this long after the expected count means the topic holds no more."""


def _consumer(bootstrap: str, client: Mapping[str, Any],
              read_committed: bool = False) -> AIOKafkaConsumer:
    """A reader with the run's own security (`client`: aiokafka keyword arguments);
    `read_committed` for a transactional run (records of aborted transactions hidden)."""
    return AIOKafkaConsumer(
        isolation_level="read_committed" if read_committed else "read_uncommitted",
        bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
        auto_offset_reset="earliest", fetch_max_bytes=16 * 1024 * 1024,
        max_partition_fetch_bytes=4 * 1024 * 1024, request_timeout_ms=10_000, **client,
    )


async def _stop(consumer: AIOKafkaConsumer) -> None:
    """Stop a consumer; aiokafka 0.14 re-raises the CancelledError of its own fetch task
    when one was backing off after an error (a restarted broker), which is not ours."""
    try:
        await consumer.stop()
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise


async def _end_offsets(consumer: AIOKafkaConsumer, topics: Mapping[str, int]
                       ) -> tuple[Offsets, list[TopicPartition]]:
    """Listed end offset of every partition of `topics` (0 for partitions not there yet),
    and the partitions that exist."""
    cluster = await consumer._client.fetch_all_metadata()  # all topics: never auto-creates
    tps = [TopicPartition(name, p) for name in topics
           for p in sorted(cluster.partitions_for_topic(name) or ())]
    offsets: Offsets = {(name, p): 0 for name, count in topics.items() for p in range(count)}
    if tps:
        ends = await asyncio.wait_for(consumer.end_offsets(tps), 30)
        offsets.update({(tp.topic, tp.partition): int(end) for tp, end in ends.items()})
    return offsets, tps


def _all_fetched(consumer: AIOKafkaConsumer, tps: list[TopicPartition]) -> bool:
    """Every partition has had a fetch response (its high watermark is known)."""
    return all(consumer.highwater(tp) is not None for tp in tps)


async def _past_listed_end(consumer: AIOKafkaConsumer, listed: Offsets,
                           tps: list[TopicPartition]) -> Offsets:
    """The true end offsets: fetch from the listed ones until a fetch comes back empty.

    Tansu 0.x answers ListOffsets(latest) with the base offset of the partition's last
    batch, not one past its last record; reading the few records beyond it finds the end.
    On Kafka the listed end is exact and this costs one empty fetch.
    """
    ends = dict(listed)
    if not tps:  # (assigning a partition that does not exist would auto-create its topic)
        return ends
    consumer.assign(tps)
    for tp in tps:
        consumer.seek(tp, listed[(tp.topic, tp.partition)])
    loop = asyncio.get_running_loop()
    deadline = loop.time() + END_PROBE_LIMIT_S
    while loop.time() < deadline:
        batch = await consumer.getmany(timeout_ms=END_PROBE_MS, max_records=100_000)
        if not batch and _all_fetched(consumer, tps):
            break
        for tp, records in batch.items():
            key = (tp.topic, tp.partition)
            if records:
                ends[key] = max(ends[key], records[-1].offset + 1)
    return ends


async def end_offsets_async(bootstrap: str, topics: Mapping[str, int],
                            client: Mapping[str, Any] | None = None) -> Offsets:
    consumer = _consumer(bootstrap, client or {})
    try:
        await consumer.start()
        return await _past_listed_end(consumer, *await _end_offsets(consumer, topics))
    finally:
        await _stop(consumer)


def end_offsets(bootstrap: str, topics: Mapping[str, int],
                client: Mapping[str, Any] | None = None) -> Offsets:
    """One past the last record of each partition of `topics` (name -> partition count)."""
    try:
        return asyncio.run(end_offsets_async(bootstrap, topics, client))
    except Exception as exc:  # noqa: BLE001 - any client failure is one clear message
        raise BrokerError(f"--verify could not read the end offsets at {bootstrap} before "
                          f"the run: {type(exc).__name__}: {exc}.") from exc


async def read_back_async(bootstrap: str, starts: Offsets, expected: int,
                          timeout_s: float = READ_TIMEOUT_S,
                          client: Mapping[str, Any] | None = None,
                          read_committed: bool = False,
                          ) -> tuple[dict[tuple[str, int], list[int]], bool]:
    """Message ids per partition, in offset order, from `starts`; and whether the read is
    complete: it reached the expected count and then an empty fetch, or (acknowledged
    records lost) it caught up with every partition's high watermark and stayed quiet
    for STALL_S; else `timeout_s` ended it. With `read_committed` the end offsets also
    count aborted records and transaction markers, so only `expected` is the target."""
    consumer = _consumer(bootstrap, client or {}, read_committed)
    found: dict[tuple[str, int], list[int]] = {key: [] for key in starts}
    try:
        await consumer.start()
        tps = [TopicPartition(topic, p) for topic, p in starts]
        consumer.assign(tps)
        position = dict(starts)
        for tp in tps:
            consumer.seek(tp, starts[(tp.topic, tp.partition)])
        later, _ = await _end_offsets(consumer, _partition_counts(starts))
        promised = sum(max(0, later[key] - starts[key]) for key in starts)
        target = expected if read_committed else max(expected, promised)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        last_data = loop.time()
        total = 0
        complete = False
        while loop.time() < deadline:
            wait_ms = QUIET_POLL_MS if total >= target else 500
            batch = await consumer.getmany(timeout_ms=wait_ms, max_records=100_000)
            if not batch and _all_fetched(consumer, tps):
                caught_up = all(position[(tp.topic, tp.partition)] >= consumer.highwater(tp)
                                for tp in tps)
                if total >= target or (caught_up and loop.time() - last_data >= STALL_S):
                    complete = True
                    break
            for tp, records in batch.items():
                if not records:
                    continue
                key = (tp.topic, tp.partition)
                found[key].extend(message_id_of(r.value) for r in records if r.value is not None)
                position[key] = records[-1].offset + 1
                total += len(records)
                last_data = loop.time()
    finally:
        await _stop(consumer)
    return found, complete


def _partition_counts(starts: Offsets) -> dict[str, int]:
    counts: dict[str, int] = {}
    for topic, partition in starts:
        counts[topic] = max(counts.get(topic, 0), partition + 1)
    return counts


def verify_run(bootstrap: str, starts: Offsets, deliveries: list[Delivery],
               document: Mapping[str, Any], timeout_s: float = READ_TIMEOUT_S,
               client: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Read the run's partitions back and return the results JSON `verify` object."""
    acked: dict[str, list[int]] = {topic: [] for topic, _ in starts}
    aborted: dict[str, list[int]] = {topic: [] for topic, _ in starts}
    for delivery in deliveries:
        (aborted if delivery.aborted else acked).setdefault(
            delivery.topic, []).extend(delivery.message_ids)
    transactional = bool(document.get("transactions"))
    expected = sum(len(ids) for ids in acked.values())
    began = time.monotonic()
    try:
        found, complete = asyncio.run(
            read_back_async(bootstrap, starts, expected, timeout_s, client, transactional))
    except Exception as exc:  # noqa: BLE001 - any client failure is one clear message
        raise BrokerError(f"--verify could not read the topics back from {bootstrap}: "
                          f"{type(exc).__name__}: {exc}.") from exc
    per_topic: dict[str, dict[int, list[int]]] = {topic: {} for topic in acked}
    for (topic, partition), ids in found.items():
        per_topic[topic][partition] = ids
    checks = {topic: check_topic(acked[topic], per_topic[topic], aborted.get(topic, ()))
              for topic in acked}
    return verify_document(checks, idempotence_enabled(document), complete,
                           time.monotonic() - began, transactional)


def _smallest(sizes: SizeSpec) -> int:
    if sizes.kind == "uniform":
        return sizes.minimum
    if sizes.kind == "weighted":
        return min(sizes.sizes)
    return sizes.size


def verify_unsupported(workload: Workload) -> str | None:
    """Why this workload's messages cannot be verified (values too short for an id)."""
    short = [spec.name for spec in workload.topic_specs() if _smallest(spec.sizes) < ID_BYTES]
    if short:
        return (f"--verify needs every message value to carry its {ID_BYTES}-byte id, but "
                f"topic(s) {', '.join(short)} have values smaller than {ID_BYTES} bytes. "
                f"Use --message-size {ID_BYTES} or more.")
    return None


class VerifyingRun:
    """Wraps an engine `run`: offsets before, deliveries during, read-back after.

    The `verify` object lands in the run's results JSON through `Results.verify`,
    so `produce` and `compare-modes` (which builds documents from Results) both carry it.
    A run that did not complete (stopped by a signal) is not read back.
    """

    def __init__(self, run: Callable[..., Any], timeout_s: float = READ_TIMEOUT_S) -> None:
        self._run = run
        self.timeout_s = timeout_s

    def __call__(self, workload: Workload, settings: Any, mode: str, bootstrap: str,
                 on_progress: Any = None, **kwargs: Any) -> Any:
        topics = {spec.name: spec.partitions for spec in workload.topic_specs()}
        client = settings.security.aiokafka_kwargs()
        starts = end_offsets(bootstrap, topics, client)
        deliveries: list[Delivery] = []
        results = self._run(workload, settings, mode, bootstrap, on_progress,
                            deliveries=deliveries, **kwargs)
        document = results.to_dict()
        stop = kwargs.get("stop")
        if document.get("complete") is False or (stop is not None and stop.is_set()):
            return results
        began = time.monotonic()
        try:
            verify = verify_run(bootstrap, starts, deliveries, document, self.timeout_s, client)
        except BrokerError as exc:
            # The run's own outcome (its failed and unknown messages) is a fact worth keeping.
            verify = failed_read_document(deliveries, document, str(exc),
                                          time.monotonic() - began)
        results.verify = verify
        return results


def failed_read_document(deliveries: list[Delivery], document: Mapping[str, Any],
                         reason: str, read_s: float) -> dict[str, Any]:
    """The `verify` object of a read-back that failed: nothing was checked, and why."""
    acked = sum(len(d.message_ids) for d in deliveries if not d.aborted)
    counts = {name: 0 for name in COUNTS}
    counts["acknowledged"] = acked
    return {**counts, "idempotence": idempotence_enabled(document), "read_complete": False,
            "read_s": round(read_s, 3), "problems": [], "read_error": reason, "topics": {}}
