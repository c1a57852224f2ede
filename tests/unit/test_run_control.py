"""The engine's run control on a synthetic clock, no broker and no asyncio: generator
pacing, waiting for buffer memory (max.block.ms), the generator waiting while a
transaction ends, fencing, and a stop's grace. The test plays the shell: it carries out
each command by scheduling the event a broker would cause, and moves the clock to the
earlier of the turn's wake time and the next event."""

from __future__ import annotations

import heapq
import itertools
from typing import Any

import pytest

from producer_core.config import build_settings
from producer_core.engine.core.events import (
    AddPartitions,
    Command,
    CoordinatorFound,
    EndTransaction,
    Event,
    FindCoordinator,
    InitProducerId,
    PartitionsAdded,
    ProducerIdAssigned,
    RefreshMetadata,
    RequestWritten,
    ResponseReceived,
    Send,
    TransactionEnded,
    TransactionFailed,
)
from producer_core.engine.core.memory import MAX_BLOCK_REASON
from producer_core.engine.drivers import run_control
from producer_core.engine.drivers.engine_parts import build_parts
from producer_core.engine.drivers.generator import Generator
from producer_core.engine.drivers.run_control import Phase, RunControl
from producer_core.engine.drivers.run_types import INTERRUPTED
from producer_core.engine.transport.txn_rpc import TransactionFenced
from producer_core.results.metrics import RunMetrics
from producer_core.workload.workload import Workload

START = 10.0


class Shell:
    """A synthetic-time shell: every request is answered `rtt` after it was written
    (never, with `answer=False`), EndTxn after `end_txn_s`, or fenced."""

    def __init__(self, workload: Workload, settings: dict[str, str], mode: str = "partition",
                 rtt: float = 0.002, answer: bool = True, end_txn_s: float = 0.002,
                 fence_end: bool = False) -> None:
        self.now = START - 0.05
        self.rtt, self.answer = rtt, answer
        self.end_txn_s, self.fence_end = end_txn_s, fence_end
        self.metrics = RunMetrics()
        leaders = {spec.name: [1 + p % 2 for p in range(spec.partitions)]
                   for spec in workload.topic_specs()}
        parts = build_parts(workload, build_settings(settings, mode=mode), mode, leaders,
                            {1, 2}, self.metrics, None)
        self.producer = parts.producer
        self.blocked = parts.blocked
        self.control = RunControl(parts.producer, parts.generator, parts.blocked,
                                  lambda: self.now, self.execute, stop_grace_s=0.1)
        self.events: list[tuple[float, int, Event]] = []
        self._order = itertools.count()
        self.log: list[tuple[float, Command]] = []
        self.turns: list[tuple[float, Phase, run_control.Turn]] = []
        self.on_event: Any = None

    def later(self, delay: float, event: Event) -> None:
        heapq.heappush(self.events, (self.now + delay, next(self._order), event))

    def execute(self, commands: list[Command]) -> None:
        for command in commands:
            self.log.append((self.now, command))
            if isinstance(command, Send):
                self.execute(self.producer.handle(RequestWritten(command.request_id),
                                                  self.now))
                if self.answer:
                    topics = [(topic, [(p, 0, 0, -1, 0) for p, _ in parts])
                              for topic, parts in command.topics]
                    self.later(self.rtt, ResponseReceived(command.request_id, topics))
            elif isinstance(command, FindCoordinator):
                self.later(self.rtt, CoordinatorFound(1))
            elif isinstance(command, InitProducerId):
                self.later(self.rtt, ProducerIdAssigned(500, 0))
            elif isinstance(command, AddPartitions):
                self.later(self.rtt, PartitionsAdded())
            elif isinstance(command, EndTransaction):
                self.later(self.end_txn_s, TransactionFailed(TransactionFenced("fenced"))
                           if self.fence_end else TransactionEnded(command.commit))
            elif isinstance(command, RefreshMetadata):
                raise AssertionError("no metadata refresh expected")

    def deliver(self) -> None:
        """Feed every event that is due."""
        while self.events and self.events[0][0] <= self.now:
            _, _, event = heapq.heappop(self.events)
            if self.on_event is not None:
                self.on_event(event)
            self.execute(self.producer.handle(event, self.now))

    def open(self) -> None:
        self.execute(self.producer.open())
        while not self.producer.ready:
            self.now = self.events[0][0]
            self.deliver()

    def run(self, stop_at: float | None = None, limit: int = 1_000_000) -> None:
        self.open()
        self.control.begin(START)
        for _ in range(limit):
            if stop_at is not None and self.now >= stop_at:
                self.control.stop_requested = True
            phase = self.control.phase
            turn = self.control.turn()
            self.turns.append((self.now, phase, turn))
            if turn.done:
                return
            if turn.yield_only:
                self.now += 1e-6  # a pass takes a little time
            else:
                times = [t for t in (turn.wake_at, self.events[0][0] if self.events else None,
                                     stop_at if stop_at is not None and stop_at > self.now
                                     else None) if t is not None]
                assert times, "the run would wait forever"
                self.now = max(self.now, min(times))
            self.deliver()
        raise AssertionError("the run did not end")


def _passes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts Generator.generate calls (one per generator pass)."""
    calls = [0]
    original = Generator.generate

    def counted(self: Generator, now: float, limit: int | None = None) -> int:
        calls[0] += 1
        return original(self, now, limit)

    monkeypatch.setattr(Generator, "generate", counted)
    return calls


def test_a_run_delivers_every_message_and_ends() -> None:
    shell = Shell(Workload(topic="t", partitions=4, rate=2000, duration_s=0.2), {})
    shell.run()
    m = shell.metrics
    assert m.messages_generated == m.messages_acked == 400
    assert m.messages_failed == m.messages_unknown == 0 and m.complete
    assert shell.control.phase is Phase.DONE and shell.producer.idle
    phases = [phase for _, phase, _ in shell.turns]
    assert phases.index(Phase.DRAIN) > max(i for i, p in enumerate(phases)
                                           if p is Phase.GENERATE)


def test_small_passes_are_paced_and_lag_at_most_the_pass_interval(
        monkeypatch: pytest.MonkeyPatch) -> None:
    passes = _passes(monkeypatch)

    def run(interval_s: float) -> tuple[int, RunMetrics]:
        monkeypatch.setattr(run_control, "GENERATOR_PASS_INTERVAL_S", interval_s)
        passes[0] = 0
        shell = Shell(Workload(topic="t", partitions=4, rate=20_000, duration_s=0.2),
                      {"linger.ms": "5"})
        shell.run()
        assert shell.metrics.messages_acked == 4000
        return passes[0], shell.metrics

    unpaced, _ = run(0.0)
    paced, metrics = run(0.00025)
    assert unpaced >= 3000  # a pass per message (one every 50 µs)
    # a pass per interval, each of ~5 messages; a response waking the loop makes none
    assert paced <= 0.2 / 0.00025 + 10
    assert paced < 0.3 * unpaced
    assert metrics.generator_lag.percentile_ms(100) <= 0.25 + 0.01


def test_linger_deadlines_and_responses_do_not_add_generator_passes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """At 2,000 partitions and 20,000 msg/s nearly every message is its own batch, so a
    linger deadline (and a response) wakes the loop about every 50 µs. Those turns send
    what is ready but append nothing before the pass interval is over: the passes stay
    one per interval, as with few partitions, and no message is later than the interval."""
    passes = _passes(monkeypatch)
    shell = Shell(Workload(topic="t", partitions=2000, rate=20_000, duration_s=0.2),
                  {"linger.ms": "5"}, rtt=0.00213)  # answers off the passes' 250 µs grid
    shell.run()
    metrics = shell.metrics
    assert metrics.messages_acked == 4000 and metrics.messages_failed == 0
    assert len(shell.turns) > passes[0]  # the loop woke between passes too
    assert passes[0] <= 0.2 / run_control.GENERATOR_PASS_INTERVAL_S + 10
    assert metrics.generator_lag.percentile_ms(100) <= 0.25 + 0.01


@pytest.mark.parametrize(("linger_ms", "passes_per_turn"), [("5", 1), ("0", 2)])
def test_a_pass_that_falls_behind_the_schedule_yields_instead_of_sleeping(
        monkeypatch: pytest.MonkeyPatch, linger_ms: str, passes_per_turn: int) -> None:
    """A slow pass (3 ms here) ends behind the schedule: the loop only yields to let
    responses in; after a pass that sent something, one more pass first appends what came
    due while sending."""
    shell = Shell(Workload(topic="t", partitions=4, rate=1000, duration_s=0.05),
                  {"linger.ms": linger_ms})
    passes = _passes(monkeypatch)
    original = Generator.generate

    def slow(self: Generator, now: float, limit: int | None = None) -> int:
        shell.now += 0.003
        return original(self, now, limit)

    monkeypatch.setattr(Generator, "generate", slow)
    shell.open()
    shell.control.begin(START)
    shell.now = START + 0.0105
    turn = shell.control.turn()
    assert turn.yield_only
    assert passes[0] == passes_per_turn
    assert shell.metrics.messages_generated == (11 if passes_per_turn == 1 else 14)


def test_a_pass_on_time_sleeps_until_the_next_message() -> None:
    shell = Shell(Workload(topic="t", partitions=4, rate=1000, duration_s=0.05),
                  {"linger.ms": "5"})
    shell.open()
    shell.control.begin(START)
    shell.now = START + 0.0205
    turn = shell.control.turn()
    assert shell.metrics.messages_generated == 21
    assert turn.wake_at == pytest.approx(START + 0.021) and not turn.yield_only


def test_blocked_on_memory_the_generator_wakes_at_max_block_ms_and_fails_one_message() -> None:
    # mode java: each batch holds batch.size of buffer.memory until its response, and no
    # response comes: after 4 batches the generator waits, each message for 20 ms
    shell = Shell(Workload(topic="t", partitions=4, rate=1000, duration_s=0.1),
                  {"linger.ms": "0", "batch.size": "1024", "buffer.memory": "4096",
                   "max.block.ms": "20", "request.timeout.ms": "5000",
                   "delivery.timeout.ms": "10000"}, mode="java", answer=False)
    shell.run(stop_at=START + 0.1)
    m = shell.metrics
    assert m.blocked_episodes == 1
    assert m.failed_reasons[MAX_BLOCK_REASON] == pytest.approx((0.1 - 0.004) / 0.02, abs=1)
    blocked_wakes = [(now, turn.wake_at) for now, phase, turn in shell.turns
                     if phase is Phase.GENERATE and shell.metrics.blocked_episodes
                     and turn.wake_at is not None and now > START + 0.005]
    assert blocked_wakes, "the generator slept while blocked"
    for now, wake in blocked_wakes[:-1]:
        assert wake == pytest.approx(now + 0.02, abs=0.0011)  # not at every due message
    assert m.messages_generated == 4 + m.failed_reasons[MAX_BLOCK_REASON]


def test_mode_java_waits_only_for_a_message_that_needs_a_new_batch() -> None:
    # Java's send() blocks in BufferPool.allocate only when its record needs a new batch:
    # with memory for 4 batches, one open batch per partition and a long linger, records
    # keep going into the open batches until one is full (issue 42: blocking every send
    # once memory was used up blocked a generator whose records all had room)
    shell = Shell(Workload(topic="t", partitions=4, rate=1000, duration_s=0.1),
                  {"linger.ms": "1000", "batch.size": "1024", "buffer.memory": "4096",
                   "max.block.ms": "60000", "request.timeout.ms": "5000",
                   "delivery.timeout.ms": "10000"}, mode="java", answer=False)
    first_blocked: list[tuple[float, int]] = []
    original = shell.blocked.wait

    def wait(now: float, waiting: int) -> int:
        if not first_blocked:
            first_blocked.append((now, shell.metrics.messages_generated))
        return original(now, waiting)

    shell.blocked.wait = wait  # type: ignore[method-assign]
    shell.run(stop_at=START + 0.1)
    assert first_blocked, "memory for 4 batches never ran out"
    blocked_at, appended = first_blocked[0]
    # the four batches (one per partition, round robin) filled up before anything waited:
    # the record that waited was the first to need a fifth batch (blocking every send once
    # memory was used up had the fifth message wait)
    sends = [c for _, c in shell.log if isinstance(c, Send)]
    per_batch = 1024 // 120  # 100-byte values and their record framing: 8 a batch
    assert appended == 4 * per_batch
    assert blocked_at == pytest.approx(START + appended / 1000, abs=0.0011)
    # then Java treats every batch as ready while a send() waits: all four go out
    assert sum(len(parts) for c in sends for _, parts in c.topics) == 4


@pytest.mark.parametrize("keys", ["none", "sequential"])
def test_the_partitions_predicted_for_memory_are_the_ones_appended_to(keys: str) -> None:
    # mode java decides which due messages wait for memory from their partitions before
    # appending them: round robin and a key table are known in advance, and the
    # prediction must be the partitioner's own choice
    from producer_core.workload.workload import KeySpec, RateSpec, TopicSpec

    key_count = 7 if keys != "none" else 0
    topics = (TopicSpec("a", 5, RateSpec(rate=3000.0), KeySpec(keys, key_count)),
              TopicSpec("b", 3, RateSpec(rate=1000.0)))
    shell = Shell(Workload(topics=topics, duration_s=0.05), {"linger.ms": "1000"}, mode="java")
    shell.open()
    shell.control.begin(START)
    generator, accumulator = shell.control.generator, shell.producer.accumulator
    now = START + 0.02
    predicted = generator.due_records(now)
    assert predicted is not None
    slots, sizes = predicted
    assert len(slots) == generator.due(now) == 80 and all(size > 100 for size in sizes)
    generator.generate(now)
    appended = {message_id: slot for slot in range(len(accumulator.slots))
                for batch in accumulator.queues[slot] for message_id in batch.ids}
    # ids grow topic by topic, message by message: the order generate appends in
    assert [appended[i] for i in sorted(appended)] == slots
    # a pass cut to the first 25 appends exactly those
    assert generator.generate(START + 0.03, limit=25) == 25


def test_the_generator_waits_while_a_transaction_ends() -> None:
    shell = Shell(Workload(topic="t", partitions=4, rate=2000, duration_s=0.3),
                  {"linger.ms": "2", "transactional.id": "tx",
                   "transaction.duration.ms": "100"}, end_txn_s=0.03)
    ends: list[tuple[float, int, bool]] = []
    generated_at_end: list[int] = []

    def watch(event: Event) -> None:
        if isinstance(event, TransactionEnded):  # nothing was generated meanwhile
            assert shell.metrics.messages_generated == generated_at_end[-1]

    original = shell.execute

    def execute(commands: list[Command]) -> None:
        for command in commands:
            if isinstance(command, EndTransaction):
                assert shell.producer.idle  # every batch of it has its outcome
                ends.append((shell.now, shell.metrics.messages_generated, command.commit))
                generated_at_end.append(shell.metrics.messages_generated)
        original(commands)

    shell.control.execute = execute
    shell.on_event = watch
    shell.run()
    assert [round(t - START, 1) for t, _, _ in ends[:2]] == [0.1, 0.2]
    assert len(ends) == 3 and all(commit for _, _, commit in ends)  # the last at the end
    txn = shell.producer.txn
    assert txn is not None and txn.stats.committed == 3
    m = shell.metrics
    assert m.messages_acked == m.messages_generated == 600
    # messages due during an EndTxn waited for it: their latency shows it
    assert m.latency.percentile_ms(100) >= 30
    assert m.generator_lag.percentile_ms(100) >= 25


def test_a_fenced_end_txn_ends_the_run_with_the_fencing_error() -> None:
    shell = Shell(Workload(topic="t", partitions=4, rate=2000, duration_s=0.3),
                  {"linger.ms": "2", "transactional.id": "tx",
                   "transaction.duration.ms": "100"}, fence_end=True)
    with pytest.raises(TransactionFenced, match="fenced"):
        shell.run()
    assert shell.now == pytest.approx(START + 0.1, abs=0.01)
    assert shell.producer.txn is not None and shell.producer.txn.stats.committed == 0


def test_a_stop_gives_in_flight_requests_a_grace_then_ends_them_interrupted() -> None:
    shell = Shell(Workload(topic="t", partitions=4, rate=2000, duration_s=1.0),
                  {"linger.ms": "0", "request.timeout.ms": "5000"}, answer=False)
    shell.run(stop_at=START + 0.05)
    m = shell.metrics
    assert not m.complete
    stopped = [t for t, c in shell.log if isinstance(c, Send) and t > START + 0.05]
    assert stopped == []  # no send after the stop
    assert shell.now == pytest.approx(START + 0.05 + 0.1)  # the grace, then the end
    assert m.messages_acked == 0
    assert m.messages_unknown + m.messages_failed == m.messages_generated > 0
    assert set(m.unknown_reasons) | set(m.failed_reasons) == {INTERRUPTED}


def test_mode_broker_behind_a_slow_broker_waits_for_responses_without_spinning() -> None:
    """Sends of several requests each (two partitions per request) on one request slot per
    broker, and a broker that takes 50 ms to answer: a send waits for slots most of the
    time, and the next collection is due behind it. The loop sleeps until a response then
    (it turned without pause before: the collection's past window end was reported as its
    next wake-up; at 10,000 partitions on a slow Kafka node that was most of a core)."""
    shell = Shell(Workload(topic="t", partitions=16, rate=2000, duration_s=0.2),
                  {"broker.linger.ms": "10", "produce.request.max.partitions": "2",
                   "max.in.flight.requests.per.connection": "1"}, mode="broker", rtt=0.05)
    shell.run(limit=20_000)
    m = shell.metrics
    assert m.messages_generated == m.messages_acked == 400 and m.complete
    assert max(record.partitions for record in m.requests) == 2  # 4 requests a send
    # a turn per paced generator pass (0.2 s / 0.25 ms) and per response, a few more
    assert len(shell.turns) <= 0.2 / 0.00025 + 2 * len(m.requests) + 50
