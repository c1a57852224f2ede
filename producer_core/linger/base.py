"""What every linger policy is: a pure decision of what to send to which broker, and when.

A policy never reads a clock or touches a socket. The engine tells it about appends and
retries (with the time), asks it with `poll(now, free_slots)` which requests to send, and
asks `next_wakeup()` when to ask again. That keeps every policy testable with synthetic
time, and lets new modes (broker-level collector, adaptive linger) plug into one engine.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from producer_core.accumulator import Accumulator, ProducerBatch


@dataclass
class RequestPlan:
    """One ProduceRequest to send: the broker, its batches (one per partition), and why."""

    broker: int
    batches: list[ProducerBatch]
    reason: str
    extra: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class RequestLimits:
    """What one ProduceRequest may carry."""

    max_request_size: int
    max_partitions: int | None = None


class LingerPolicy(ABC):
    """Base for linger modes. `leaders[slot]` is the node id leading that partition slot."""

    name: str = "?"
    stats_key: str = "policy"
    """Where `stats()` goes in the results JSON ("collector" for the collector modes)."""

    def __init__(self, accumulator: Accumulator, leaders: list[int], limits: RequestLimits):
        self.accumulator = accumulator
        self.leaders = leaders
        self.limits = limits
        self.flushing = False
        self.memory_exhausted = False

    def set_leaders(self, leaders: list[int]) -> None:
        self.leaders = leaders

    @abstractmethod
    def on_append(self, slot: int, event: int, now: float) -> None:
        """A slot became non-empty (BECAME_NONEMPTY) or filled a batch (BATCH_FILLED)."""

    @abstractmethod
    def on_requeue(self, slot: int, now: float) -> None:
        """A batch came back to the head of `slot` for a retry: it should go soon."""

    @abstractmethod
    def poll(self, now: float, free_slots: Mapping[int, int]) -> list[RequestPlan]:
        """Requests to send now, at most `free_slots[broker]` per broker; drains batches."""

    @abstractmethod
    def next_wakeup(self) -> float | None:
        """The next time `poll` may have something new to send, or None if only an event can."""

    def begin(self, start: float) -> None:
        """The run's schedule starts at `start` (for time series relative to it)."""
        return None

    def set_backlog(self, oldest_due: float | None) -> None:
        """Before each `poll` of a generator pass: the intended send time of the oldest
        message the generator has not appended yet (it may be overdue: a pass appends at
        most a chunk), -inf while an unthrottled topic always has one waiting, or None
        when no scheduled message is left. Mode `adaptive` queues its flushes behind these;
        the others ignore it."""
        return None

    def set_memory_exhausted(self, exhausted: bool) -> None:
        """The generator is (or no longer is) blocked waiting for buffer memory.

        Java treats every partition as ready then; the other modes ignore it.
        """
        self.memory_exhausted = exhausted

    def on_response(
        self, broker: int, rtt_s: float, now: float, throttle_ms: int, retried: bool
    ) -> None:
        """A request to `broker` was answered after `rtt_s` (or failed: `retried`), with the
        broker's throttle time. Adaptive modes learn from it; fixed ones ignore it."""
        return None

    def on_acknowledged(self, broker: int, latencies_s: object, now: float) -> None:
        """End-to-end latencies (numpy array, seconds) of messages acknowledged by
        `broker`, for modes that steer toward a latency target."""
        return None

    def admit(self, topic_index: int, count: int, now: float) -> int:
        """How many of `count` new messages of a topic may be sent (Bruce's rate limit);
        the rest are discarded and counted. Other modes admit everything."""
        return count

    def keyless_slots(
        self, topic_index: int, first_slot: int, partitions: int, sequences: range
    ) -> list[int] | None:
        """Slots for keyless messages, if the mode chooses them (Bruce picks per request);
        None lets the engine spread them round-robin."""
        return None

    def start_flush(self) -> None:
        """From now on everything queued is ready (end of run, close, explicit flush)."""
        self.flushing = True

    def stats(self) -> dict[str, object]:
        """Mode-specific metrics for the results."""
        return {}


def summarize(values: np.ndarray, keys: tuple[str, ...], suffix: str = "") -> dict[str, float]:
    """`mean`, `p50`, `p99` and `max` of a policy's per-send values, as asked, rounded for
    the results JSON."""
    compute = {
        "mean": lambda: np.mean(values),
        "p50": lambda: np.percentile(values, 50),
        "p99": lambda: np.percentile(values, 99),
        "max": lambda: np.max(values),
    }
    return {key + suffix: round(float(compute[key]()), 3) for key in keys}
