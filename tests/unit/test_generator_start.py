"""An unthrottled schedule is due at once, but not before the run's start: a run measured
from its start would otherwise count messages appended during the start lead and report
an impossible rate (20,000 messages in 25 ms)."""

from __future__ import annotations

from producer_core.engine.core.accumulator import Accumulator, TopicPartition
from producer_core.engine.drivers.generator import CHUNK, ClientBatching, Generator
from producer_core.results.metrics import RunMetrics
from producer_core.workload.workload import Workload


def _generator(rate: float | None) -> tuple[Generator, Accumulator]:
    workload = Workload(topic="t", partitions=4, rate=rate, messages=5000, duration_s=None,
                        message_size=100)
    acc = Accumulator([TopicPartition("t", p) for p in range(4)], 16384)
    generator = Generator(workload, [0], acc, ClientBatching(),  # type: ignore[arg-type]  # a stand-in policy
                          RunMetrics())
    generator.begin(10.0)
    return generator, acc


def test_an_unthrottled_run_appends_nothing_before_its_start() -> None:
    generator, acc = _generator(None)
    assert generator.due(9.999) == 0
    assert generator.generate(9.999) == 0
    assert acc.empty
    assert generator.due(10.0) == CHUNK
    assert generator.generate(10.0) == CHUNK


def test_a_rate_limited_run_is_not_due_before_its_start_either() -> None:
    generator, _ = _generator(1000.0)
    assert generator.due(9.999) == 0
    assert generator.due(10.1) > 0
