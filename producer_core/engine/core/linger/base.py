"""What every linger policy is: a pure decision of what to send to which broker, and when.

A policy never reads a clock or touches a socket. The engine tells it about appends,
retries and responses (each with the time), asks it with `poll(now, context)` which
requests to send, and asks `next_wakeup()` when to ask again. Everything the engine knows
that a policy may read (free request slots per broker, the generator's backlog, memory
pressure, a flush) comes in one `PollContext` per poll, not through setters, so there is
no order of calls to get right. That keeps every policy testable with synthetic time, and
lets new modes plug into one engine.

The core (`LingerPolicy`) is what every mode implements. What only some modes do is a
small protocol a mode opts into by having the methods, checked once by the caller:
`RunStart` (aimd), `LatencyFeedback` (aimd), `Admission` (bruce), `Reporting` (every mode
with statistics).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from producer_core.engine.core.accumulator import ProducerBatch, TopicPartition


class QueueView(Protocol):
    """What a policy may see of the accumulator: its queues, read-only, and one way to
    take a batch to send (`pop_head`, which `accumulator.drain_request` uses too). A policy
    does not append, hold, requeue or resize: the engine does, and a mode that needs a
    different record batch limit declares it (`ModeSpec.batch_size`)."""

    slots: list[TopicPartition]

    @property
    def queues(self) -> Sequence[Sequence[ProducerBatch]]: ...

    @property
    def queued_bytes(self) -> int: ...

    @property
    def queued_records(self) -> int: ...

    def has_data(self, slot: int) -> bool: ...

    def slot_bytes(self, slot: int) -> int: ...

    def head(self, slot: int) -> ProducerBatch | None: ...

    def head_is_full(self, slot: int) -> bool: ...

    def pop_head(self, slot: int, now: float) -> ProducerBatch: ...


@dataclass
class RequestPlan:
    """One ProduceRequest to send: the broker, its batches (one per partition), and why."""

    broker: int
    batches: list[ProducerBatch]
    reason: str


@dataclass(frozen=True)
class RequestLimits:
    """What one ProduceRequest may carry."""

    max_request_size: int
    max_partitions: int | None = None


@dataclass(frozen=True)
class PollContext:
    """The engine's state a policy may read at a `poll` (one object per poll).

    A policy keeps the last one (`LingerPolicy.context`), so `next_wakeup`, which the
    engine asks right after a poll, sees the same state.
    """

    free_slots: Mapping[int, int]
    """Broker -> request slots free (``max.in.flight.requests.per.connection`` less the
    requests in flight); a broker missing has none. `poll` sends at most that many."""
    backlog: float | None = None
    """The intended send time of the oldest message the generator has not appended yet (it
    may be overdue: a pass appends at most a chunk), -inf while an unthrottled topic always
    has one waiting, None when no scheduled message is left. Mode adaptive queues its
    flushes behind it."""
    memory_exhausted: bool = False
    """The generator is blocked waiting for ``buffer.memory``: modes java and bruce treat
    everything as ready, adaptive stops waiting for the backlog."""
    flushing: bool = False
    """Everything queued is ready (end of run, close, a transaction's end)."""


IDLE = PollContext({})
"""The context before the first poll: no free slot, nothing pending, no flush."""


class LingerPolicy(ABC):
    """Base for linger modes. `leaders[slot]` is the node id leading that partition slot."""

    name: str = "?"

    def __init__(self, accumulator: QueueView, leaders: list[int], limits: RequestLimits):
        self.accumulator = accumulator
        self.leaders = leaders
        self.limits = limits
        self.context = IDLE
        """The last poll's context (every `poll` sets it first)."""

    @property
    def flushing(self) -> bool:
        return self.context.flushing

    @property
    def memory_exhausted(self) -> bool:
        return self.context.memory_exhausted

    def set_leaders(self, leaders: list[int]) -> None:
        self.leaders = leaders

    @abstractmethod
    def on_append(self, slot: int, event: int, now: float) -> None:
        """A slot became non-empty (BECAME_NONEMPTY) or filled a batch (BATCH_FILLED)."""

    @abstractmethod
    def on_requeue(self, slot: int, now: float) -> None:
        """A batch came back to the head of `slot` for a retry: it should go soon."""

    @abstractmethod
    def poll(self, now: float, context: PollContext) -> list[RequestPlan]:
        """Requests to send now, at most `context.free_slots[broker]` per broker; drains
        batches. Implementations set `self.context = context` first."""

    @abstractmethod
    def next_wakeup(self) -> float | None:
        """The next time `poll` may have something new to send, or None if only an event can."""

    def on_response(
        self, broker: int, rtt_s: float, now: float, throttle_ms: int, retried: bool
    ) -> None:
        """A request to `broker` was answered after `rtt_s` (or failed: `retried`), with the
        broker's throttle time. Adaptive modes learn from it; fixed ones ignore it."""
        return None


# ------------------------------------------------------------ optional capabilities


class AppendListener(Protocol):
    """What the generator tells whoever batches (a policy, or nothing for a real client)."""

    def on_append(self, slot: int, event: int, now: float) -> None:
        """See `LingerPolicy.on_append`."""


@runtime_checkable
class RunStart(Protocol):
    """A mode that keeps time series relative to the run's start."""

    def begin(self, start: float) -> None:
        """The run's schedule starts at `start`."""


@runtime_checkable
class LatencyFeedback(Protocol):
    """A mode that steers toward a latency target from acknowledged messages."""

    def on_acknowledged(self, broker: int, latencies_s: np.ndarray, now: float) -> None:
        """End-to-end latencies (seconds) of messages acknowledged by `broker`."""


@runtime_checkable
class Admission(Protocol):
    """A mode that decides which new messages are sent, and where keyless ones go (Bruce).
    Without it every message is admitted and keyless ones follow the partitioner."""

    def admit(self, topic_index: int, count: int, now: float) -> int:
        """How many of `count` new messages of a topic may be sent (a rate limit); the
        rest are discarded and counted."""

    def keyless_slots(
        self, topic_index: int, first_slot: int, partitions: int, sequences: range,
        now: float,
    ) -> list[int] | None:
        """Slots for keyless messages, if the mode chooses them; None lets the
        partitioner spread them."""


@runtime_checkable
class Reporting(Protocol):
    """A mode with its own metrics for the results JSON, under `stats_key`."""

    stats_key: str

    def stats(self) -> dict[str, object]:
        """Mode-specific metrics."""


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
