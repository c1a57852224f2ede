"""kbatch's own driver: the asyncio shell around the pure producer (`core.producer`) and
the pure run control (`run_control`).

The run control says what each turn of the loop does (append what is due, let the
producer send, end a transaction, drain, stop) and when to turn again; the producer
answers with commands (find the coordinator, ask for a producer id, write this request,
add partitions to the transaction, end it, re-read metadata, close a connection), which
this shell carries out, feeding what happened back as events. Every protocol and pacing
decision is theirs; this module does I/O and timing only. Everything the run measured
ends up in a `Results`.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, ParamSpec

from aiokafka.errors import KafkaConnectionError

from producer_core.engine.core import events
from producer_core.engine.drivers.engine_parts import build_parts, engine_results, transactional_id
from producer_core.engine.drivers.gc_quiet import quiet_gc
from producer_core.engine.drivers.precise_loop import new_event_loop
from producer_core.engine.drivers.run_checks import check_message_fits
from producer_core.engine.drivers.run_control import RunControl
from producer_core.engine.drivers.run_types import (
    PROGRESS_INTERVAL_S,
    START_LEAD_S,
    STOP_CHECK_S,
    STOP_GRACE_S,
    Delivery,
    Progress,
    RunCall,
    phased_start,
    run_driver,
)
from producer_core.engine.modes import mode as mode_spec
from producer_core.engine.transport.priming import priming_section
from producer_core.engine.transport.produce_wire import ProduceRequest
from producer_core.engine.transport.transport import Cluster
from producer_core.engine.transport.txn_rpc import Coordinator
from producer_core.errors import BrokerError
from producer_core.results.intervals import IntervalRecorder, engine_live, expected_run_s
from producer_core.results.metrics import Results, RunMetrics

__all__ = ["Delivery", "Engine", "Progress", "run", "run_async"]  # what callers import

P = ParamSpec("P")
CoordinatorCommand = events.FindCoordinator | events.AddPartitions | events.EndTransaction
COORDINATOR_APIS = {events.FindCoordinator: "FindCoordinator",
                    events.AddPartitions: "AddPartitionsToTxn", events.EndTransaction: "EndTxn"}


class Engine:
    """One run of one workload in one mode against one cluster: the I/O around a
    `Producer` and its `RunControl`."""

    def __init__(self, call: RunCall, cluster: Cluster) -> None:
        self.call = call
        self.workload, self.settings = call.workload, call.settings
        self.cluster = cluster
        self.metrics = RunMetrics()
        self.loop = asyncio.get_event_loop()
        self.start = 0.0
        self.transactional_id = transactional_id(call.workload, call.settings)
        """The id ProduceRequests carry (a share of a distributed run adds its index)."""
        self.coordinator: Coordinator | None = None
        self._waiter: asyncio.Future[None] | None = None
        """What `_sleep_until` awaits; `_wake` resolves it."""
        self._woken = False
        """`_wake` came while the loop was not asleep: the next sleep returns at once."""
        self._tasks: set[asyncio.Future[Any]] = set()

    # ----------------------------------------------------------------- setup
    async def _setup(self) -> None:
        """Connect, create the topics (and prime them), read their leaders, build the
        parts, open the producer's session."""
        specs = self.workload.topic_specs()
        check_message_fits(specs, self.settings.max_request_size, "max.request.size")
        await self.cluster.connect()
        note = getattr(self.call.on_progress, "on_note", None)
        self.primings = [p for spec in specs
                         if (p := await self.cluster.ready_topic(spec.name, spec.partitions,
                                                                 note)) is not None]
        view = await self.cluster.refresh_metadata([spec.name for spec in specs])
        brokers = set()
        for broker in {leader for spec in specs for leader in view.leaders[spec.name]}:
            await self.cluster.connection(broker)
            brokers.add(broker)
        parts = build_parts(self.workload, self.settings, self.call.mode, view.leaders,
                            brokers, self.metrics, self.call.deliveries)
        self.producer = parts.producer
        self.control = RunControl(
            parts.producer, parts.generator, parts.blocked, self.loop.time, self._execute,
            stop_grace_s=min(STOP_GRACE_S, self.settings.request_timeout_s))
        self._execute(self.producer.open())
        while not self.producer.ready:
            await self._sleep_until(None)
            if self.producer.fatal is not None:
                raise self.producer.fatal

    # ------------------------------------------------------------------ run
    async def run(self) -> Results:
        await self._setup()
        with quiet_gc():  # no collection of the setup's objects mid-run (gc_quiet.py)
            results = await self._run()
        results.priming = priming_section(self.primings)
        return results

    async def _run(self) -> Results:
        progress_task = interval_task = None
        control = self.control
        try:
            self.start = phased_start(self.loop.time() + START_LEAD_S)
            if self.workload.start_at is not None:  # a share of a distributed run
                self.start = self.loop.time() + max(0.0, self.workload.start_at - time.time())
                # wait for the common start: an unthrottled schedule is due at once
                await asyncio.sleep(max(0.0, self.start - self.loop.time()))
            control.begin(self.start, self.workload.warmup_s)
            self._intended = control.generator.intended_total()
            if self.call.on_progress is not None:
                progress_task = asyncio.ensure_future(
                    self._report_progress(self.call.on_progress))
            intervals = IntervalRecorder.for_callback(self.call.on_progress,
                                                       expected_run_s(self.workload))
            intervals.begin(self.start, self.metrics, engine_live(self.metrics))
            interval_task = asyncio.ensure_future(intervals.run_async(self.loop.time))
            if self.call.stop is not None:
                self._spawn(self._watch_stop(self.call.stop))
            while not (turn := control.turn()).done:
                if turn.yield_only:
                    await asyncio.sleep(0)
                else:
                    await self._sleep_until(turn.wake_at)
            end = self.loop.time()
            intervals.finish(end)
        finally:
            for task in (progress_task, interval_task, *self._tasks):
                if task is not None:
                    task.cancel()
            await self.cluster.close()
        return self._results(end)

    async def _watch_stop(self, stop: threading.Event) -> None:
        """A threading.Event cannot wake the loop: look at it often."""
        while not stop.is_set():
            await asyncio.sleep(STOP_CHECK_S)
        self.control.stop_requested = True
        self._wake()

    # ------------------------------------------------------------- the loop
    async def _sleep_until(self, when: float | None) -> None:
        """Sleep until `when` or until an event wakes the loop, whichever comes first.

        A bare future rather than an `asyncio.Event`: the loop sleeps once per turn, tens
        of thousands of times a second at 10,000 partitions, and the Event's waiter queue
        and loop check were a measurable share of that."""
        if self._woken:
            self._woken = False
            await asyncio.sleep(0)
            return
        waiter = self._waiter = self.loop.create_future()
        handle = self.loop.call_at(when, self._wake) if when is not None else None
        try:
            await waiter
        finally:
            self._waiter = None
            self._woken = False
            if handle is not None:
                handle.cancel()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is None:
            self._woken = True
        elif not waiter.done():
            waiter.set_result(None)

    def _spawn(self, coroutine: Awaitable[Any]) -> asyncio.Future[Any]:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # ------------------------------------------------------------ commands
    def _execute(self, commands: list[events.Command]) -> None:
        """Carry out the producer's commands (I/O only: every decision is made)."""
        for command in commands:
            if isinstance(command, events.Send):
                self._write(command)
            elif isinstance(command, events.Wake):
                self._wake()
            elif isinstance(command, events.CloseConnection):
                self.cluster.close_connection(command.broker)
            elif isinstance(command, events.RefreshMetadata):
                self._spawn(self._refresh_leaders())
            elif isinstance(command, events.InitProducerId):
                self._spawn(self._init_producer_id(command))
            elif isinstance(command, CoordinatorCommand):
                self._spawn(self._ask_coordinator(command))
            else:
                raise TypeError(f"the engine cannot execute {command!r}")

    def _handle(self, event: events.Event) -> None:
        self._execute(self.producer.handle(event, self.loop.time()))

    def _feed(self, event: events.Event) -> None:
        """An event from another task: the loop wakes to act on it."""
        self._wake()
        self._handle(event)

    def _write(self, command: events.Send) -> None:
        request = ProduceRequest(self.transactional_id, self.settings.acks,
                                 int(self.settings.request_timeout_s * 1000), command.topics)
        try:
            future = self.cluster.send(command.broker, request,
                                       expect_response=command.expect_response)
        except Exception as exc:  # noqa: BLE001 - not written: the producer retries
            self._handle(events.SendFailed(command.request_id, _reason(exc)))
            return
        self._handle(events.RequestWritten(command.request_id))
        task = self._spawn(future)
        request_id = command.request_id

        def done(task: asyncio.Future[Any]) -> None:
            self._wake()
            if task.cancelled():
                return  # the run is over
            exc = task.exception()  # retrieved even when unused: asyncio would log it
            if exc is not None:
                self._feed(events.RequestFailed(request_id, _reason(exc)))
                return
            response = task.result()
            self._feed(events.ResponseReceived(
                request_id, None if response is None else response.topics,
                0 if response is None else getattr(response, "throttle_time_ms", 0) or 0))

        task.add_done_callback(done)

    async def _init_producer_id(self, command: events.InitProducerId) -> None:
        try:
            if command.transactional_id is not None:
                assert self.coordinator is not None
                producer_id, epoch = await self.coordinator.init_producer_id(
                    command.transaction_timeout_ms)
            else:
                producer_id, epoch = await self.cluster.init_producer_id(
                    command.producer_id, command.epoch)
        except BrokerError as exc:  # the broker answered: refused
            self._feed(events.ProducerIdFailed(str(exc), refused=True))
            return
        except Exception as exc:  # noqa: BLE001 - no answer: the core decides what next
            self._feed(events.ProducerIdFailed(_reason(exc), refused=False))
            return
        self._feed(events.ProducerIdAssigned(producer_id, epoch))

    async def _ask_coordinator(self, command: CoordinatorCommand) -> None:
        """A transaction coordinator request (its retries are `Coordinator`'s)."""
        event: events.Event
        try:
            if isinstance(command, events.FindCoordinator):
                self.coordinator = Coordinator(self.cluster, command.transactional_id)
                event = events.CoordinatorFound(await self.coordinator.find())
            elif isinstance(command, events.AddPartitions):
                assert self.coordinator is not None
                await self.coordinator.add_partitions(command.producer_id, command.epoch,
                                                      command.partitions)
                event = events.PartitionsAdded()
            else:
                assert self.coordinator is not None
                await self.coordinator.end(command.producer_id, command.epoch, command.commit)
                event = events.TransactionEnded(command.commit)
        except BrokerError as exc:
            event = events.TransactionFailed(exc)
        except Exception as exc:  # noqa: BLE001 - no answer: the producer cannot go on
            api = COORDINATOR_APIS[type(command)]
            event = events.TransactionFailed(
                BrokerError(f"{api} got no answer ({_reason(exc)})."))
        self._feed(event)

    async def _refresh_leaders(self) -> None:
        """After leader errors or a lost connection: re-read leaders, reconnect."""
        try:
            names = [spec.name for spec in self.workload.topic_specs()]
            view = await self.cluster.refresh_metadata(names)
            leaders = [leader for name in names for leader in view.leaders.get(name, [])]
            brokers = frozenset(leader for leader in leaders if leader >= 0)
            for broker in brokers:
                await self.cluster.connection(broker)
        except Exception as exc:  # noqa: BLE001 - the core asks again after a backoff
            self._feed(events.MetadataFailed(_reason(exc)))
            return
        self._feed(events.MetadataUpdated(leaders, brokers))

    # -------------------------------------------------------------- results
    async def _report_progress(self, on_progress: Callable[[Progress], None]) -> None:
        while True:
            await asyncio.sleep(PROGRESS_INTERVAL_S)
            on_progress(Progress.of_metrics(
                self.metrics, self.loop.time() - self.start,
                len(self.producer.sender.in_flight), self._intended))

    def _results(self, end: float) -> Results:
        sent = None if self.coordinator is None else self.coordinator.sent
        return engine_results(self.producer, self.call.mode, self.workload, self.settings,
                              self.cluster.bootstrap, start=self.start, end=end,
                              intended=self._intended, coordinator_sent=sent)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, asyncio.TimeoutError):
        return "request_timeout"
    if isinstance(exc, KafkaConnectionError):
        return "connection_lost"
    return type(exc).__name__


@run_driver
async def run_async(call: RunCall) -> Results:
    """Run one workload in one mode against the cluster at `bootstrap`. Setting `stop`
    ends the run early (see README, 'Delivery'); its Results say `complete: false`."""
    driver = mode_spec(call.mode).load_driver()  # another client (librdkafka, kafka-java)
    if driver is not None:
        return await call.on(driver)
    return await Engine(call, Cluster.for_settings(call.bootstrap, call.settings)).run()


def _blocking(run_async: Callable[P, Coroutine[Any, Any, Results]]) -> Callable[P, Results]:
    def run(*args: P.args, **kwargs: P.kwargs) -> Results:
        """The engine as a library call: `run(workload, settings, mode, bootstrap,
        on_progress=None, deliveries=None, stop=None) -> Results` (a `RunDriver` call
        that blocks until the run ends).

        On a loop with microsecond timers (`precise_loop`): linger deadlines and message
        due times are met to the microsecond, not rounded up to the next millisecond."""
        with asyncio.Runner(loop_factory=new_event_loop) as runner:
            return runner.run(run_async(*args, **kwargs))

    functools.update_wrapper(run, run_async, assigned=(), updated=())  # its signature
    return run


run = _blocking(run_async)
