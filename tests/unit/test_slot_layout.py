"""One numbering of partitions (slots) for the accumulator and every driver."""

from __future__ import annotations

from producer_core.engine.core.accumulator import TopicPartition
from producer_core.workload.slot_layout import SlotLayout
from producer_core.workload.workload import Workload


def test_topics_are_numbered_one_after_another() -> None:
    layout = SlotLayout.of_topics([("a", 2), ("b", 3)])
    assert layout.first_slots == (0, 2)
    assert layout.topic_index_of == (0, 0, 1, 1, 1)
    assert layout.targets() == [("a", 0), ("a", 1), ("b", 0), ("b", 1), ("b", 2)]
    assert len(layout) == 5


def test_the_accumulators_slots_give_the_same_layout() -> None:
    layout = SlotLayout.of_topics([("a", 2), ("b", 1)])
    slots = [TopicPartition(topic, partition) for topic, partition in layout.targets()]
    assert SlotLayout.of_slots(slots) == layout


def test_a_workload_without_a_file_is_its_one_topic() -> None:
    workload = Workload(topic="t", partitions=4)
    assert workload.slot_layout() == SlotLayout(("t",), (4,), (0,), (0, 0, 0, 0))
