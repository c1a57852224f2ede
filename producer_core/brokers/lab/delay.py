"""The lab's network delay model: when a response may leave the facade (pure, no clock).

Each response gets its own delay ``d``, drawn uniformly from ``[R - J, R + J]`` (``R`` the
round trip, ``J`` the jitter; ``J <= R`` so ``d >= 0`` and the mean stays ``R``). The
response is held until ``reply_time + d``, where ``reply_time`` is when the backend's
answer reached the facade, and never before the previous response of the same connection
(TCP delivers in order, so a response that drew a short delay waits behind one that drew
a long one, as with netem's uniform jitter on one flow).

Holding the response for the whole round trip after the backend answered is the same, for
the client, as delaying the request by ``d/2`` on its way in and the response by ``d/2``
on its way out: the client sees ``processing + d`` from its write to its read. Requests
are forwarded at once, so several requests of one connection are in flight together and
their delays overlap exactly as on a real network; only the order is kept.
"""

from __future__ import annotations

import random

from producer_core.errors import UsageError

MAX_RTT_MS = 10_000.0


class DelayModel:
    """Per-response delays of one lab: round trip ``rtt_ms`` with uniform jitter ``jitter_ms``."""

    def __init__(self, rtt_ms: float = 0.0, jitter_ms: float = 0.0, seed: int | None = None):
        if not 0 <= rtt_ms <= MAX_RTT_MS:
            raise UsageError(
                f"--rtt-ms {rtt_ms:g} is out of range: give a round trip from 0 to "
                f"{MAX_RTT_MS:g} ms."
            )
        if not 0 <= jitter_ms <= rtt_ms:
            raise UsageError(
                f"--jitter-ms {jitter_ms:g} must be between 0 and --rtt-ms ({rtt_ms:g}): each "
                "response is delayed by a round trip drawn uniformly from "
                "[rtt - jitter, rtt + jitter], which must not go below zero."
            )
        self.rtt_s = rtt_ms / 1000.0
        self.jitter_s = jitter_ms / 1000.0
        self.seed = seed
        self._random = random.Random(seed)

    @property
    def enabled(self) -> bool:
        return self.rtt_s > 0

    def sample_s(self) -> float:
        if self.jitter_s == 0:
            return self.rtt_s
        return self._random.uniform(self.rtt_s - self.jitter_s, self.rtt_s + self.jitter_s)

    def connection(self) -> OrderedRelease:
        """A release clock for one client connection."""
        return OrderedRelease(self)

    def describe(self) -> str:
        if not self.enabled:
            return "no added delay"
        text = f"round trip {self.rtt_s * 1000:g} ms"
        if self.jitter_s:
            text += f" ± {self.jitter_s * 1000:g} ms (uniform)"
        return text


class OrderedRelease:
    """Release times of one connection's responses: delayed, and never out of order."""

    def __init__(self, model: DelayModel) -> None:
        self._model = model
        self._last = float("-inf")

    def release_at(self, reply_time: float) -> float:
        """When the response whose backend answer arrived at ``reply_time`` may be written."""
        when = max(reply_time + self._model.sample_s(), self._last)
        self._last = when
        return when
