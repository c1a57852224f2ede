"""librdkafka's choice for keyless messages (`rd_kafka_msg_partitioner`).

With `consistent`, `murmur2` or `fnv1a` a NULL key is hashed like an empty one: every
keyless message goes to one partition (checked against librdkafka 2.x in the tests). With
the `*_random` names and `random`, keyless messages go to a random partition that is kept
for `sticky.partitioning.linger.ms` (librdkafka's `rd_kafka_msg_sticky_partition`); 0 draws
anew for every message. The clock is the generator pass's (`now`), i.e. when kbatch hands
the messages over, as librdkafka's is the `produce()` call.
"""

from __future__ import annotations

import numpy as np

from producer_core.workload.partitioners.hashes import KEY_HASHES

HASH_ONLY = ("consistent", "murmur2", "fnv1a")


class LibrdkafkaKeyless:
    """Keyless partitions of one topic under a librdkafka partitioner name."""

    def __init__(self, name: str, partitions: int, seed: int, sticky_linger_s: float) -> None:
        self.partitions = partitions
        self.fixed = KEY_HASHES[name](b"", partitions) if name in HASH_ONLY else None
        self.linger_s = sticky_linger_s
        self.rng = np.random.default_rng(seed)
        self.current = 0
        self.until = -np.inf
        self.switches = 0

    def choose(self, sizes: list[int], now: float) -> list[int]:
        count = len(sizes)
        if self.fixed is not None:
            return [self.fixed] * count
        if self.linger_s <= 0:
            return self.rng.integers(0, self.partitions, count).tolist()
        if now >= self.until:
            self.current = int(self.rng.integers(self.partitions))
            self.until = now + self.linger_s
            self.switches += 1
        return [self.current] * count
