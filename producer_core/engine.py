"""The asyncio loop that wires generator -> accumulator -> linger policy -> wire.

One coroutine generates messages on the rate schedule and asks the policy what to send;
responses arrive as callbacks that account for every message (acknowledged, retried or
failed with a reason) and wake the loop, since a freed request slot may let a ready
partition go. Everything the run measured ends up in a `Results`.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
from aiokafka.errors import for_code
from aiokafka.protocol.produce import ProduceRequest

from producer_core.accumulator import Accumulator, ProducerBatch, TopicPartition
from producer_core.config import ProducerSettings
from producer_core.errors import BrokerError
from producer_core.generator import Generator
from producer_core.intervals import IntervalRecorder, engine_live
from producer_core.linger import LingerPolicy, RequestPlan, make_policy
from producer_core.memory import BatchMemory, BlockedGenerator
from producer_core.message_source import run_target_rate
from producer_core.metrics import RequestRecord, Results, RunMetrics
from producer_core.partitioners import Partitioning
from producer_core.run_checks import check_message_fits, largest_record, run_warnings
from producer_core.transport import Cluster
from producer_core.workload import Workload

PROGRESS_INTERVAL_S = 0.25
START_LEAD_S = 0.02
"""The schedule starts this long after setup, so message 0 is not already late."""


@dataclass(frozen=True)
class Progress:
    """A snapshot for live displays."""

    elapsed_s: float
    generated: int
    acknowledged: int
    failed: int
    in_flight_requests: int
    requests_sent: int
    p99_ms: float
    target_messages: int | None


@dataclass
class Delivery:
    """Where one acknowledged batch landed: for tests that read the topic back."""

    topic: str
    partition: int
    base_offset: int
    message_ids: list[int]


class Engine:
    """One run of one workload in one mode against one cluster."""

    def __init__(
        self,
        workload: Workload,
        settings: ProducerSettings,
        mode: str,
        cluster: Cluster,
        on_progress: Callable[[Progress], None] | None = None,
        deliveries: list[Delivery] | None = None,
    ) -> None:
        self.workload = workload
        self.settings = settings
        self.mode = mode
        self.cluster = cluster
        self.on_progress = on_progress
        self.deliveries = deliveries
        self.metrics = RunMetrics()
        self.loop = asyncio.get_event_loop()
        self._wake_event = asyncio.Event()
        self._in_flight: dict[int, int] = {}
        self._pending_retries = 0
        self._generation_done = False
        self._refreshing: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Future[Any]] = set()
        self.start = 0.0
        self._warmup_until = 0.0
        self.topic_created = False

    # ----------------------------------------------------------------- setup
    async def _setup(self) -> None:
        check_message_fits(self.workload.topic_specs(), self.settings.max_request_size,
                           "max.request.size")
        await self.cluster.connect()
        specs = self.workload.topic_specs()
        self.slots: list[TopicPartition] = []
        self.leaders: list[int] = []
        first_slots = []
        for spec in specs:
            created = await self.cluster.ensure_topic(spec.name, spec.partitions)
            self.topic_created = self.topic_created or created
        await self.cluster.refresh_metadata([spec.name for spec in specs])
        assert self.cluster.view is not None
        for spec in specs:
            first_slots.append(len(self.slots))
            self.slots.extend(TopicPartition(spec.name, p) for p in range(spec.partitions))
            self.leaders.extend(self.cluster.view.leaders[spec.name])
        self.accumulator = Accumulator(
            self.slots, self.settings.batch_size, self.settings["compression.type"]
        )
        self.policy: LingerPolicy = make_policy(
            self.mode, self.accumulator, self.leaders, self.settings, specs
        )
        self.generator = Generator(self.workload, first_slots, self.accumulator, self.policy,
                                   self.metrics, Partitioning.from_settings(self.settings))
        self.slot_metrics = [self.metrics.topics[tp.topic] for tp in self.slots]
        for broker in set(self.leaders):
            await self.cluster.connection(broker)
            self._in_flight[broker] = 0
        self.blocked = BlockedGenerator(self.settings["max.block.ms"] / 1000.0, self.metrics)
        self.batch_memory: BatchMemory | None = None
        if self.mode == "java":  # Java's BufferPool: batch.size per batch until its response
            record = max(largest_record(spec) for spec in specs)
            self.batch_memory = BatchMemory(self.settings["buffer.memory"],
                                            max(self.settings.batch_size, record))

    # ------------------------------------------------------------------ run
    async def run(self) -> Results:
        await self._setup()
        progress_task = interval_task = None
        try:
            self.start = self.loop.time() + START_LEAD_S
            if self.workload.start_at is not None:  # a share of a distributed run
                self.start = self.loop.time() + max(0.0, self.workload.start_at - time.time())
                # wait for the common start: an unthrottled schedule is due at once
                await asyncio.sleep(max(0.0, self.start - self.loop.time()))
            self._warmup_until = self.start + self.workload.warmup_s
            self.generator.begin(self.start)
            self.policy.begin(self.start)
            self._intended = self.generator.intended_total()
            if self.on_progress is not None:
                progress_task = asyncio.ensure_future(self._report_progress())
            intervals = IntervalRecorder.for_callback(self.on_progress)
            intervals.begin(self.start, self.metrics, engine_live(self.metrics))
            interval_task = asyncio.ensure_future(intervals.run_async(self.loop.time))
            await self._generate()
            self._generation_done = True
            self.policy.start_flush()
            await self._drain_everything()
            end = self.loop.time()
            intervals.finish(end)
        finally:
            if progress_task is not None:
                progress_task.cancel()
            if interval_task is not None:
                interval_task.cancel()
            for task in list(self._tasks):
                task.cancel()
            await self.cluster.close()
        return self._results(end)

    async def _generate(self) -> None:
        loop = self.loop
        generator = self.generator
        blocked_gen = self.blocked
        while True:
            now = loop.time()
            due = generator.due(now)
            exhausted = due > 0 and self._memory_full()
            if exhausted:  # wait for memory; a message that waited max.block.ms fails
                failed = blocked_gen.wait(now, due)
                if failed:
                    generator.skip(failed, now, "max.block.ms")
            elif due > 0:
                blocked_gen.release(now)
            self.policy.set_memory_exhausted(exhausted)
            if due > 0 and not exhausted:
                generator.generate(now)
            # the oldest message not appended yet; with an unthrottled topic one always is
            self.policy.set_backlog(-math.inf if generator.unthrottled else generator.next_due())
            self._dispatch(self.policy.poll(now, self._free_slots()))
            if generator.finished(now):
                blocked_gen.release(now)
                return
            blocked = self._memory_full()
            next_due = generator.next_due()
            behind = next_due is not None and next_due <= loop.time()
            if not blocked and (generator.unthrottled or behind):
                await asyncio.sleep(0)
                continue
            wake = self.policy.next_wakeup()
            if blocked and (blocked_gen.blocked or generator.unthrottled):
                # blocked on memory: wait for a response to free some, or max.block.ms
                next_due = blocked_gen.deadline()
            candidates = [t for t in (wake, next_due) if t is not None]
            await self._sleep_until(min(candidates) if candidates else None)

    def _buffered_bytes(self) -> int:
        return self.accumulator.queued_bytes

    def _memory_full(self) -> bool:
        """No room for the next message: buffer.memory (Java-style in mode java) is used up."""
        if self.batch_memory is not None:
            return self.batch_memory.exhausted(self.accumulator.queued_batches)
        return self.accumulator.queued_bytes >= self.settings["buffer.memory"]

    def _release_batches(self, count: int) -> None:
        """Batches whose outcome is settled (or that are back in the queue) free their memory."""
        if self.batch_memory is not None:
            self.batch_memory.held -= count

    async def _drain_everything(self) -> None:
        while True:
            now = self.loop.time()
            self._dispatch(self.policy.poll(now, self._free_slots()))
            idle = not any(self._in_flight.values()) and self._pending_retries == 0
            if self.accumulator.empty and idle:
                return
            await self._sleep_until(self.policy.next_wakeup())

    async def _sleep_until(self, when: float | None) -> None:
        """Sleep until `when` or until a response wakes the loop, whichever comes first."""
        event = self._wake_event
        if event.is_set():
            event.clear()
            await asyncio.sleep(0)
            return
        handle = self.loop.call_at(when, event.set) if when is not None else None
        try:
            await event.wait()
        finally:
            event.clear()
            if handle is not None:
                handle.cancel()

    def _wake(self) -> None:
        self._wake_event.set()

    def _free_slots(self) -> dict[int, int]:
        limit = self.settings.max_in_flight
        return {b: limit - n for b, n in self._in_flight.items() if limit - n > 0}

    # ----------------------------------------------------------------- send
    def _dispatch(self, plans: list[RequestPlan]) -> None:
        for plan in plans:
            self._send(plan)

    def _send(self, plan: RequestPlan) -> None:
        now = self.loop.time()
        if self.batch_memory is not None:
            self.batch_memory.held += len(plan.batches)
        by_topic: dict[str, list[tuple[int, bytes]]] = {}
        records = size = 0
        attempt = 0
        oldest = now
        lingers: list[float] = []
        for batch in plan.batches:
            tp = self.slots[batch.slot]
            payload = batch.seal()
            by_topic.setdefault(tp.topic, []).append((tp.partition, payload))
            records += batch.record_count
            size += len(payload)
            batch.attempts += 1
            attempt = max(attempt, batch.attempts)
            oldest = min(oldest, batch.created)
            if batch.attempts == 1:
                lingers.append(now - batch.created)
        acks = self.settings.acks
        request = ProduceRequest(
            None, acks, int(self.settings.request_timeout_s * 1000), list(by_topic.items())
        )
        try:
            conn = self.cluster._conns[plan.broker]
            future = conn.send(request, expect_response=acks != 0)
        except Exception as exc:  # noqa: BLE001 - the connection is gone; retry the batches
            self._settle_failed(plan.batches, _reason(exc), now)
            self._schedule_refresh()
            return
        record = RequestRecord(
            send_time_s=now - self.start, broker=plan.broker, partitions=len(plan.batches),
            records=records, bytes=size, reason=plan.reason,
            linger_ms=(now - oldest) * 1000, attempt=attempt,
        )
        self.metrics.record_request(record)
        self.metrics.batch_linger.record_seconds(np.asarray(lingers))
        self._count_topics(plan.batches)
        self._in_flight[plan.broker] += 1
        task = asyncio.ensure_future(future)
        self._tasks.add(task)
        task.add_done_callback(partial(self._on_response, plan, record, now))

    def _on_response(
        self, plan: RequestPlan, record: RequestRecord, sent_at: float, task: asyncio.Future[Any]
    ) -> None:
        self._tasks.discard(task)
        self._in_flight[plan.broker] -= 1
        self._wake()
        if task.cancelled():
            return
        now = self.loop.time()
        exc = task.exception()
        if exc is not None:
            self.policy.on_response(plan.broker, now - sent_at, now, 0, True)
            self._settle_failed(plan.batches, _reason(exc), now)
            self._schedule_refresh()
            return
        record.rtt_ms = (now - sent_at) * 1000
        self.metrics.rtt.record_us(int(record.rtt_ms * 1000))
        response = task.result()
        if response is None:  # acks=0: written is as acknowledged as it gets
            self.policy.on_response(plan.broker, now - sent_at, now, 0, False)
            self._acknowledge_all(plan.broker, [(batch, -1) for batch in plan.batches], now)
            return
        outcome: dict[tuple[str, int], tuple[int, int]] = {}
        for topic, partitions in response.topics:
            for partition_response in partitions:
                partition, error_code, offset = partition_response[:3]
                outcome[(topic, partition)] = (error_code, offset)
        leader_trouble = False
        acknowledged: list[tuple[ProducerBatch, int]] = []
        for batch in plan.batches:
            tp = self.slots[batch.slot]
            error_code, offset = outcome.get((tp.topic, tp.partition), (-2, -1))
            if error_code == 0:
                acknowledged.append((batch, offset))
            elif error_code == -2:
                self._settle_failed([batch], "missing_in_response", now)
            else:
                error = for_code(error_code)
                leader_trouble = True
                self._settle_failed([batch], error.__name__, now, retriable=error.retriable)
        self.policy.on_response(plan.broker, now - sent_at, now,
                                getattr(response, "throttle_time_ms", 0) or 0,
                                len(acknowledged) < len(plan.batches))
        self._acknowledge_all(plan.broker, acknowledged, now)
        if leader_trouble:
            self._schedule_refresh()

    def _count_topics(self, batches: list[ProducerBatch]) -> None:
        """Per-topic request figures: a request counts once for each topic it carries."""
        seen = set()
        for batch in batches:
            topic = self.slot_metrics[batch.slot]
            topic.records_sent += batch.record_count
            topic.bytes_sent += batch.size_bytes()
            if id(topic) not in seen:
                seen.add(id(topic))
                topic.requests += 1

    def _acknowledge_all(
        self, broker: int, acknowledged: list[tuple[ProducerBatch, int]], now: float
    ) -> None:
        """Account acknowledged batches; one histogram pass per response and topic."""
        if not acknowledged:
            return
        by_topic: dict[int, list[np.ndarray]] = {}
        for batch, _ in acknowledged:
            topic = self.slot_metrics[batch.slot]
            topic.acknowledged += batch.record_count
            by_topic.setdefault(id(topic), []).append(
                np.frombuffer(batch.intended, dtype=np.float64))
        topics = {id(self.slot_metrics[b.slot]): self.slot_metrics[b.slot] for b, _ in acknowledged}
        all_latencies = []
        for key, arrays in by_topic.items():
            intended = np.concatenate(arrays) if len(arrays) > 1 else arrays[0]
            if self.workload.warmup_s:
                intended = intended[intended >= self._warmup_until]
            latencies = now - intended
            self.metrics.latency.record_seconds(latencies)
            topics[key].latency.record_seconds(latencies)
            all_latencies.append(latencies)
        self.policy.on_acknowledged(
            broker, np.concatenate(all_latencies) if len(all_latencies) > 1
            else all_latencies[0], now)
        self._release_batches(len(acknowledged))
        for batch, offset in acknowledged:
            self.metrics.messages_acked += batch.record_count
            if self.deliveries is not None:
                tp = self.slots[batch.slot]
                self.deliveries.append(
                    Delivery(tp.topic, tp.partition, offset, batch.ids.tolist()))

    def _settle_failed(
        self, batches: list[ProducerBatch], reason: str, now: float, retriable: bool = True
    ) -> None:
        """Retry each batch if allowed and in time; otherwise count its messages as failed."""
        settings = self.settings
        for batch in batches:
            age = now - batch.created
            final = (not retriable or batch.attempts > settings["retries"]
                     or age + settings["retry.backoff.ms"] / 1000 > settings.delivery_timeout_s)
            if final:
                self.slot_metrics[batch.slot].failed += batch.record_count
            if not retriable:
                self.metrics.fail(batch.record_count, reason)
                self._release_batches(1)
            elif batch.attempts > settings["retries"]:
                self.metrics.fail(batch.record_count, f"{reason} (retries exhausted)")
                self._release_batches(1)
            elif age + settings["retry.backoff.ms"] / 1000 > settings.delivery_timeout_s:
                self.metrics.fail(batch.record_count, f"{reason} (delivery.timeout.ms)")
                self._release_batches(1)
            else:
                self._pending_retries += 1
                self.loop.call_later(
                    settings["retry.backoff.ms"] / 1000, self._requeue, batch
                )

    def _requeue(self, batch: ProducerBatch) -> None:
        self._pending_retries -= 1
        self._release_batches(1)
        self.accumulator.requeue_front(batch)
        self.policy.on_requeue(batch.slot, self.loop.time())
        self._wake()

    def _schedule_refresh(self) -> None:
        if self._refreshing is None or self._refreshing.done():
            self._refreshing = asyncio.ensure_future(self._refresh_leaders())
            self._tasks.add(self._refreshing)

    async def _refresh_leaders(self) -> None:
        """After leader errors or a lost connection: re-read leaders, reconnect, carry on."""
        try:
            names = [spec.name for spec in self.workload.topic_specs()]
            view = await self.cluster.refresh_metadata(names)
            leaders = [leader for name in names for leader in view.leaders.get(name, [])]
            if len(leaders) != len(self.leaders):
                raise BrokerError("metadata is missing partitions; asking again")
            for broker in set(leaders):
                if broker >= 0:
                    await self.cluster.connection(broker)
                    self._in_flight.setdefault(broker, 0)
            self.leaders[:] = leaders
            self.policy.set_leaders(self.leaders)
        except (TimeoutError, BrokerError, OSError, Exception):  # noqa: BLE001
            await asyncio.sleep(self.settings["retry.backoff.ms"] / 1000)
            self._refreshing = None
            self._schedule_refresh()
            return
        finally:
            self._wake()

    # -------------------------------------------------------------- results
    async def _report_progress(self) -> None:
        assert self.on_progress is not None
        while True:
            await asyncio.sleep(PROGRESS_INTERVAL_S)
            m = self.metrics
            self.on_progress(Progress(
                elapsed_s=max(0.0, self.loop.time() - self.start),
                generated=m.messages_generated,
                acknowledged=m.messages_acked,
                failed=m.messages_failed,
                in_flight_requests=sum(self._in_flight.values()),
                requests_sent=len(m.requests),
                p99_ms=m.latency.percentile_ms(99) if m.latency.count else 0.0,
                target_messages=self._intended,
            ))

    def _results(self, end: float) -> Results:
        warnings = run_warnings(self.metrics, self.workload, "buffer.memory")
        warnings.extend(self.settings.warnings)
        extra: dict[str, Any] = {"messages_intended": self._intended
                                 or self.metrics.messages_generated,
                                 "target_msgs_per_s": run_target_rate(self.workload)}
        collector = self.policy.stats()
        if collector:
            extra["json"] = {self.policy.stats_key: collector}
        duration = max(end - self.start, 1e-9)
        return Results(
            mode=self.mode,
            workload=self.workload.as_dict(),
            settings=self.settings.as_dict(),
            bootstrap=self.cluster.bootstrap,
            broker="",
            duration_s=duration,
            metrics=self.metrics,
            warnings=warnings,
            extra=extra,
        )


def _reason(exc: BaseException) -> str:
    if isinstance(exc, asyncio.TimeoutError):
        return "request_timeout"
    return type(exc).__name__


async def run_async(
    workload: Workload,
    settings: ProducerSettings,
    mode: str,
    bootstrap: str,
    on_progress: Callable[[Progress], None] | None = None,
    deliveries: list[Delivery] | None = None,
) -> Results:
    """Run one workload in one mode against the cluster at `bootstrap`."""
    if mode == "librdkafka":  # the real client as a reference, same generator and Results
        from producer_core import librdkafka_engine

        return await librdkafka_engine.run_async(
            workload, settings, mode, bootstrap, on_progress, deliveries)
    cluster = Cluster.for_settings(bootstrap, settings)
    engine = Engine(workload, settings, mode, cluster, on_progress, deliveries)
    return await engine.run()


def run(
    workload: Workload,
    settings: ProducerSettings,
    mode: str,
    bootstrap: str,
    on_progress: Callable[[Progress], None] | None = None,
    deliveries: list[Delivery] | None = None,
) -> Results:
    """The engine as a library call: `run(workload, settings, mode, bootstrap) -> Results`."""
    return asyncio.run(run_async(workload, settings, mode, bootstrap, on_progress, deliveries))
