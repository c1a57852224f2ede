"""The closed-loop schedule (issue 44) in synthetic time: N synchronous senders, each
sending when its previous message completed, plus a think time."""

from __future__ import annotations

import pytest

from producer_core.engine.core.accumulator import Accumulator, TopicPartition
from producer_core.engine.drivers.generator import Generator
from producer_core.errors import UsageError
from producer_core.results.metrics import RunMetrics
from producer_core.workload.closed_loop import ClosedLoopSchedule
from producer_core.workload.message_source import run_target_rate
from producer_core.workload.workload import Workload


def test_every_sender_sends_at_time_zero_then_waits() -> None:
    loop = ClosedLoopSchedule(3, horizon=10.0)
    assert loop.pending(0.0, 100) == 3
    assert list(loop.take(0.0, 100)) == [0.0, 0.0, 0.0]
    assert loop.in_flight == 3
    assert loop.pending(5.0, 100) == 0 and loop.next_offset() is None


def test_a_completion_frees_one_sender_after_its_think_time() -> None:
    loop = ClosedLoopSchedule(2, think_s=0.010, horizon=10.0)
    loop.take(0.0, 2)
    assert loop.observe(0.004, 1) == 1  # one acknowledged at 4 ms
    assert loop.pending(0.004, 10) == 0  # thinking until 14 ms
    assert loop.next_offset() == pytest.approx(0.014)
    assert loop.pending(0.014, 10) == 1
    assert list(loop.take(0.020, 10)) == [pytest.approx(0.014)]  # intended: when free
    assert loop.observe(0.020, 1) == 0  # the same completion is not counted twice


def test_completions_beyond_what_is_in_flight_are_ignored() -> None:
    loop = ClosedLoopSchedule(2, horizon=1.0)
    loop.take(0.0, 1)
    assert loop.observe(0.1, 5) == 1  # only one message was out
    assert loop.pending(0.1, 10) == 2


def test_no_sender_sends_at_or_after_the_horizon() -> None:
    loop = ClosedLoopSchedule(1, horizon=1.0)
    loop.take(0.0, 1)
    loop.observe(1.0, 1)
    assert loop.pending(1.0, 10) == 0 and loop.next_offset() is None and loop.over(1.0)


def test_a_loop_needs_senders_and_no_negative_think_time() -> None:
    with pytest.raises(ValueError):
        ClosedLoopSchedule(0)
    with pytest.raises(ValueError):
        ClosedLoopSchedule(1, think_s=-1)


class _Policy:
    def on_append(self, slot: int, event: int, now: float) -> None:
        pass


def _generator(senders: int, think_s: float = 0.0, duration_s: float = 1.0
               ) -> tuple[Generator, RunMetrics]:
    workload = Workload(topic="t", partitions=4, duration_s=duration_s, closed_loop=senders,
                        think_time_s=think_s)
    metrics = RunMetrics()
    acc = Accumulator([TopicPartition("t", p) for p in range(4)], 16384)
    generator = Generator(workload, [0], acc, _Policy(), metrics)  # type: ignore[arg-type]
    generator.begin(100.0)
    return generator, metrics


def test_the_generator_sends_one_message_per_sender_per_acknowledgement() -> None:
    """A broker that acknowledges every message 2 ms after it is sent: 4 senders send
    4 messages every 2 ms (2,000 msg/s), each intended when its sender became free."""
    generator, metrics = _generator(4)
    now, sent_at = 100.0, []
    while not generator.finished(now):
        for when in list(sent_at):
            if when + 0.002 <= now:
                sent_at.remove(when)
                metrics.messages_acked += 1
        if generator.due(now):
            count = generator.generate(now)
            sent_at.extend([now] * count)
        due_at = generator.next_due()
        now = due_at if due_at is not None and due_at > now else now + 0.0005
    assert generator.generated == pytest.approx(2000, abs=8)
    assert generator.metrics.generator_lag.count == generator.generated


def test_think_time_slows_each_sender() -> None:
    """With 8 ms think time after a 2 ms acknowledgement, one sender sends every 10 ms."""
    generator, metrics = _generator(1, think_s=0.008)
    now, out = 100.0, None
    while not generator.finished(now):
        if out is not None and out + 0.002 <= now:
            metrics.messages_acked += 1
            out = None
        if generator.due(now):
            generator.generate(now)
            out = now
        now += 0.001
    assert generator.generated == pytest.approx(100, abs=2)


def test_next_due_says_now_when_a_completion_is_unseen() -> None:
    generator, metrics = _generator(1)
    assert generator.due(100.0) == 1
    generator.generate(100.0)
    assert generator.next_due() is None  # the one sender waits
    metrics.messages_acked += 1  # acknowledged; `due` has not looked yet
    assert generator.next_due() == pytest.approx(100.0)
    assert generator.due(100.003) == 1


def test_a_closed_loop_has_no_target_rate_and_one_topic() -> None:
    workload = Workload(closed_loop=8, duration_s=5)
    assert workload.target_rate is None and run_target_rate(workload) is None
    assert workload.as_dict()["closed_loop"] == 8
    with pytest.raises(UsageError, match="--think-time-ms applies to --closed-loop only"):
        Workload(think_time_s=0.01)
    with pytest.raises(UsageError, match="--closed-loop must be 1"):
        Workload(closed_loop=0)
    shares = [Workload(closed_loop=5).share(i, 2, None).closed_loop for i in range(2)]
    assert shares == [3, 2]
