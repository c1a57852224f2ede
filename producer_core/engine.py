"""The asyncio loop that wires generator -> accumulator -> linger policy -> wire.

One coroutine generates messages on the rate schedule and asks the policy what to send;
responses arrive as callbacks that account for every message (acknowledged, retried or
failed with a reason) and wake the loop, since a freed request slot may let a ready
partition go. Everything the run measured ends up in a `Results`.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
from aiokafka.errors import KafkaConnectionError

from producer_core.accumulator import Accumulator, ProducerBatch, TopicPartition
from producer_core.config import ProducerSettings
from producer_core.errors import BrokerError
from producer_core.gc_quiet import quiet_gc
from producer_core.generator import Generator
from producer_core.intervals import IntervalRecorder, engine_live
from producer_core.linger import LingerPolicy, RequestPlan
from producer_core.linger.base import LatencyFeedback, PollContext, Reporting, RunStart
from producer_core.memory import BatchMemory, BlockedGenerator
from producer_core.metrics import RequestRecord, Results, RunMetrics, Section
from producer_core.modes import make_policy
from producer_core.modes import mode as mode_spec
from producer_core.partitioners import Partitioning
from producer_core.precise_loop import new_event_loop
from producer_core.produce_wire import ProduceRequest
from producer_core.run_checks import check_message_fits, largest_record, run_warnings
from producer_core.run_types import (  # re-exported: callers import them from here
    INTERRUPTED,
    PROGRESS_INTERVAL_S,
    START_LEAD_S,
    STOP_CHECK_S,
    STOP_GRACE_S,
    Delivery,
    Progress,
    phased_start,
)
from producer_core.sender import (
    Acknowledge,
    Action,
    CloseConnection,
    Fail,
    Hold,
    InitProducerId,
    RefreshMetadata,
    Retry,
    Sender,
    SenderConfig,
    Unknown,
    Written,
)
from producer_core.transactions import TransactionConfig, Transactions
from producer_core.transport import Cluster
from producer_core.txn_rpc import Coordinator
from producer_core.workload import Workload

GENERATOR_PASS_INTERVAL_S = 0.00025
"""Least time between two *small* generator passes that wait for the schedule. Each pass
costs tens of microseconds whatever it appends; at 20,000 msg/s a pass per message kept
the process busy (~9,000 passes/s, 0.75 of a core) and its broker, sharing the two cores,
answered more slowly. After a pass of fewer than `SMALL_PASS_MESSAGES` the next waits at
least this long, so it appends a few messages, each at most this much late (counted as
generator lag, and in latency, which starts at the intended time). Larger passes are not
paced: at 200,000 msg/s pacing them raised the lag p99 from ~0.45 to ~1 ms. Linger and
request deadlines are never paced."""
SMALL_PASS_MESSAGES = 8
"""A pass appending fewer messages than this is small: the next one is paced."""


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
        stop: threading.Event | None = None,
    ) -> None:
        self.workload = workload
        self.stop = stop
        self.settings = settings
        self.mode = mode
        self.cluster = cluster
        self.on_progress = on_progress
        self.deliveries = deliveries
        self.metrics = RunMetrics()
        self.loop = asyncio.get_event_loop()
        self._wake_event = asyncio.Event()
        self._brokers: set[int] = set()
        self._generation_done = False
        self._stopping = False
        self._refreshing: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Future[Any]] = set()
        self.start = 0.0
        self._warmup_until = 0.0
        self.topic_created = False
        self.txn: Transactions | None = None
        self.transactional_id: str | None = None
        """The id ProduceRequests carry (a share of a distributed run adds its index)."""
        self._fatal_error: BrokerError | None = None
        self._txn_deliveries_from = 0
        # what the policy reads at each poll (`PollContext`), kept between polls
        self._flushing = False
        self._memory_exhausted = False
        self._backlog: float | None = None

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
            self.slots, mode_spec(self.mode).accumulator_batch_size(self.settings),
            self.settings["compression.type"])
        self.policy: LingerPolicy = make_policy(
            self.mode, self.accumulator, self.leaders, self.settings, specs
        )
        self._on_acknowledged = (self.policy.on_acknowledged
                                 if isinstance(self.policy, LatencyFeedback) else None)
        self.generator = Generator(self.workload, first_slots, self.accumulator, self.policy,
                                   self.metrics, Partitioning.from_settings(self.settings))
        self.slot_metrics = [self.metrics.topics[tp.topic] for tp in self.slots]
        for broker in set(self.leaders):
            await self.cluster.connection(broker)
            self._brokers.add(broker)
        settings = self.settings
        self.sender = Sender(self.slots, SenderConfig(
            acks=settings.acks, idempotent=settings.idempotent, retries=settings["retries"],
            retry_backoff_s=settings["retry.backoff.ms"] / 1000,
            request_timeout_s=settings.request_timeout_s,
            delivery_timeout_s=settings.delivery_timeout_s, max_in_flight=settings.max_in_flight,
            transactional=settings.transactional_id is not None,
        ))
        if settings.transactional_id is not None:
            transactional_id = settings.transactional_id
            if self.workload.share_count > 1:  # each share is its own producer: no fencing
                transactional_id = f"{transactional_id}-{self.workload.share_index}"
            await self._init_transactions(transactional_id)
        elif settings.idempotent:
            self.sender.on_producer_id(*await self.cluster.init_producer_id())
        self.blocked = BlockedGenerator(self.settings["max.block.ms"] / 1000.0, self.metrics)
        self.batch_memory: BatchMemory | None = None
        if mode_spec(self.mode).buffer_pool:  # batch.size per batch until its outcome
            record = max(largest_record(spec) for spec in specs)
            self.batch_memory = BatchMemory(self.settings["buffer.memory"],
                                            max(self.settings.batch_size, record))

    # ------------------------------------------------------------------ run
    async def run(self) -> Results:
        await self._setup()
        with quiet_gc():  # no collection of the setup's objects mid-run (gc_quiet.py)
            return await self._run()

    async def _run(self) -> Results:
        progress_task = interval_task = None
        try:
            self.start = phased_start(self.loop.time() + START_LEAD_S)
            if self.workload.start_at is not None:  # a share of a distributed run
                self.start = self.loop.time() + max(0.0, self.workload.start_at - time.time())
                # wait for the common start: an unthrottled schedule is due at once
                await asyncio.sleep(max(0.0, self.start - self.loop.time()))
            self._warmup_until = self.start + self.workload.warmup_s
            self.generator.begin(self.start)
            if isinstance(self.policy, RunStart):
                self.policy.begin(self.start)
            if self.txn is not None:
                self.txn.begin(self.start)
            self._intended = self.generator.intended_total()
            if self.on_progress is not None:
                progress_task = asyncio.ensure_future(self._report_progress())
            intervals = IntervalRecorder.for_callback(self.on_progress)
            intervals.begin(self.start, self.metrics, engine_live(self.metrics))
            interval_task = asyncio.ensure_future(intervals.run_async(self.loop.time))
            if self.stop is not None:
                self._spawn(self._watch_stop())
            await self._generate()
            self._generation_done = True
            if self.txn is not None and not self._stopping:
                await self._end_transaction()
            else:
                self._flushing = True
                await self._drain_everything()
            if self._stopping:
                await self._interrupt()
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
        catch_up = False
        while not self._stopping:
            now = loop.time()
            self._apply(self.sender.poll(now))
            due = generator.due(now)
            exhausted = due > 0 and self._memory_full()
            if exhausted:  # wait for memory; a message that waited max.block.ms fails
                failed = blocked_gen.wait(now, due)
                if failed:
                    generator.skip(failed, now, "max.block.ms")
            elif due > 0:
                blocked_gen.release(now)
            self._memory_exhausted = exhausted
            if due > 0 and not exhausted:
                generator.generate(now)
            if self.txn is not None:
                self._check_fatal()
                self._track_partitions()
                if self.txn.due(now) and not generator.finished(now):
                    await self._end_transaction()
                    continue
            # the oldest message not appended yet; with an unthrottled topic one always is
            self._backlog = -math.inf if generator.unthrottled else generator.next_due()
            plans = self._poll(now)
            self._dispatch(plans)
            if generator.finished(now):
                blocked_gen.release(now)
                return
            if self._stopping:
                return
            blocked = self._memory_full()
            next_due = generator.next_due()
            pace = GENERATOR_PASS_INTERVAL_S if due < SMALL_PASS_MESSAGES else 0.0
            # behind: late by more than the pace (less waits for the paced pass below)
            behind = next_due is not None and next_due + pace <= loop.time()
            if not blocked and (generator.unthrottled or behind):
                # after a send, one more pass appends what came due during it; then yield
                catch_up = bool(plans) and not catch_up
                if not catch_up:
                    await asyncio.sleep(0)
                continue
            wake = _earliest(self.policy.next_wakeup(), self.sender.next_wakeup())
            if next_due is not None and pace:
                next_due = max(next_due, now + pace)
            if blocked and (blocked_gen.blocked or generator.unthrottled):
                # blocked on memory: wait for a response to free some, or max.block.ms
                next_due = blocked_gen.deadline()
            candidates = [t for t in (wake, next_due) if t is not None]
            await self._sleep_until(min(candidates) if candidates else None)

    def _memory_full(self) -> bool:
        """No room for the next message: buffer.memory (Java-style in mode java) is used up."""
        if self.batch_memory is not None:
            return self.batch_memory.exhausted(self.accumulator.queued_batches)
        return self.accumulator.queued_bytes >= self.settings["buffer.memory"]

    def _sync_memory(self) -> None:
        """Mode java: a batch holds batch.size of buffer.memory from its first send until
        its outcome (retries included); queued batches are counted by the accumulator."""
        if self.batch_memory is not None:
            self.batch_memory.held = self.sender.pending

    async def _drain_everything(self) -> None:
        """Send what is queued until every batch has its outcome (each is bounded by
        delivery.timeout.ms), or until a stop request."""
        while not self._stopping:
            now = self.loop.time()
            self._apply(self.sender.poll(now))
            if self.txn is not None:
                self._check_fatal()
                self._track_partitions()
            self._dispatch(self._poll(now))
            if self.accumulator.empty and self.sender.pending == 0:
                return
            await self._sleep_until(
                _earliest(self.policy.next_wakeup(), self.sender.next_wakeup()))

    async def _watch_stop(self) -> None:
        """A threading.Event cannot wake the loop: look at it often."""
        assert self.stop is not None
        while not self.stop.is_set():
            await asyncio.sleep(STOP_CHECK_S)
        self._stopping = True
        self._wake()

    async def _interrupt(self) -> None:
        """Stopped: no more sends; in-flight requests get a short grace to be answered,
        then what is still open is unknown (in flight) or failed (never sent)."""
        self.metrics.complete = False
        grace_end = self.loop.time() + min(STOP_GRACE_S, self.settings.request_timeout_s)
        self.sender.stopped = True  # no new requests; responses are still taken
        while self.sender.in_flight and self.loop.time() < grace_end:
            await self._sleep_until(grace_end)
            self._apply(self.sender.poll(self.loop.time()))
        self._apply(self.sender.stop(INTERRUPTED))
        queued = self.accumulator.take_all()
        unknown = [b for b in queued if b.maybe_written]
        never = [b for b in queued if not b.maybe_written]
        if unknown:
            self._apply([Unknown(unknown, INTERRUPTED)])
        if never:
            self._apply([Fail(never, INTERRUPTED)])

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

    def _poll(self, now: float) -> list[RequestPlan]:
        """Ask the policy what to send now, with the engine's state it may read."""
        return self.policy.poll(now, PollContext(
            self.sender.free_slots(self._brokers), self._backlog, self._memory_exhausted,
            self._flushing))

    def _spawn(self, coroutine: Any) -> asyncio.Future[Any]:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # ----------------------------------------------------------------- send
    def _dispatch(self, plans: list[RequestPlan]) -> None:
        for plan in plans:
            self._send(plan)

    def _send(self, plan: RequestPlan) -> None:
        now = self.loop.time()
        batches = plan.batches
        if self.txn is not None:  # nothing goes before its partition is in the transaction
            missing = set(self.txn.missing(b.slot for b in batches))
            if missing:
                self.sender.park([b for b in batches if b.slot in missing])
                batches = [b for b in batches if b.slot not in missing]
                self.txn.need(missing)
                self._start_add()
                if not batches:
                    return
        outgoing, settled = self.sender.build(plan.broker, batches, now)
        self._apply(settled)
        if outgoing is None:
            return
        records = size = attempt = 0
        oldest = now
        lingers: list[float] = []
        for batch in outgoing.batches:
            records += batch.record_count
            size += len(batch.seal())
            attempt = max(attempt, batch.attempts)
            oldest = min(oldest, batch.created)
            if batch.attempts == 1:
                lingers.append(now - batch.created)
        acks = self.settings.acks
        request = ProduceRequest(
            self.transactional_id, acks, int(self.settings.request_timeout_s * 1000),
            outgoing.partitions)
        try:
            future = self.cluster.send(plan.broker, request, expect_response=acks != 0)
        except Exception as exc:  # noqa: BLE001 - not written: retry the batches
            self._apply(self.sender.on_send_error(outgoing.request_id, _reason(exc), now))
            return
        record = RequestRecord(
            send_time_s=now - self.start, broker=plan.broker, partitions=len(outgoing.batches),
            records=records, bytes=size, reason=plan.reason,
            linger_ms=(now - oldest) * 1000, attempt=attempt,
        )
        self._sync_memory()
        self.metrics.record_request(record)
        self.metrics.batch_linger.record_seconds(np.asarray(lingers))
        self._count_topics(outgoing.batches)
        task = self._spawn(future)
        task.add_done_callback(partial(self._on_response, outgoing.request_id, plan.broker,
                                       record, now))

    def _on_response(self, request_id: int, broker: int, record: RequestRecord,
                     sent_at: float, task: asyncio.Future[Any]) -> None:
        self._wake()
        if task.cancelled():
            return  # the run is over
        exc = task.exception()  # retrieved even when unused: asyncio would log it
        if request_id not in self.sender.in_flight:
            return  # the sender gave the request up already (timeout, closed connection)
        now = self.loop.time()
        if exc is not None:
            self.policy.on_response(broker, now - sent_at, now, 0, True)
            self._apply(self.sender.on_request_failed(request_id, _reason(exc), now))
            return
        record.rtt_ms = (now - sent_at) * 1000
        self.metrics.rtt.record_us(int(record.rtt_ms * 1000))
        response = task.result()
        if response is None:  # acks=0
            self.policy.on_response(broker, now - sent_at, now, 0, False)
            self._apply(self.sender.on_response(request_id, None, now)[0])
            return
        outcome: dict[tuple[str, int], tuple[int, int]] = {}
        for topic, partitions in response.topics:
            for partition_response in partitions:
                partition, error_code, offset = partition_response[:3]
                outcome[(topic, partition)] = (error_code, offset)
        actions, all_ok = self.sender.on_response(request_id, outcome, now)
        self.policy.on_response(broker, now - sent_at, now,
                                getattr(response, "throttle_time_ms", 0) or 0, not all_ok)
        self._apply(actions)

    def _apply(self, actions: list[Action]) -> None:
        """Carry out what the sender decided."""
        if not actions:
            return
        self._sync_memory()
        now = self.loop.time()
        for action in actions:
            if isinstance(action, Acknowledge):
                self._acknowledge_all(action.broker, action.batches, now)
            elif isinstance(action, Hold):
                self.accumulator.hold(action.slot)
            elif isinstance(action, Retry):
                self.accumulator.requeue_front(action.batch)
                if action.release:
                    self.accumulator.release(action.batch.slot)
                self.policy.on_requeue(action.batch.slot, now)
                self._wake()
            elif isinstance(action, Fail | Unknown | Written):
                self._settle(action)
            elif isinstance(action, CloseConnection):
                self.cluster.close_connection(action.broker)
            elif isinstance(action, RefreshMetadata):
                self._schedule_refresh()
            elif isinstance(action, InitProducerId):
                self._spawn(self._init_producer_id())

    def _settle(self, action: Fail | Unknown | Written) -> None:
        """Batches that end failed, unknown or (acks=0) written without acknowledgement."""
        count = sum(batch.record_count for batch in action.batches)
        if self.txn is not None and not isinstance(action, Written):
            self.txn.on_failed(count)
        if isinstance(action, Written):
            self.metrics.messages_sent_unacknowledged += count
        elif isinstance(action, Unknown):
            self.metrics.unknown(count, action.reason)
        else:
            self.metrics.fail(count, action.reason)
        for batch in action.batches:
            topic = self.slot_metrics[batch.slot]
            if isinstance(action, Written):
                topic.sent_unacknowledged += batch.record_count
            elif isinstance(action, Unknown):
                topic.unknown += batch.record_count
            else:
                topic.failed += batch.record_count

    async def _init_producer_id(self) -> None:
        """A new epoch after unresolved sequences (KIP-360), or a new producer id from a
        broker that cannot bump one (Tansu; Java does the same); retried until it works
        (every waiting batch is bounded by delivery.timeout.ms meanwhile)."""
        if self.txn is not None:
            self._fatal_error = BrokerError(
                "A transactional batch's outcome became unknown (a request timed out or its "
                "connection was lost), so the transaction cannot be completed; kbatch does "
                "not recover transactional producers from this. Raise request.timeout.ms or "
                "check the brokers.")
            self._wake()
            return
        backoff = max(self.settings["retry.backoff.ms"] / 1000, 0.05)
        state = self.sender.id
        while True:
            try:
                try:
                    producer_id, epoch = await self.cluster.init_producer_id(
                        state.producer_id, state.epoch)
                except BrokerError:  # refused: ask for a new producer id instead
                    producer_id, epoch = await self.cluster.init_producer_id()
            except Exception:  # noqa: BLE001 - the broker may be away for a while
                await asyncio.sleep(backoff)
                continue
            self._apply(self.sender.on_producer_id(producer_id, epoch))
            self._wake()
            return

    # ---------------------------------------------------------- transactions
    async def _init_transactions(self, transactional_id: str) -> None:
        """FindCoordinator, then InitProducerId with the transactional id at the
        coordinator (which also fences any older producer with this id)."""
        self.transactional_id = transactional_id
        self.coordinator = Coordinator(self.cluster, transactional_id)
        node = await self.coordinator.find()
        self.coordinator.count("InitProducerId")
        producer_id, epoch = await self.cluster.init_producer_id(
            transactional_id=transactional_id, coordinator=node,
            transaction_timeout_ms=self.settings["transaction.timeout.ms"])
        self.sender.on_producer_id(producer_id, epoch)
        self.txn = Transactions(TransactionConfig(
            transactional_id, self.settings["transaction.duration.ms"] / 1000,
            self.settings["transaction.abort.every"]))

    def _check_fatal(self) -> None:
        if self._fatal_error is not None:
            raise self._fatal_error

    def _track_partitions(self) -> None:
        """Partitions that got data join the transaction ahead of their first send (as
        Java adds a partition at its first append to a transaction)."""
        txn = self.txn
        assert txn is not None
        if len(txn.added) < len(self.slots):
            txn.need(self.accumulator.nonempty_slots())
            self._start_add()

    def _start_add(self) -> None:
        assert self.txn is not None
        slots = self.txn.next_add()
        if slots:
            self._spawn(self._add_partitions(slots))

    async def _add_partitions(self, slots: list[int]) -> None:
        assert self.txn is not None
        state = self.sender.id
        try:
            await self.coordinator.add_partitions(
                state.producer_id, state.epoch,
                [(self.slots[s].topic, self.slots[s].partition) for s in slots])
        except BrokerError as exc:
            self._fatal_error = exc
            self._wake()
            return
        done = self.txn.on_added()
        self._apply(self.sender.unpark(set(done)))
        self._start_add()
        self._wake()

    async def _end_transaction(self) -> None:
        """End the open transaction: flush the linger policy (every queued batch goes,
        whatever its window), wait for every outcome, then EndTxn. The generator waits
        meanwhile, as kafka-producer-perf-test's send loop waits in commitTransaction, so
        the cost shows in the latency of the messages due during the commit."""
        txn = self.txn
        assert txn is not None
        now = self.loop.time()
        txn.start_end(now)
        requests_before = len(self.metrics.requests)
        self._flushing = True
        await self._drain_everything()
        self._check_fatal()
        if self._stopping:
            return
        while txn.adding:  # an AddPartitionsToTxn still in flight must finish first
            await self._sleep_until(self.loop.time() + 0.01)
            self._check_fatal()
        self._flushing = False
        flushed = self.loop.time()
        txn.on_flushed(flushed, len(self.metrics.requests) - requests_before)
        commit = txn.commits()
        if not txn.empty:
            state = self.sender.id
            await self.coordinator.end(state.producer_id, state.epoch, commit)
        now = self.loop.time()
        aborted = txn.on_ended(commit, now - flushed, now)
        if aborted:
            self._abort_records(aborted)
        if self.deliveries is not None:
            self._txn_deliveries_from = len(self.deliveries)

    def _abort_records(self, aborted: dict[int, int]) -> None:
        """An aborted transaction's acknowledged records: outcome `aborted`, not
        acknowledged (read_committed consumers never see them)."""
        for slot, count in aborted.items():
            self.metrics.messages_acked -= count
            self.metrics.messages_aborted += count
            topic = self.slot_metrics[slot]
            topic.acknowledged -= count
            topic.aborted += count
        if self.deliveries is not None:
            for delivery in self.deliveries[self._txn_deliveries_from:]:
                delivery.aborted = True

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
        """Account acknowledged batches; one histogram pass per response and topic.

        A response may carry 1,000 batches: their intended send times are joined into one
        array per topic in one C call (`bytes.join` over the batches' arrays), not one
        numpy call per batch."""
        if not acknowledged:
            return
        slot_metrics = self.slot_metrics
        by_topic: dict[int, tuple[Any, list[Any]]] = {}
        total = 0
        for batch, _ in acknowledged:
            topic = slot_metrics[batch.slot]
            count = len(batch.ids)
            total += count
            topic.acknowledged += count
            entry = by_topic.get(id(topic))
            if entry is None:
                by_topic[id(topic)] = (topic, [batch.intended])
            else:
                entry[1].append(batch.intended)
        all_latencies = []
        for topic, arrays in by_topic.values():
            intended = np.frombuffer(b"".join(arrays), dtype=np.float64)
            if self.workload.warmup_s:
                intended = intended[intended >= self._warmup_until]
            latencies = now - intended
            self.metrics.latency.record_seconds(latencies)
            topic.latency.record_seconds(latencies)
            all_latencies.append(latencies)
        if self._on_acknowledged is not None:
            self._on_acknowledged(broker, np.concatenate(all_latencies)
                                  if len(all_latencies) > 1 else all_latencies[0], now)
        self.metrics.messages_acked += total
        if self.txn is None and self.deliveries is None:
            return
        for batch, offset in acknowledged:
            if self.txn is not None:
                self.txn.on_acknowledged(batch.slot, batch.record_count)
            if self.deliveries is not None:
                tp = self.slots[batch.slot]
                self.deliveries.append(
                    Delivery(tp.topic, tp.partition, offset, batch.ids.tolist()))

    def _schedule_refresh(self) -> None:
        if self._refreshing is None or self._refreshing.done():
            self._refreshing = self._spawn(self._refresh_leaders())

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
                    self._brokers.add(broker)
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
                in_flight_requests=len(self.sender.in_flight),
                requests_sent=len(m.requests),
                p99_ms=m.latency.percentile_ms(99) if m.latency.count else 0.0,
                target_messages=self._intended,
            ))

    def _results(self, end: float) -> Results:
        warnings = run_warnings(self.metrics, self.workload, "buffer.memory")
        warnings.extend(self.settings.warnings)
        state = self.sender.id
        self.metrics.idempotence = {
            "enabled": self.settings.idempotent, "producer_id": state.producer_id,
            "producer_epoch": state.epoch, "epoch_bumps": state.epoch_bumps,
        }
        policy = self.policy
        collector = policy.stats() if isinstance(policy, Reporting) else None
        return Results.of_run(
            self.mode, self.workload, self.settings.as_dict(), self.cluster.bootstrap,
            self.metrics, start=self.start, end=end, intended=self._intended,
            warnings=warnings,
            policy=Section(policy.stats_key, collector) if collector else None,
            transactions=(self.txn.as_dict(self.coordinator.sent) if self.txn is not None
                          else None),
        )


def _reason(exc: BaseException) -> str:
    if isinstance(exc, asyncio.TimeoutError):
        return "request_timeout"
    if isinstance(exc, KafkaConnectionError):
        return "connection_lost"
    return type(exc).__name__


def _earliest(*times: float | None) -> float | None:
    known = [t for t in times if t is not None]
    return min(known) if known else None


async def run_async(
    workload: Workload,
    settings: ProducerSettings,
    mode: str,
    bootstrap: str,
    on_progress: Callable[[Progress], None] | None = None,
    deliveries: list[Delivery] | None = None,
    stop: threading.Event | None = None,
) -> Results:
    """Run one workload in one mode against the cluster at `bootstrap`. Setting `stop`
    ends the run early (see README, 'Delivery'); its Results say `complete: false`."""
    driver = mode_spec(mode).load_driver()  # another client (librdkafka, kafka-java)
    if driver is not None:
        return await driver(workload, settings, mode, bootstrap, on_progress, deliveries, stop)
    cluster = Cluster.for_settings(bootstrap, settings)
    engine = Engine(workload, settings, mode, cluster, on_progress, deliveries, stop)
    return await engine.run()


def run(
    workload: Workload,
    settings: ProducerSettings,
    mode: str,
    bootstrap: str,
    on_progress: Callable[[Progress], None] | None = None,
    deliveries: list[Delivery] | None = None,
    stop: threading.Event | None = None,
) -> Results:
    """The engine as a library call: `run(workload, settings, mode, bootstrap) -> Results`.

    On a loop with microsecond timers (`precise_loop`): linger deadlines and message due
    times are met to the microsecond, not rounded up to the next millisecond."""
    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        return runner.run(
            run_async(workload, settings, mode, bootstrap, on_progress, deliveries, stop))
