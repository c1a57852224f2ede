"""The closed-loop schedule: N synchronous senders, each waiting for its acknowledgement.

The open-loop schedules (`schedule`) say when each message is *meant* to be sent whatever
happened to the ones before: they answer "at this arrival rate, what latency and how many
requests?" (a service fed by independent users). A closed loop is the other question:
"a caller that sends, waits for the acknowledgement, then sends again (perhaps after a
think time), how fast does it go and what does each send cost?" (a synchronous
`producer.send().get()` loop, a request handler writing before it answers). There the
rate is an outcome, and a linger window is paid on every message rather than amortised:
the case KIP-1030's `linger.ms` 5 default hurt.

Sender k sends message j+1 at the instant message j completed (acknowledged, failed or
timed out) plus the think time; that instant is the message's intended time, so its
latency is what the synchronous caller waited. Completions are counted, not matched to
senders: any completion frees one sender (they are interchangeable). Pure: the caller
says what has completed by when (`observe`); no clock is read.
"""

from __future__ import annotations

import heapq
import math

import numpy as np


class ClosedLoopSchedule:
    """`senders` concurrent synchronous senders with `think_s` between an acknowledgement
    and the next send, until `horizon` seconds (None: until the message cap)."""

    def __init__(self, senders: int, think_s: float = 0.0,
                 horizon: float | None = None) -> None:
        if senders < 1:
            raise ValueError("a closed loop needs at least one sender")
        if think_s < 0:
            raise ValueError("think time cannot be negative")
        self.senders = senders
        self.think_s = think_s
        self.horizon = horizon if horizon is not None else math.inf
        self._ready: list[float] = [0.0] * senders  # a heap: when each idle sender may send
        self.in_flight = 0
        self.completed = 0

    def observe(self, elapsed: float, completed_total: int) -> int:
        """`completed_total` messages have completed by `elapsed`: those not seen yet free
        their senders, which may send again after the think time. Returns how many."""
        new = min(completed_total - self.completed, self.in_flight)
        if new <= 0:
            return 0
        when = elapsed + self.think_s
        for _ in range(new):
            heapq.heappush(self._ready, when)
        self.in_flight -= new
        self.completed += new
        return new

    def pending(self, elapsed: float, limit: int) -> int:
        """Senders ready to send at `elapsed` (at most `limit`), none after the horizon."""
        if elapsed >= self.horizon:
            return 0
        count = 0
        for when in self._ready:
            if when <= elapsed:
                count += 1
        return min(count, limit)

    def take(self, elapsed: float, count: int) -> np.ndarray:
        """The intended offsets of `count` sends now (each sender's ready time, earliest
        first); those senders now wait for their acknowledgements."""
        taken: list[float] = []
        while len(taken) < count and self._ready and self._ready[0] <= elapsed:
            taken.append(heapq.heappop(self._ready))
        self.in_flight += len(taken)
        return np.asarray(taken, dtype=float)

    def next_offset(self) -> float | None:
        """When the next idle sender may send (None: every sender waits for an
        acknowledgement, or the horizon has passed)."""
        if not self._ready:
            return None
        when = self._ready[0]
        return when if when < self.horizon else None

    def over(self, elapsed: float) -> bool:
        """Whether the loop has ended: its horizon passed (what is in flight settles on
        its own; no sender sends again)."""
        return elapsed >= self.horizon
