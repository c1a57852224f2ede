"""Slots: every partition of a workload's topics numbered 0..n-1, topic after topic.

The accumulator, the generator and every driver (kbatch's engine, librdkafka, the Java and
Go clients) number partitions this way, so a slot means the same partition everywhere; the
layout is computed here once instead of in each of them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol


class _Named(Protocol):
    @property
    def topic(self) -> str: ...


@dataclass(frozen=True)
class SlotLayout:
    """The topics in slot order, how many partitions each has, and where each starts."""

    topics: tuple[str, ...]
    partitions: tuple[int, ...]
    """Partitions per topic, in the order of `topics`."""
    first_slots: tuple[int, ...]
    """The slot of each topic's partition 0."""
    topic_index_of: tuple[int, ...]
    """Slot -> index of its topic in `topics`."""

    @classmethod
    def of_topics(cls, topics: Iterable[tuple[str, int]]) -> SlotLayout:
        """From (topic, partition count) pairs, in slot order."""
        names: list[str] = []
        counts: list[int] = []
        firsts: list[int] = []
        index_of: list[int] = []
        for name, count in topics:
            firsts.append(len(index_of))
            index_of.extend([len(names)] * count)
            names.append(name)
            counts.append(count)
        return cls(tuple(names), tuple(counts), tuple(firsts), tuple(index_of))

    @classmethod
    def of_slots(cls, slots: Iterable[_Named]) -> SlotLayout:
        """From slots that name their topic (the accumulator's), contiguous per topic."""
        pairs: list[tuple[str, int]] = []
        for slot in slots:
            if pairs and pairs[-1][0] == slot.topic:
                pairs[-1] = (slot.topic, pairs[-1][1] + 1)
            else:
                pairs.append((slot.topic, 1))
        return cls.of_topics(pairs)

    def __len__(self) -> int:
        return len(self.topic_index_of)

    def targets(self) -> list[tuple[str, int]]:
        """Slot -> (topic, partition)."""
        return [(name, partition) for name, count in zip(self.topics, self.partitions,
                                                         strict=True)
                for partition in range(count)]
