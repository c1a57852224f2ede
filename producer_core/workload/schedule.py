"""Rate profiles: when each message of a topic is intended to be sent.

A schedule hands out intended send offsets (seconds from the run's start) in order.
Deterministic profiles (constant, step, ramp, bursts) are piecewise-linear rates whose
message `k` is intended at the instant the integral of the rate reaches `k`; the offsets
are therefore a pure function of `k`, and latency is measured from them however late the
generator is. Poisson arrivals come from a seeded exponential sequence.

Pure: no clock. The engine asks `take(elapsed, limit)` for what is due.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass

import numpy as np

from producer_core.errors import UsageError


@dataclass(frozen=True)
class Segment:
    """Rate going linearly from `rate_start` to `rate_end` over `[start, end)` seconds."""

    start: float
    end: float
    rate_start: float
    rate_end: float

    @property
    def length(self) -> float:
        return self.end - self.start

    @property
    def slope(self) -> float:
        """Rate change per second (0 for constant and open-ended segments)."""
        if not math.isfinite(self.length) or not self.length:
            return 0.0
        return (self.rate_end - self.rate_start) / self.length

    def count(self, t: float) -> float:
        """Messages intended in [start, t] (t within the segment), as a real number."""
        dt = min(max(t - self.start, 0.0), self.length)
        return self.rate_start * dt + self.slope * dt * dt / 2

    def offset(self, k: float) -> float:
        """`offsets` for one value, in plain Python (the scheduler asks this every pass)."""
        r0, slope = self.rate_start, self.slope
        if abs(slope) < 1e-12:
            return self.start + k / r0
        return self.start + (math.sqrt(max(r0 * r0 + 2.0 * slope * k, 0.0)) - r0) / slope

    def offsets(self, k: np.ndarray) -> np.ndarray:
        """Offsets at which the segment's own count reaches each of `k` (floats >= 0)."""
        r0, slope = self.rate_start, self.slope
        if abs(slope) < 1e-12:
            return self.start + k / r0
        # r0*dt + slope*dt^2/2 = k  ->  dt = (-r0 + sqrt(r0^2 + 2*slope*k)) / slope
        disc = np.maximum(r0 * r0 + 2.0 * slope * k, 0.0)
        return self.start + (np.sqrt(disc) - r0) / slope


class PiecewiseSchedule:
    """Constant, step, ramp and burst profiles: piecewise-linear rate segments.

    The engine asks it several times per generator pass (what is due, take it, when is the
    next one), thousands of passes a second, so segment constants are computed once, a
    segment is found by bisection, and the due count and next offset are remembered
    until the elapsed time or the next message changes. Same arithmetic as `Segment`.
    """

    def __init__(self, segments: list[Segment], horizon: float | None) -> None:
        self.segments = [s for s in segments if s.length > 0]
        self.horizon = horizon if horizon is not None else math.inf
        self._bases: list[float] = []
        self._ends: list[float] = []
        total = 0.0
        for segment in self.segments:
            self._bases.append(total)
            total += segment.count(segment.end) if math.isfinite(segment.end) else math.inf
            self._ends.append(total)
        self._time_ends = [s.end for s in self.segments]
        self._active = [s.rate_start + s.rate_end > 0 for s in self.segments]
        self._shape = [(s.start, s.length, s.rate_start, s.slope) for s in self.segments]
        self._total = self._count_until(self.horizon) if self.segments else 0.0
        self._due_key: tuple[float, int] | None = None
        self._due = 0
        self._next_key = -1
        self._next = math.inf
        self.index = 0  # next message number

    def _segment_of(self, k: float) -> int | None:
        """The first segment with messages whose count range holds message `k`."""
        index = bisect_right(self._ends, k)
        active = self._active
        while index < len(active) and not active[index]:
            index += 1
        return index if index < len(active) else None

    def offset_of(self, k: int) -> float:
        """Intended offset of message `k` (inf if the profile never reaches it)."""
        index = self._segment_of(k)
        if index is None:
            return math.inf
        start, _, r0, slope = self._shape[index]
        n = k - self._bases[index]  # the message's place in its segment
        if abs(slope) < 1e-12:  # as Segment.offset
            return start + n / r0
        return start + (math.sqrt(max(r0 * r0 + 2.0 * slope * n, 0.0)) - r0) / slope

    def _count_until(self, t: float) -> float:
        """Messages intended in [0, t] as a real number (message 0 is at the start)."""
        t = min(t, self.horizon)
        index = bisect_right(self._time_ends, t)  # the first segment with t < its end
        if index == len(self._time_ends):
            index -= 1
            t = self._time_ends[index]
        start, length, r0, slope = self._shape[index]
        dt = min(max(t - start, 0.0), length)  # as Segment.count
        return self._bases[index] + (r0 * dt + slope * dt * dt / 2)

    def due_count(self, elapsed: float) -> int:
        """How many messages have an intended offset at or before `elapsed`."""
        key = (elapsed, self.index)
        if key == self._due_key:
            return self._due
        if elapsed < 0 or not self.segments:
            return 0
        due = math.floor(self._count_until(elapsed)) + 1
        total = self._total
        if math.isfinite(total):
            due = min(due, math.ceil(total))
        # the count is continuous; at zero-rate stretches and boundaries check the offset
        while due > self.index and self.offset_of(due - 1) > elapsed:
            due -= 1
        self._due_key, self._due = key, due
        return due

    def offsets_of(self, first: int, count: int) -> np.ndarray:
        """Intended offsets of messages first .. first+count-1."""
        k = np.arange(first, first + count, dtype=np.float64)
        # the usual pass lies in one segment: no masks (each numpy call costs microseconds)
        index = bisect_right(self._ends, first)
        if index < len(self._ends) and first + count <= self._ends[index] \
                and self._active[index]:
            start, _, r0, slope = self._shape[index]
            if start == 0.0 and self._bases[index] == 0.0 and abs(slope) < 1e-12:
                k /= r0  # a constant rate from the start: Segment.offsets, without the + 0.0s
                return k
            return np.asarray(self.segments[index].offsets(k - self._bases[index]),
                              dtype=np.float64)
        out = np.empty(count, dtype=np.float64)
        pending = np.ones(count, dtype=bool)
        for base, segment in zip(self._bases, self.segments, strict=True):
            end_count = base + segment.count(segment.end) if math.isfinite(
                segment.end) else math.inf
            here = pending & (k < end_count) & (segment.rate_start + segment.rate_end > 0)
            if here.any():
                out[here] = segment.offsets(k[here] - base)
                pending &= ~here
        out[pending] = math.inf
        return out

    def pending(self, elapsed: float, limit: int) -> int:
        """How many messages are due and not yet taken (at most `limit`)."""
        return max(0, min(self.due_count(elapsed) - self.index, limit))

    def take(self, elapsed: float, limit: int) -> np.ndarray:
        due = self.due_count(elapsed)
        count = max(0, min(due - self.index, limit))
        offsets = self.offsets_of(self.index, count)
        self.index += count
        return offsets

    def next_offset(self) -> float | None:
        if self._next_key != self.index:
            self._next_key, self._next = self.index, self.offset_of(self.index)
        offset = self._next
        return offset if offset < self.horizon else None

    @property
    def finished(self) -> bool:
        return self.next_offset() is None


class PoissonSchedule:
    """Arrivals with exponential gaps at a mean rate, from a seeded generator."""

    BLOCK = 8192

    def __init__(self, rate: float, horizon: float | None, seed: int) -> None:
        self.rate = rate
        self.horizon = horizon if horizon is not None else math.inf
        self._rng = np.random.default_rng(seed)
        self._pending = np.empty(0)
        self._last = 0.0
        self.index = 0

    def _refill(self) -> None:
        gaps = self._rng.exponential(1.0 / self.rate, self.BLOCK)
        block = self._last + np.cumsum(gaps)
        self._last = float(block[-1])
        self._pending = np.concatenate([self._pending, block])

    def pending(self, elapsed: float, limit: int) -> int:
        cutoff = min(elapsed, self.horizon - 1e-12)
        while self._pending.size == 0 or (self._pending[-1] <= cutoff
                                          and self._pending.size < limit):
            self._refill()
        return min(int(np.searchsorted(self._pending, cutoff, side="right")), limit)

    def take(self, elapsed: float, limit: int) -> np.ndarray:
        cutoff = min(elapsed, self.horizon - 1e-12)
        while self._pending.size == 0 or (self._pending[-1] <= cutoff
                                          and self._pending.size < limit):
            self._refill()
        count = int(np.searchsorted(self._pending, cutoff, side="right"))
        count = min(count, limit)
        taken, self._pending = self._pending[:count], self._pending[count:]
        self.index += count
        return taken

    def next_offset(self) -> float | None:
        if self._pending.size == 0:
            self._refill()
        offset = float(self._pending[0])
        return offset if offset < self.horizon else None

    @property
    def finished(self) -> bool:
        return self.next_offset() is None


class Unthrottled:
    """`--rate max`: every message is due at once; its intended time is its append time."""

    horizon = math.inf
    index = 0

    def take(self, elapsed: float, limit: int) -> np.ndarray:
        self.index += limit
        return np.full(limit, math.nan)

    def next_offset(self) -> float | None:
        return 0.0

    finished = False


Schedule = PiecewiseSchedule | PoissonSchedule | Unthrottled


def constant(rate: float, horizon: float | None) -> PiecewiseSchedule:
    return PiecewiseSchedule([Segment(0.0, math.inf, rate, rate)], horizon)


def step(steps: list[tuple[float, float]], horizon: float | None) -> PiecewiseSchedule:
    """(rate, seconds) pairs in order; the last rate holds until the run ends."""
    segments, t = [], 0.0
    for index, (rate, seconds) in enumerate(steps):
        end = math.inf if index == len(steps) - 1 else t + seconds
        segments.append(Segment(t, end, rate, rate))
        t = end
    return PiecewiseSchedule(segments, horizon)


def ramp(rate_from: float, rate_to: float, over: float, horizon: float | None
         ) -> PiecewiseSchedule:
    """Linear from `rate_from` to `rate_to` over `over` seconds, then `rate_to`."""
    return PiecewiseSchedule(
        [Segment(0.0, over, rate_from, rate_to), Segment(over, math.inf, rate_to, rate_to)],
        horizon,
    )


def bursts(rate: float, on_s: float, off_s: float, horizon: float | None
           ) -> PiecewiseSchedule:
    """`rate` for `on_s`, silence for `off_s`, repeated until the horizon."""
    if horizon is None or not math.isfinite(horizon):
        raise UsageError("A bursts profile needs a run duration.")
    segments, t = [], 0.0
    while t < horizon:
        segments.append(Segment(t, t + on_s, rate, rate))
        segments.append(Segment(t + on_s, t + on_s + off_s, 0.0, 0.0))
        t += on_s + off_s
    return PiecewiseSchedule(segments, horizon)
