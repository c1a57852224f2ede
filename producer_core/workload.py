"""The workload: what to send, how fast, and when each message was *meant* to be sent.

Latency is measured from a message's intended send time on the rate schedule, not from
when the generator got round to it (wrk2's correction for coordinated omission). The
schedule is therefore a pure function of the message index: message `i` of a constant-rate
run is due at `start + i / rate`, whatever the generator was doing at the time.
"""

from __future__ import annotations

import math
import random
from dataclasses import asdict, dataclass
from typing import Any

from producer_core.errors import UsageError
from producer_core.partitioner import key_table

ID_BYTES = 8
"""Each value starts with the message id (8 bytes, big-endian) so a reader can check it."""


@dataclass(frozen=True)
class Workload:
    """One topic's load. `rate=None` means unthrottled (as fast as the engine goes)."""

    topic: str = "kbatch"
    partitions: int = 16
    rate: float | None = 1000.0
    duration_s: float | None = 10.0
    messages: int | None = None
    message_size: int = 100
    keys: int = 0  # 0: keyless (round-robin); N: uniform over N keys, murmur2-partitioned
    seed: int = 1
    warmup_s: float = 0.0

    def __post_init__(self) -> None:
        problems = []
        if not self.topic or len(self.topic) > 249:
            problems.append("the topic name must have 1 to 249 characters")
        if self.partitions < 1 or self.partitions > 100_000:
            problems.append(f"--partitions must be 1 to 100000 (got {self.partitions})")
        if self.rate is not None and not (self.rate > 0 and math.isfinite(self.rate)):
            problems.append(f"--rate must be a positive number or 'max' (got {self.rate})")
        if self.duration_s is None and self.messages is None:
            problems.append("give --duration or --messages")
        if self.duration_s is not None and not self.duration_s > 0:
            problems.append(f"--duration must be positive (got {self.duration_s})")
        if self.messages is not None and self.messages < 1:
            problems.append(f"--messages must be at least 1 (got {self.messages})")
        if self.message_size < 0 or self.message_size > 64 * 1024 * 1024:
            problems.append(f"--message-size must be 0 to 67108864 bytes (got {self.message_size})")
        if self.keys < 0:
            problems.append(f"--keys must be 0 (keyless) or more (got {self.keys})")
        if self.warmup_s < 0:
            problems.append(f"--warmup must not be negative (got {self.warmup_s})")
        if (
            self.duration_s is not None
            and self.messages is None
            and self.warmup_s >= self.duration_s
        ):
            problems.append("--warmup must be shorter than --duration")
        if problems:
            raise UsageError("Invalid workload: " + "; ".join(problems) + ".")

    @property
    def total_messages(self) -> int | None:
        """How many messages the run sends, if known in advance."""
        if self.messages is not None:
            if self.rate is not None and self.duration_s is not None:
                return min(self.messages, int(self.rate * self.duration_s))
            return self.messages
        if self.rate is not None and self.duration_s is not None:
            return int(self.rate * self.duration_s)
        return None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class ConstantSchedule:
    """Message `i` is intended at `start + i / rate`; unthrottled runs have no schedule."""

    def __init__(self, rate: float | None) -> None:
        self.rate = rate
        self.interval = 1.0 / rate if rate else 0.0

    def due_count(self, elapsed_s: float) -> int:
        """How many messages should have been sent by `elapsed_s` after the start."""
        if self.rate is None:
            return 1 << 62
        return int(elapsed_s * self.rate) + 1

    def intended_offset(self, index: int) -> float:
        return index * self.interval

    def next_due_in(self, index: int, elapsed_s: float) -> float:
        """Seconds until message `index` is due (<= 0 means now)."""
        return index * self.interval - elapsed_s


class MessageSource:
    """Makes message `i`: its partition, key and value. Deterministic for a given seed.

    Values embed the message id and are otherwise one fixed random payload, so generating a
    message costs one small bytes concatenation.
    """

    def __init__(self, workload: Workload) -> None:
        rng = random.Random(workload.seed)
        self.partitions = workload.partitions
        size = workload.message_size
        self.pad = rng.randbytes(max(0, size - ID_BYTES))
        self.size = size
        self.keys: list[bytes] = []
        self.key_partitions: list[int] = []
        if workload.keys:
            self.keys, self.key_partitions = key_table(workload.keys, workload.partitions)
        self._rng = random.Random(workload.seed + 1)

    def value(self, message_id: int) -> bytes:
        if self.size >= ID_BYTES:
            return message_id.to_bytes(ID_BYTES, "big") + self.pad
        return message_id.to_bytes(ID_BYTES, "big")[ID_BYTES - self.size :]

    def key_index(self) -> int:
        return self._rng.randrange(len(self.keys))


def message_id_of(value: bytes) -> int:
    """The id a value carries (inverse of `MessageSource.value` for sizes >= 8)."""
    return int.from_bytes(value[:ID_BYTES], "big")
