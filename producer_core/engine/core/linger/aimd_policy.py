"""Mode `aimd`: the broker-level collector with a window each broker's controller adapts.

The broker-level linger design's "Adaptive Signals" sketch, made a mode: every broker
has its own collection window (mode `broker`'s collector,
`producer_core.engine.core.linger.collector_policy`, with its trigger chain, caps, in-flight
handling and send splitting; no send lead), and an AIMD controller moves it between
``aimd.linger.min.ms`` and ``aimd.linger.max.ms``, starting at ``aimd.linger.initial.ms``.

**Signals** (each response of a broker, `on_response`):

- round trip: an exponential moving average with weight 1/8
  (``ema = (7 * ema + rtt) / 8``, the seed's formula; the first response sets it) against
  the smallest round trip seen as the baseline. Failed requests do not update either;
- retries: the request failed, or some of its partitions did not succeed;
- throttle time: the broker asked the client to slow down (``throttle_time_ms > 0``);
- requests in flight: the response came back while every request slot of its broker
  (``max.in.flight.requests.per.connection``) was busy.

**Rules** (per response, as in the seed):

- backpressure, multiplicative decrease (``window *= aimd.decrease.factor``, not below the
  minimum): a retry, throttling, all request slots busy, or
  ``ema > aimd.rtt.decrease.ratio * baseline`` (1.5);
- healthy, additive increase (``window += aimd.linger.step.ms``, not above the maximum):
  ``ema < aimd.rtt.increase.ratio * baseline`` (1.1);
- in between: the window holds.

The direction is the seed's: when the broker slows down, lingering longer would only add
latency on top of a longer round trip (and while every request slot is busy the
collection grows by itself, as in mode `broker`); when it is healthy, a longer window buys
larger requests.

**Latency target** (``aimd.target.p99.ms``, beyond the seed). With a target, the round-trip
ratios no longer move the window; the p99 of the latencies the broker's acknowledgements
carried (`on_acknowledged`) does. Every ``aimd.target.interval.ms``, once at least
`MIN_SAMPLES` messages were acknowledged since the last change settled (one old window plus
a round trip after it, so every sample was collected under the current window), the
controller compares their p99 with the target:

- p99 above the target: multiplicative decrease by ``1 - (p99 - target) / window``, the
  cut that takes the overshoot out of the wait (every message waits at most the window,
  so latency moves one for one with it), but never deeper than ``aimd.decrease.factor``
  (an overshoot the window cannot explain, such as a slow broker);
- p99 at least ``aimd.linger.step.ms`` below the target: additive increase by that step
  (a window one step larger adds at most one step to any message's wait);
- otherwise the window holds: it is within one step of the largest that meets the target.

Retries, throttling and busy request slots still decrease the window with a target.

Pure: no clock and no I/O; time comes in as arguments (seconds).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from producer_core.engine.core.linger.base import PollContext, QueueView, RequestLimits, RequestPlan
from producer_core.engine.core.linger.broker_policy import REASONS
from producer_core.engine.core.linger.collector_policy import (
    Collector,
    CollectorPolicy,
    Flush,
    RetryJoined,
    Trigger,
    Window,
    caps,
)

MIN_SAMPLES = 100
"""Acknowledged messages a p99 check needs at least (fewer say little about a p99)."""
HISTORY_RESOLUTION_S = 0.001
"""Window changes of one broker closer together than this keep one history point."""
MAX_POINTS = 1000
"""`window_over_time` holds at most about this many points (all brokers together)."""
EMA_WEIGHT = 1 / 8
DECREASE_CAUSES = ("retry", "throttle", "in_flight", "rtt", "p99")


@dataclass
class _Control:
    """One broker's controller state."""

    window_s: float
    rtt_ema_s: float | None = None
    rtt_baseline_s: float | None = None
    in_flight: int = 0
    history: list[tuple[float, float]] = field(default_factory=list)
    """(time, window) at the start and after every change."""
    increases: int = 0
    decreases: Counter[str] = field(default_factory=Counter)
    samples: list[np.ndarray] = field(default_factory=list)
    sample_count: int = 0
    last_check: float = float("-inf")
    settle_until: float = float("-inf")
    last_p99_s: float | None = None


class AimdLinger(CollectorPolicy):
    """Mode `aimd`: one collection window per broker, adapted additively up and
    multiplicatively down from round trips, retries, throttling, busy request slots, or
    a p99 latency target."""

    name = "aimd"
    reasons = REASONS

    def __init__(
        self,
        accumulator: QueueView,
        leaders: list[int],
        limits: RequestLimits,
        *,
        min_s: float = 0.001,
        max_s: float = 0.100,
        initial_s: float = 0.005,
        step_s: float = 0.001,
        decrease_factor: float = 0.5,
        increase_ratio: float = 1.1,
        decrease_ratio: float = 1.5,
        max_in_flight: int = 5,
        target_p99_s: float | None = None,
        target_interval_s: float = 0.25,
        max_partitions: int = -1,
        max_bytes: int = -1,
    ) -> None:
        if min_s > max_s:
            raise ValueError("min_s must not be larger than max_s")
        super().__init__(accumulator, leaders, limits, max_partitions=max_partitions,
                         max_bytes=max_bytes)
        self.min_s = min_s
        self.max_s = max_s
        self.initial_s = min(max(initial_s, min_s), max_s)
        self.step_s = step_s
        self.decrease_factor = decrease_factor
        self.increase_ratio = increase_ratio
        self.decrease_ratio = decrease_ratio
        self.max_in_flight = max_in_flight
        self.target_p99_s = target_p99_s
        self.target_interval_s = target_interval_s
        self._controls: dict[int, _Control] = {}
        self._start = 0.0
        self._now = 0.0

    def triggers(self) -> list[Trigger]:
        return [Flush(), *caps(self.max_partitions, self.max_bytes), Window(), RetryJoined()]

    # ------------------------------------------------------------------ control
    def begin(self, start: float) -> None:
        self._start = start
        self._now = max(self._now, start)
        for control in self._controls.values():
            control.history[0] = (start, control.history[0][1])

    def _control(self, broker: int) -> _Control:
        control = self._controls.get(broker)
        if control is None:
            control = self._controls[broker] = _Control(self.initial_s)
            control.history.append((self._start, self.initial_s))
        return control

    def broker_window_s(self, broker: int) -> float:
        """The broker's current collection window."""
        return self._control(broker).window_s

    def window_s(self, collector: Collector) -> float:
        return self._control(collector.broker).window_s

    def _set_window(self, control: _Control, window: float, now: float) -> None:
        old = control.window_s
        control.window_s = window
        if self.target_p99_s is not None:  # samples from before the change settled say nothing
            control.settle_until = now + max(old, window) + (control.rtt_ema_s or 0.0)
            control.samples = []
            control.sample_count = 0
        history = control.history
        if len(history) > 1 and now - history[-1][0] < HISTORY_RESOLUTION_S:
            history[-1] = (history[-1][0], window)
        else:
            history.append((now, window))

    # windows are kept in whole nanoseconds: no drift from repeated additions
    def _decrease(self, control: _Control, now: float, cause: str, factor: float) -> None:
        control.decreases[cause] += 1
        window = round(max(self.min_s, control.window_s * factor), 9)
        if window != control.window_s:
            self._set_window(control, window, now)

    def _increase(self, control: _Control, now: float) -> None:
        control.increases += 1
        window = round(min(self.max_s, control.window_s + self.step_s), 9)
        if window != control.window_s:
            self._set_window(control, window, now)

    # ------------------------------------------------------------------- events
    def poll(self, now: float, context: PollContext) -> list[RequestPlan]:
        self._now = max(self._now, now)
        plans = super().poll(now, context)
        free_slots = context.free_slots
        # requests in flight per broker: exact after every poll (a broker missing from
        # free_slots has none free), then counted down by responses
        for broker in set(self._collectors) | {plan.broker for plan in plans}:
            self._control(broker).in_flight = self.max_in_flight - free_slots.get(broker, 0)
        for plan in plans:
            self._controls[plan.broker].in_flight += 1
        return plans

    def on_response(
        self, broker: int, rtt_s: float, now: float, throttle_ms: int, retried: bool
    ) -> None:
        """The seed's per-response update: EMA and baseline, then decrease, increase or hold."""
        self._now = max(self._now, now)
        control = self._control(broker)
        all_busy = control.in_flight >= self.max_in_flight
        control.in_flight = max(0, control.in_flight - 1)
        if not retried:
            ema = control.rtt_ema_s
            control.rtt_ema_s = rtt_s if ema is None else ema + EMA_WEIGHT * (rtt_s - ema)
            baseline = control.rtt_baseline_s
            control.rtt_baseline_s = rtt_s if baseline is None else min(baseline, rtt_s)
        ema, baseline = control.rtt_ema_s, control.rtt_baseline_s
        slow = healthy = False  # the round-trip ratios; a p99 target replaces them
        if self.target_p99_s is None and ema is not None and baseline:
            slow = ema > self.decrease_ratio * baseline
            healthy = ema < self.increase_ratio * baseline
        if retried:
            self._decrease(control, now, "retry", self.decrease_factor)
        elif throttle_ms > 0:
            self._decrease(control, now, "throttle", self.decrease_factor)
        elif all_busy:
            self._decrease(control, now, "in_flight", self.decrease_factor)
        elif slow:
            self._decrease(control, now, "rtt", self.decrease_factor)
        elif healthy:
            self._increase(control, now)

    def on_acknowledged(self, broker: int, latencies_s: object, now: float) -> None:
        """With a p99 target: collect settled latencies; check them every interval."""
        self._now = max(self._now, now)
        target = self.target_p99_s
        if target is None:
            return
        control = self._control(broker)
        if now < control.settle_until:
            return
        samples = np.asarray(latencies_s, dtype=np.float64)
        if samples.size:
            control.samples.append(samples)
            control.sample_count += samples.size
        if control.sample_count < MIN_SAMPLES or now - control.last_check < self.target_interval_s:
            return
        p99 = float(np.percentile(np.concatenate(control.samples), 99))
        control.samples = []
        control.sample_count = 0
        control.last_check = now
        control.last_p99_s = p99
        window = control.window_s
        if p99 > target * (1 + 1e-9) and window > 0:  # not for float noise at the target
            # cut the overshoot out of the wait; never deeper than the decrease factor
            self._decrease(control, now, "p99",
                           max(self.decrease_factor, 1 - (p99 - target) / window))
        elif p99 + self.step_s <= target:
            self._increase(control, now)

    # ------------------------------------------------------------------ metrics
    def stats(self) -> dict[str, object]:
        """The collector's send metrics, each broker's controller, and the window over time."""
        result = super().stats()
        end = max(self._now, self._start)
        brokers: dict[str, object] = {}
        for broker, control in sorted(self._controls.items()):
            times, windows = _history_arrays(control.history)
            mean = (float(_means(times, windows, np.array([times[0], end]))[0])
                    if end > times[0] else float(windows[-1]))
            brokers[str(broker)] = {
                "window_ms": {
                    "initial": round(self.initial_s * 1000, 3),
                    "final": round(control.window_s * 1000, 3),
                    "mean": round(mean * 1000, 3),
                    "min": round(float(windows.min()) * 1000, 3),
                    "max": round(float(windows.max()) * 1000, 3),
                },
                "increases": control.increases,
                "decreases": {cause: control.decreases.get(cause, 0) for cause in DECREASE_CAUSES},
                "rtt_ema_ms": _ms(control.rtt_ema_s),
                "rtt_baseline_ms": _ms(control.rtt_baseline_s),
                "last_p99_ms": _ms(control.last_p99_s),
            }
        result["aimd"] = {
            "bounds_ms": [round(self.min_s * 1000, 3), round(self.max_s * 1000, 3)],
            "target_p99_ms": _ms(self.target_p99_s),
            "brokers": brokers,
        }
        points, resolution = self.window_over_time(end)
        result["window_over_time"] = points
        result["window_over_time_resolution_s"] = resolution
        return result

    def window_over_time(self, end: float) -> tuple[list[list[float]], float]:
        """``[t_s, broker, window_ms]`` points, t from the run's start, sorted by time.

        When every broker's changes fit in its share of `MAX_POINTS`, these are the exact
        change points (resolution 0): the window holds from ``t_s`` until the broker's next
        point. Otherwise the run is cut into equal buckets (the resolution, in seconds) and
        each point is the time-weighted mean window over the bucket starting at ``t_s``.
        """
        if not self._controls:
            return [], 0.0
        share = max(50, MAX_POINTS // len(self._controls))
        exact = all(len(c.history) <= share for c in self._controls.values())
        start = self._start
        span = max(end - start, 1e-9)
        resolution = 0.0 if exact else span / share
        points: list[list[float]] = []
        for broker, control in sorted(self._controls.items()):
            times, windows = _history_arrays(control.history)
            if exact:
                points.extend([round(t - start, 4), broker, round(w * 1000, 3)]
                              for t, w in zip(times.tolist(), windows.tolist(), strict=True))
                continue
            edges = start + resolution * np.arange(share + 1)
            means = _means(times, windows, edges)
            points.extend([round(left - start, 4), broker, round(mean * 1000, 3)]
                          for left, mean in zip(edges[:-1].tolist(), means.tolist(), strict=True))
        points.sort(key=lambda point: (point[0], point[1]))
        return points, round(resolution, 6)


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 3)


def _history_arrays(history: list[tuple[float, float]]) -> tuple[np.ndarray, np.ndarray]:
    times = np.array([t for t, _ in history], dtype=np.float64)
    windows = np.array([w for _, w in history], dtype=np.float64)
    return times, windows


def _integral(times: np.ndarray, windows: np.ndarray, xs: np.ndarray) -> np.ndarray:
    """Integral from ``times[0]`` to each x of the step function that is ``windows[i]``
    from ``times[i]`` on (the first window also holds before ``times[0]``)."""
    cumulative = np.concatenate(([0.0], np.cumsum(windows[:-1] * np.diff(times))))
    k = np.clip(np.searchsorted(times, xs, side="right") - 1, 0, None)
    integral: np.ndarray = cumulative[k] + windows[k] * (xs - times[k])  # numpy: Any
    return integral


def _means(times: np.ndarray, windows: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Time-weighted mean window over each interval between consecutive `edges`."""
    return np.diff(_integral(times, windows, edges)) / np.diff(edges)
