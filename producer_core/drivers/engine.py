"""kbatch's own driver: the asyncio shell around the pure producer (`core.producer`).

One coroutine generates messages on the rate schedule and asks the producer what to send;
the producer answers with commands (write this request, ask for a producer id, add
partitions to the transaction, end it, re-read metadata, close a connection), which this
shell carries out, feeding what happened back as events. Every protocol decision --
retries, sequence numbers, epochs, fencing, transactions, the outcome of every message --
is the producer's; this module does I/O and timing only. Everything the run measured
ends up in a `Results`.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Callable
from typing import Any

from aiokafka.errors import KafkaConnectionError

from producer_core.config import ProducerSettings
from producer_core.core.accumulator import Accumulator, TopicPartition
from producer_core.core.ledger import Ledger
from producer_core.core.linger.base import Reporting, RunStart
from producer_core.core.memory import BatchMemory, BlockedGenerator
from producer_core.core.producer import (
    AddPartitions,
    CloseConnection,
    Command,
    EndTransaction,
    InitProducerId,
    MetadataFailed,
    MetadataUpdated,
    PartitionsAdded,
    Producer,
    ProducerConfig,
    ProducerIdAssigned,
    ProducerIdFailed,
    RefreshMetadata,
    RequestFailed,
    RequestWritten,
    ResponseReceived,
    Send,
    SendFailed,
    Stop,
    TransactionEnded,
    TransactionFailed,
    Wake,
)
from producer_core.core.sender import Sender, SenderConfig
from producer_core.core.transactions import TransactionConfig, Transactions
from producer_core.drivers.gc_quiet import quiet_gc
from producer_core.drivers.generator import Generator
from producer_core.drivers.precise_loop import new_event_loop
from producer_core.drivers.run_checks import check_message_fits, largest_record, run_warnings
from producer_core.drivers.run_types import (  # re-exported: callers import them from here
    INTERRUPTED,
    PROGRESS_INTERVAL_S,
    START_LEAD_S,
    STOP_CHECK_S,
    STOP_GRACE_S,
    Delivery,
    Progress,
    phased_start,
)
from producer_core.errors import BrokerError
from producer_core.modes import make_policy
from producer_core.modes import mode as mode_spec
from producer_core.results.intervals import IntervalRecorder, engine_live, expected_run_s
from producer_core.results.metrics import Results, RunMetrics, Section
from producer_core.transport.produce_wire import ProduceRequest
from producer_core.transport.transport import Cluster
from producer_core.transport.txn_rpc import Coordinator
from producer_core.workload.partitioners import Partitioning
from producer_core.workload.workload import Workload

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
    """One run of one workload in one mode against one cluster: the I/O around a
    `Producer`."""

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
        self._stopping = False
        self._tasks: set[asyncio.Future[Any]] = set()
        self.start = 0.0
        self.topic_created = False
        self.transactional_id: str | None = None
        """The id ProduceRequests carry (a share of a distributed run adds its index)."""
        self.coordinator: Coordinator | None = None

    # ----------------------------------------------------------------- setup
    async def _setup(self) -> None:
        settings = self.settings
        check_message_fits(self.workload.topic_specs(), settings.max_request_size,
                           "max.request.size")
        await self.cluster.connect()
        specs = self.workload.topic_specs()
        slots: list[TopicPartition] = []
        leaders: list[int] = []
        first_slots = []
        for spec in specs:
            created = await self.cluster.ensure_topic(spec.name, spec.partitions)
            self.topic_created = self.topic_created or created
        await self.cluster.refresh_metadata([spec.name for spec in specs])
        assert self.cluster.view is not None
        for spec in specs:
            first_slots.append(len(slots))
            slots.extend(TopicPartition(spec.name, p) for p in range(spec.partitions))
            leaders.extend(self.cluster.view.leaders[spec.name])
        spec_of_mode = mode_spec(self.mode)
        accumulator = Accumulator(slots, spec_of_mode.accumulator_batch_size(settings),
                                  settings["compression.type"])
        policy = make_policy(self.mode, accumulator, leaders, settings, specs)
        brokers = set()
        for broker in set(leaders):
            await self.cluster.connection(broker)
            brokers.add(broker)
        sender = Sender(slots, SenderConfig(
            acks=settings.acks, idempotent=settings.idempotent, retries=settings["retries"],
            retry_backoff_s=settings["retry.backoff.ms"] / 1000,
            request_timeout_s=settings.request_timeout_s,
            delivery_timeout_s=settings.delivery_timeout_s, max_in_flight=settings.max_in_flight,
            transactional=settings.transactional_id is not None,
        ))
        txn = None
        if settings.transactional_id is not None:
            transactional_id = settings.transactional_id
            if self.workload.share_count > 1:  # each share is its own producer: no fencing
                transactional_id = f"{transactional_id}-{self.workload.share_index}"
            txn = await self._init_transactions(transactional_id, sender)
        elif settings.idempotent:
            sender.on_producer_id(*await self.cluster.init_producer_id())
        batch_memory = None
        if spec_of_mode.buffer_pool:  # batch.size per batch until its outcome
            record = max(largest_record(spec) for spec in specs)
            batch_memory = BatchMemory(settings["buffer.memory"],
                                       max(settings.batch_size, record))
        self.generator = Generator(self.workload, first_slots, accumulator, policy,
                                   self.metrics, Partitioning.from_settings(settings))
        self.producer = Producer(
            slots, leaders, accumulator, policy, sender,
            Ledger(self.metrics, slots, self.deliveries),
            ProducerConfig(acks=settings.acks,
                           retry_backoff_s=settings["retry.backoff.ms"] / 1000,
                           delivery_timeout_s=settings.delivery_timeout_s,
                           request_timeout_ms=int(settings.request_timeout_s * 1000),
                           idempotent=settings.idempotent),
            txn=txn, batch_memory=batch_memory, buffer_memory=settings["buffer.memory"],
            brokers=brokers)
        self.blocked = BlockedGenerator(settings["max.block.ms"] / 1000.0, self.metrics)

    async def _init_transactions(self, transactional_id: str, sender: Sender) -> Transactions:
        """FindCoordinator, then InitProducerId with the transactional id at the
        coordinator (which also fences any older producer with this id)."""
        self.transactional_id = transactional_id
        self.coordinator = Coordinator(self.cluster, transactional_id)
        node = await self.coordinator.find()
        self.coordinator.count("InitProducerId")
        producer_id, epoch = await self.cluster.init_producer_id(
            transactional_id=transactional_id, coordinator=node,
            transaction_timeout_ms=self.settings["transaction.timeout.ms"])
        sender.on_producer_id(producer_id, epoch)
        return Transactions(TransactionConfig(
            transactional_id, self.settings["transaction.duration.ms"] / 1000,
            self.settings["transaction.abort.every"]))

    # ------------------------------------------------------------------ run
    async def run(self) -> Results:
        await self._setup()
        with quiet_gc():  # no collection of the setup's objects mid-run (gc_quiet.py)
            return await self._run()

    async def _run(self) -> Results:
        progress_task = interval_task = None
        producer = self.producer
        try:
            self.start = phased_start(self.loop.time() + START_LEAD_S)
            if self.workload.start_at is not None:  # a share of a distributed run
                self.start = self.loop.time() + max(0.0, self.workload.start_at - time.time())
                # wait for the common start: an unthrottled schedule is due at once
                await asyncio.sleep(max(0.0, self.start - self.loop.time()))
            producer.start = self.start
            if self.workload.warmup_s:
                producer.ledger.warmup_until = self.start + self.workload.warmup_s
            self.generator.begin(self.start)
            if isinstance(producer.policy, RunStart):
                producer.policy.begin(self.start)
            if producer.txn is not None:
                producer.txn.begin(self.start)
            self._intended = self.generator.intended_total()
            if self.on_progress is not None:
                progress_task = asyncio.ensure_future(self._report_progress())
            intervals = IntervalRecorder.for_callback(self.on_progress,
                                                       expected_run_s(self.workload))
            intervals.begin(self.start, self.metrics, engine_live(self.metrics))
            interval_task = asyncio.ensure_future(intervals.run_async(self.loop.time))
            if self.stop is not None:
                self._spawn(self._watch_stop())
            await self._generate()
            if producer.txn is not None and not self._stopping:
                await self._end_transaction()
            else:
                producer.flushing = True
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
        producer = self.producer
        generator = self.generator
        blocked_gen = self.blocked
        catch_up = False
        while not self._stopping:
            now = loop.time()
            self._execute(producer.expire(now))
            due = generator.due(now)
            exhausted = due > 0 and producer.memory_full()
            if exhausted:  # wait for memory; a message that waited max.block.ms fails
                failed = blocked_gen.wait(now, due)
                if failed:
                    generator.skip(failed, now, "max.block.ms")
            elif due > 0:
                blocked_gen.release(now)
            producer.memory_exhausted = exhausted
            if due > 0 and not exhausted:
                generator.generate(now)
            if producer.txn is not None:
                self._check_fatal()
                self._execute(producer.track_partitions())
                if producer.transaction_due(now) and not generator.finished(now):
                    await self._end_transaction()
                    continue
            # the oldest message not appended yet; with an unthrottled topic one always is
            producer.backlog = -math.inf if generator.unthrottled else generator.next_due()
            sends = producer.send_ready(now)
            self._execute(sends)
            if generator.finished(now):
                blocked_gen.release(now)
                return
            if self._stopping:
                return
            blocked = producer.memory_full()
            next_due = generator.next_due()
            pace = GENERATOR_PASS_INTERVAL_S if due < SMALL_PASS_MESSAGES else 0.0
            # behind: late by more than the pace (less waits for the paced pass below)
            behind = next_due is not None and next_due + pace <= loop.time()
            if not blocked and (generator.unthrottled or behind):
                # after a send, one more pass appends what came due during it; then yield
                catch_up = any(isinstance(c, Send) for c in sends) and not catch_up
                if not catch_up:
                    await asyncio.sleep(0)
                continue
            wake = producer.next_wakeup()
            if next_due is not None and pace:
                next_due = max(next_due, now + pace)
            if blocked and (blocked_gen.blocked or generator.unthrottled):
                # blocked on memory: wait for a response to free some, or max.block.ms
                next_due = blocked_gen.deadline()
            candidates = [t for t in (wake, next_due) if t is not None]
            await self._sleep_until(min(candidates) if candidates else None)

    async def _drain_everything(self) -> None:
        """Send what is queued until every batch has its outcome (each is bounded by
        delivery.timeout.ms), or until a stop request."""
        producer = self.producer
        while not self._stopping:
            now = self.loop.time()
            self._execute(producer.expire(now))
            if producer.txn is not None:
                self._check_fatal()
                self._execute(producer.track_partitions())
            self._execute(producer.send_ready(now))
            if producer.idle:
                return
            await self._sleep_until(producer.next_wakeup())

    async def _end_transaction(self) -> None:
        """End the open transaction: flush every queued batch, wait for every outcome,
        then EndTxn. The generator waits meanwhile, as kafka-producer-perf-test's send loop
        waits in commitTransaction, so the cost shows in the latency of the messages due
        during the commit."""
        producer = self.producer
        producer.begin_transaction_end(self.loop.time())
        await self._drain_everything()
        self._check_fatal()
        if self._stopping:
            return
        while producer.adding_partitions:  # an AddPartitionsToTxn in flight must finish
            await self._sleep_until(self.loop.time() + 0.01)
            self._check_fatal()
        for command in producer.transaction_flushed(self.loop.time()):
            assert isinstance(command, EndTransaction) and self.coordinator is not None
            await self.coordinator.end(command.producer_id, command.epoch, command.commit)
            self._execute(producer.handle(TransactionEnded(command.commit), self.loop.time()))

    def _check_fatal(self) -> None:
        if self.producer.fatal is not None:
            raise self.producer.fatal

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
        producer = self.producer
        grace_end = self.loop.time() + min(STOP_GRACE_S, self.settings.request_timeout_s)
        self._execute(producer.handle(Stop(), self.loop.time()))
        while producer.sender.in_flight and self.loop.time() < grace_end:
            await self._sleep_until(grace_end)
            self._execute(producer.expire(self.loop.time()))
        producer.close(INTERRUPTED, self.loop.time())

    # ------------------------------------------------------------- the loop
    async def _sleep_until(self, when: float | None) -> None:
        """Sleep until `when` or until an event wakes the loop, whichever comes first."""
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

    def _spawn(self, coroutine: Any) -> asyncio.Future[Any]:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # ------------------------------------------------------------ commands
    def _execute(self, commands: list[Command]) -> None:
        """Carry out the producer's commands (I/O only: every decision is made)."""
        for command in commands:
            if isinstance(command, Send):
                self._write(command)
            elif isinstance(command, Wake):
                self._wake()
            elif isinstance(command, CloseConnection):
                self.cluster.close_connection(command.broker)
            elif isinstance(command, RefreshMetadata):
                self._spawn(self._refresh_leaders())
            elif isinstance(command, InitProducerId):
                self._spawn(self._init_producer_id(command))
            elif isinstance(command, AddPartitions):
                self._spawn(self._add_partitions(command))
            else:
                raise TypeError(f"the engine cannot execute {command!r} here")

    def _feed(self, event: Any) -> None:
        self._wake()
        self._execute(self.producer.handle(event, self.loop.time()))

    def _write(self, command: Send) -> None:
        request = ProduceRequest(self.transactional_id, self.settings.acks,
                                 int(self.settings.request_timeout_s * 1000), command.topics)
        try:
            future = self.cluster.send(command.broker, request,
                                       expect_response=command.expect_response)
        except Exception as exc:  # noqa: BLE001 - not written: the producer retries
            self._execute(self.producer.handle(SendFailed(command.request_id, _reason(exc)),
                                               self.loop.time()))
            return
        self._execute(self.producer.handle(RequestWritten(command.request_id),
                                           self.loop.time()))
        task = self._spawn(future)
        request_id = command.request_id

        def done(task: asyncio.Future[Any]) -> None:
            self._wake()
            if task.cancelled():
                return  # the run is over
            exc = task.exception()  # retrieved even when unused: asyncio would log it
            if exc is not None:
                self._feed(RequestFailed(request_id, _reason(exc)))
                return
            response = task.result()
            self._feed(ResponseReceived(
                request_id, None if response is None else response.topics,
                0 if response is None else getattr(response, "throttle_time_ms", 0) or 0))

        task.add_done_callback(done)

    async def _init_producer_id(self, command: InitProducerId) -> None:
        try:
            producer_id, epoch = await self.cluster.init_producer_id(
                command.producer_id, command.epoch)
        except BrokerError as exc:  # the broker answered: refused
            self._feed(ProducerIdFailed(str(exc), refused=True))
            return
        except Exception as exc:  # noqa: BLE001 - no answer: the core decides what next
            self._feed(ProducerIdFailed(_reason(exc), refused=False))
            return
        self._feed(ProducerIdAssigned(producer_id, epoch))

    async def _add_partitions(self, command: AddPartitions) -> None:
        assert self.coordinator is not None
        try:
            await self.coordinator.add_partitions(command.producer_id, command.epoch,
                                                  command.partitions)
        except BrokerError as exc:
            self._feed(TransactionFailed(exc))
            return
        self._feed(PartitionsAdded())

    async def _refresh_leaders(self) -> None:
        """After leader errors or a lost connection: re-read leaders, reconnect."""
        try:
            names = [spec.name for spec in self.workload.topic_specs()]
            view = await self.cluster.refresh_metadata(names)
            leaders = [leader for name in names for leader in view.leaders.get(name, [])]
            if len(leaders) != len(self.producer.leaders):
                raise BrokerError("metadata is missing partitions; asking again")
            brokers = set()
            for broker in set(leaders):
                if broker >= 0:
                    await self.cluster.connection(broker)
                    brokers.add(broker)
        except Exception as exc:  # noqa: BLE001 - the core asks again after a backoff
            self._feed(MetadataFailed(_reason(exc)))
            return
        self._feed(MetadataUpdated(leaders, frozenset(brokers)))

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
                in_flight_requests=len(self.producer.sender.in_flight),
                requests_sent=len(m.requests),
                p99_ms=m.latency.percentile_ms(99) if m.latency.count else 0.0,
                target_messages=self._intended,
                generator_lag_p99_ms=m.generator_lag.percentile_ms(99)
                if m.generator_lag.count else 0.0,
            ))

    def _results(self, end: float) -> Results:
        warnings = run_warnings(self.metrics, self.workload, "buffer.memory")
        warnings.extend(self.settings.warnings)
        producer = self.producer
        state = producer.sender.id
        self.metrics.idempotence = {
            "enabled": self.settings.idempotent, "producer_id": state.producer_id,
            "producer_epoch": state.epoch, "epoch_bumps": state.epoch_bumps,
        }
        policy = producer.policy
        collector = policy.stats() if isinstance(policy, Reporting) else None
        txn = producer.txn
        return Results.of_run(
            self.mode, self.workload, self.settings.as_dict(), self.cluster.bootstrap,
            self.metrics, start=self.start, end=end, intended=self._intended,
            warnings=warnings,
            policy=Section(policy.stats_key, collector) if collector else None,
            transactions=(txn.as_dict(self.coordinator.sent)
                          if txn is not None and self.coordinator is not None else None),
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
