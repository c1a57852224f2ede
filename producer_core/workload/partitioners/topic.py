"""One topic's partitioner, as the generator uses it: keyless choice, keyed choice."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from producer_core.workload.partitioners import Partitioning
from producer_core.workload.partitioners.hashes import KEY_HASHES
from producer_core.workload.partitioners.librdkafka import LibrdkafkaKeyless
from producer_core.workload.partitioners.sticky import Kip480, UniformSticky


class Chooser(Protocol):
    switches: int

    def choose(self, sizes: list[int], now: float) -> list[int]: ...


class TopicPartitioner:
    """Partitions for one topic's messages.

    `keyless` is None for `round_robin`, so the generator keeps its one-line fast path.
    `key_partitions[k]` is key number k's partition (murmur2, or the librdkafka name's hash);
    `random_keys` (librdkafka `random`) draws keyed partitions at random; `keyed` (with
    `uniform_sticky` and `partitioner.ignore.keys`) sends keyed messages through the sticky
    chooser too.
    """

    def __init__(self, config: Partitioning, partitions: int, first_slot: int,
                 accumulator: Any, leaders: list[int] | None, seed: int,
                 keys: list[bytes], key_partitions: list[int]) -> None:
        self.name = config.name
        self.partitions = partitions
        self.keyless: Chooser | None = None
        self.keyed: Chooser | None = None
        self.random_keys = config.name == "random"
        self.rng = np.random.default_rng([seed, 1])
        self.key_partitions = key_partitions
        self.closes: Kip480 | None = None
        """`sticky` closes the batches it leaves (`Kip480.finish_pass`)."""
        name = config.name
        if name == "sticky":
            self.keyless = self.closes = Kip480(partitions, first_slot, accumulator, seed,
                                                config.batch_size)
        elif name == "uniform_sticky":
            self.keyless = UniformSticky(
                partitions, first_slot, accumulator, seed, config.batch_size,
                config.adaptive, config.availability_timeout_s, config.linger_s, leaders)
            if config.ignore_keys:
                self.keyed = self.keyless
        elif config.librdkafka:
            self.keyless = LibrdkafkaKeyless(name, partitions, seed, config.sticky_linger_s)
            if name in KEY_HASHES:
                self.key_partitions = [KEY_HASHES[name](k, partitions) for k in keys]

    def keyed_partitions(self, key_indexes: list[int], sizes: list[int] | None,
                         now: float) -> list[int]:
        if self.keyed is not None:
            assert sizes is not None
            return self.keyed.choose(sizes, now)
        if self.random_keys:
            return self.rng.integers(0, self.partitions, len(key_indexes)).tolist()
        table = self.key_partitions
        return [table[k] for k in key_indexes]

    @property
    def switches(self) -> int:
        """How often the sticky partition changed (0 for round_robin and hashed keys)."""
        return self.keyless.switches if self.keyless is not None else 0
