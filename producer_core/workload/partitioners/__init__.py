"""Partitioners: which partition each message goes to, by name (`-X partitioner=`).

kbatch's own names: `round_robin` (keyless messages spread one at a time; the default, so
per-partition linger is measured against an evenly loaded topic), `sticky` (KIP-480, Java
2.4-3.2) and `uniform_sticky` (KIP-794, Java's built-in partitioner since 3.3). librdkafka's
names (`consistent`, `consistent_random`, `murmur2`, `murmur2_random`, `fnv1a`,
`fnv1a_random`, `random`) hash keys as librdkafka does and, for keyless messages, stick
to a random partition for `sticky.partitioning.linger.ms` as librdkafka does.

Keyed messages keep Java's murmur2 under kbatch's names (unless `uniform_sticky` with
`partitioner.ignore.keys=true`). A topic of a workload file may name its own partitioner;
the `-X` one is the default for the others.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

KBATCH_PARTITIONERS = ("round_robin", "sticky", "uniform_sticky")
LIBRDKAFKA_PARTITIONERS = ("consistent", "consistent_random", "murmur2", "murmur2_random",
                           "fnv1a", "fnv1a_random", "random")
PARTITIONERS = KBATCH_PARTITIONERS + LIBRDKAFKA_PARTITIONERS
DEFAULT_PARTITIONER = "round_robin"


@dataclass(frozen=True)
class Partitioning:
    """The run's partitioner settings (`-X partitioner*`, `sticky.partitioning.linger.ms`)."""

    name: str = DEFAULT_PARTITIONER
    adaptive: bool = True
    availability_timeout_s: float = 0.0
    ignore_keys: bool = False
    sticky_linger_s: float = 0.010
    batch_size: int = 16384
    linger_s: float = 0.005
    """linger.ms: a batch is ready this long after it was created (availability timeout)."""

    @classmethod
    def from_settings(cls, settings: Any) -> Partitioning:
        return cls(
            name=settings["partitioner"],
            adaptive=settings["partitioner.adaptive.partitioning.enable"] == "true",
            availability_timeout_s=settings["partitioner.availability.timeout.ms"] / 1000.0,
            ignore_keys=settings["partitioner.ignore.keys"] == "true",
            sticky_linger_s=settings["sticky.partitioning.linger.ms"] / 1000.0,
            batch_size=settings["batch.size"],
            linger_s=settings["linger.ms"] / 1000.0,
        )

    def for_topic(self, name: str | None) -> Partitioning:
        """The settings for a topic that names its own partitioner (or not: None)."""
        return self if name is None or name == self.name else replace(self, name=name)

    @property
    def librdkafka(self) -> bool:
        """A librdkafka name: mode librdkafka lets librdkafka itself choose partitions."""
        return self.name in LIBRDKAFKA_PARTITIONERS
