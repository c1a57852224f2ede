"""Generator passes: asking what is due before a pass (as the engine does every loop turn)
changes nothing about the messages the pass appends."""

from __future__ import annotations

from producer_core.engine.core.accumulator import Accumulator, TopicPartition
from producer_core.engine.drivers.generator import Generator
from producer_core.results.metrics import RunMetrics
from producer_core.workload.workload import Workload


class _Policy:
    def admit(self, topic_index: int, count: int, now: float) -> int:
        return count

    def keyless_slots(self, *args: object) -> None:
        return None

    def on_append(self, slot: int, event: int, now: float) -> None:
        pass


def _generator(keys: int = 0) -> tuple[Generator, Accumulator]:
    workload = Workload(topic="t", partitions=8, rate=20_000, duration_s=0.5, keys=keys)
    acc = Accumulator([TopicPartition("t", p) for p in range(8)], 16384)
    generator = Generator(workload, [0], acc, _Policy(), RunMetrics())  # type: ignore[arg-type]  # a stand-in policy
    generator.begin(10.0)
    return generator, acc


def _messages(acc: Accumulator) -> list[tuple[int, int, float]]:
    return sorted((batch.ids[i], slot, batch.intended[i])
                  for slot, queue in enumerate(acc.queues) for batch in queue
                  for i in range(batch.record_count))


def test_due_then_generate_appends_what_generate_alone_appends() -> None:
    asked, asked_acc = _generator(keys=5)
    plain, plain_acc = _generator(keys=5)
    now = 10.0
    while not plain.finished(now):
        now += 0.0007
        due = asked.due(now)
        assert asked.generate(now) == due
        assert plain.generate(now) == due
    assert asked.generated == plain.generated == 10_000
    assert _messages(asked_acc) == _messages(plain_acc)
    assert asked.metrics.generator_lag.count == 10_000


def test_a_skip_between_due_and_generate_is_not_appended_twice() -> None:
    generator, acc = _generator()
    now = 10.01002  # messages 0..200 are due (one every 50 µs)
    assert generator.due(now) == 201
    generator.skip(50, now, "max.block.ms")
    assert generator.due(now) == 151
    generator.skip(1, now, "max.block.ms")
    assert generator.generate(now) == 150  # counted again after the skip
    ids = [message_id for message_id, _, _ in _messages(acc)]
    assert ids == list(range(51, 201))
    assert generator.topics[0].metrics.failed == 51
    assert generator.generated == 201
