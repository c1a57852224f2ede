"""The highest rate a producer policy sustains: the search, and what "sustains" means.

Capacity planners ask first for the highest rate a policy sustains within their latency
objective (OpenMessaging Benchmark searches for it with `producerRate: 0`; perf-test only
runs unthrottled, which measures a backlog, not a service level). A probe at rate R
*sustains* R when

- the achieved rate is within 1% of R (`ACHIEVED_RATIO`),
- the generator kept up: its lag p99 stays under a bound (`max_lag_ms`), so the latency
  was measured at R and not at whatever the producer managed,
- every message was acknowledged, and
- the SLO holds: ack latency, and end-to-end latency too when the run measured it.

The search brackets the boundary: exponential steps up from a start rate until a probe
fails (or down until one passes), then bisection (geometric, as rates span decades) until
the bracket is narrower than `precision`; the highest passing rate is then probed again
`repeats` times, and a repeat that fails moves the bracket down. A probe that fails is run
again (`retries`) before the search believes it: one scheduling hiccup once sent a search
from 1,000 msg/s down to 421 while the other mode reached 128,000 (issue 47). So the bracket
is confirmed from both sides: its low end passed `1 + repeats` times, its high end failed
`1 + retries` times; those are its deciding probes. No I/O and no clock here: the caller
passes `probe(rate) -> results document` (tests pass a synthetic one).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

ACHIEVED_RATIO = 0.99
DEFAULT_MAX_LAG_MS = 50.0
MODES_APART = 10.0
"""Modes whose answers differ more than this many times are worth a second look."""


@dataclass(frozen=True)
class Criteria:
    """What a probe must show to count as sustained."""

    slo_metric: str  # a latency field, e.g. "p99_ms"
    slo_limit_ms: float
    slo_strict: bool = False
    slo_text: str = ""
    max_lag_ms: float = DEFAULT_MAX_LAG_MS
    achieved_ratio: float = ACHIEVED_RATIO

    def holds(self, value_ms: float) -> bool:
        return value_ms < self.slo_limit_ms if self.slo_strict else value_ms <= self.slo_limit_ms


def e2e_latency(run: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """End-to-end latency figures, where a run with consumers measured them."""
    for key in ("e2e_latency", "end_to_end_latency"):
        if isinstance(run.get(key), Mapping):
            return run[key]
    section = run.get("e2e") or run.get("end_to_end")
    if isinstance(section, Mapping):
        inner = section.get("latency", section)
        return inner if isinstance(inner, Mapping) else None
    return None


def judge(run: Mapping[str, Any], rate: float, criteria: Criteria) -> tuple[bool, str]:
    """Whether one probe sustained `rate`, and in words why (not)."""
    ok, reason, _ = assess(run, rate, criteria)
    return ok, reason


def acknowledged_rate(run: Mapping[str, Any]) -> float:
    """Acknowledged messages per second over the measured window (`rate.acked_msgs_per_s`),
    or, in a document from before it existed, `achieved_msgs_per_s`."""
    rate = run["rate"]
    return float(rate.get("acked_msgs_per_s", rate["achieved_msgs_per_s"]))


def assess(run: Mapping[str, Any], rate: float, criteria: Criteria
           ) -> tuple[bool, str, tuple[str, ...]]:
    """`judge`, and what failed by cause: "unacknowledged", "rate", "lag", "slo"."""
    achieved = acknowledged_rate(run)
    failed = int(run["messages"]["failed"]) + int(run["messages"].get("unknown", 0))
    lag = float(run.get("generator_lag", {}).get("p99_ms", 0.0))
    ack = float(run["latency"][criteria.slo_metric])
    name = criteria.slo_metric.removesuffix("_ms").replace("p999", "p99.9")
    figures = (f"achieved {achieved:,.0f}/s, {name} {ack:,.1f} ms, generator lag p99 "
               f"{lag:,.1f} ms")
    problems: list[tuple[str, str]] = []
    if failed:
        problems.append(("unacknowledged", f"{failed:,} messages not acknowledged"))
    if achieved < criteria.achieved_ratio * rate:
        problems.append(("rate", f"achieved {achieved / rate:.1%} of the rate"))
    if lag > criteria.max_lag_ms:
        problems.append(("lag", f"generator lag p99 above {criteria.max_lag_ms:g} ms"))
    if not criteria.holds(ack):
        problems.append(("slo", f"ack {name} misses {criteria.slo_text or criteria.slo_metric}"))
    e2e = e2e_latency(run)
    if e2e is not None and criteria.slo_metric in e2e:
        value = float(e2e[criteria.slo_metric])
        figures += f", end-to-end {name} {value:,.1f} ms"
        if not criteria.holds(value):
            problems.append(("slo", f"end-to-end {name} misses {criteria.slo_text or name}"))
    if problems:
        causes = tuple(dict.fromkeys(cause for cause, _ in problems))
        return False, f"{figures}: " + "; ".join(text for _, text in problems), causes
    return True, figures, ()


@dataclass
class Probe:
    """One run at one rate, and its verdict."""

    rate: float
    ok: bool
    reason: str
    phase: str  # "up" | "down" | "bisect" | "repeat" | "retry"
    run: Mapping[str, Any] | None = None
    causes: tuple[str, ...] = ()
    """What failed: "unacknowledged", "rate", "lag" (the generator's), "slo"."""

    @property
    def lag_only(self) -> bool:
        """Failed on the generator's lag while the latency kept the SLO: the load
        generator, not the producer, may have been what fell short."""
        return not self.ok and "lag" in self.causes and "slo" not in self.causes

    def as_dict(self) -> dict[str, Any]:
        return {"rate": round(self.rate, 3), "ok": self.ok, "reason": self.reason,
                "phase": self.phase, "causes": list(self.causes)}


@dataclass
class Capacity:
    """A search's outcome: the highest sustained rate (None: not even the lowest rate
    tried), the bracket it ended with, and every probe."""

    max_sustainable_msgs_per_s: float | None
    bracket: tuple[float | None, float | None]
    probes: list[Probe] = field(default_factory=list)
    stopped: str = ""

    def deciding(self) -> list[int]:
        """Indexes of the probes that decided the bracket: those at its two ends."""
        ends = {b for b in self.bracket if b is not None}
        return [i for i, p in enumerate(self.probes) if p.rate in ends]

    @property
    def confirmed(self) -> bool:
        """The bracket's low end never failed and its high end never passed (each end
        was probed more than once, by the repeats and the retries)."""
        lo, hi = self.bracket
        at_lo = [p for p in self.probes if p.rate == lo]
        at_hi = [p for p in self.probes if p.rate == hi]
        return (all(p.ok for p in at_lo) and not any(p.ok for p in at_hi)
                and (lo is None or len(at_lo) > 1) and (hi is None or len(at_hi) > 1))

    def as_dict(self) -> dict[str, Any]:
        value = self.max_sustainable_msgs_per_s
        return {"max_sustainable_msgs_per_s": None if value is None else round(value, 3),
                "bracket": [None if b is None else round(b, 3) for b in self.bracket],
                "confirmed": self.confirmed, "deciding_probes": self.deciding(),
                "probes": [p.as_dict() for p in self.probes], "stopped": self.stopped}


@dataclass(frozen=True)
class SearchPlan:
    """How far and how finely to search."""

    start_rate: float = 1000.0
    min_rate: float = 1.0
    max_rate: float = 10_000_000.0
    precision: float = 0.05  # stop once hi / lo <= 1 + precision
    repeats: int = 2  # extra probes of the boundary
    max_probes: int = 30
    retries: int = 1  # a failed probe runs again this many times before it counts


def _round_between(rate: float, lo: float, hi: float) -> float:
    """`rate` to the fewest significant digits (3 or more) that keep it inside (lo, hi):
    a probe at 141 msg/s reads better than at 141.4213562 and measures the same."""
    for digits in range(3, 16):
        rounded = float(f"{rate:.{digits}g}")
        if lo < rounded < hi:
            return rounded
    return rate


def find_capacity(probe: Callable[[float], Mapping[str, Any]], criteria: Criteria,
                  plan: SearchPlan = SearchPlan(),
                  on_probe: Callable[[Probe], None] | None = None) -> Capacity:
    """Bracket, bisect and confirm the highest sustained rate (see the module's doc)."""
    probes: list[Probe] = []

    def once(rate: float, phase: str) -> bool:
        run = probe(rate)
        ok, reason, causes = assess(run, rate, criteria)
        result = Probe(rate, ok, reason, phase, run, causes)
        probes.append(result)
        if on_probe is not None:
            on_probe(result)
        return ok

    def attempt(rate: float, phase: str, retry: bool = True) -> bool:
        """A probe; a failure counts only when its retries fail too (one hiccup does not
        send the search down). The steps down from a failed first probe are not retried:
        the one that ends the bracket is probed again once the bracket is found."""
        if once(rate, phase):
            return True
        for _ in range(plan.retries if retry else 0):
            if not budget_left():
                return False
            if once(rate, "retry"):
                return True
        return False

    def budget_left() -> bool:
        return len(probes) < plan.max_probes

    lo: float | None = None  # highest rate that passed (and was not refuted)
    hi: float | None = None  # lowest rate that failed
    rate = min(max(plan.start_rate, plan.min_rate), plan.max_rate)
    passed: list[float] = []
    if attempt(rate, "up"):
        lo = rate
        passed.append(rate)
    else:
        hi = rate
        while budget_left() and hi > plan.min_rate:  # each step is confirmed at the end
            rate = max(hi / 2, plan.min_rate)
            if attempt(rate, "down", retry=False):
                lo = rate
                passed.append(rate)
                break
            hi = rate
    converged = False
    while lo is not None and budget_left():
        if hi is None and lo < plan.max_rate:
            rate = min(lo * 2, plan.max_rate)
            if attempt(rate, "up"):
                lo = rate
                passed.append(rate)
            else:
                hi = rate
            continue
        if hi is not None and hi / lo > 1 + plan.precision:
            mid = _round_between(math.sqrt(lo * hi), lo, hi)
            if attempt(mid, "bisect"):
                lo = mid
                passed.append(mid)
            else:
                hi = mid
            continue
        confirmed = True
        for _ in range(plan.repeats):
            if not budget_left():
                break
            if not once(lo, "repeat"):
                confirmed = False
                break
        if not confirmed:
            hi = lo  # the boundary's repeat failed: it was noise that it passed
            lower = [r for r in passed if r < lo]
            lo = max(lower) if lower else None
            while lo is None and budget_left() and hi > plan.min_rate:
                rate = max(hi / 2, plan.min_rate)
                if attempt(rate, "down", retry=False):
                    lo = rate
                    passed.append(rate)
                else:
                    hi = rate
            continue
        if hi is not None and sum(p.rate == hi for p in probes) < 2:
            if not budget_left():
                break  # the high end failed once only: not confirmed
            if once(hi, "confirm"):  # the high end's one failure was the hiccup
                lo, hi = hi, None
                passed.append(lo)
                continue
        converged = True
        break
    stopped = "converged"
    if not converged:
        stopped = f"probe budget ({plan.max_probes}) spent"
    if lo is not None and lo >= plan.max_rate:
        stopped = f"reached --max-rate {plan.max_rate:,.0f} msg/s"
    if lo is None:
        stopped = f"no rate down to {plan.min_rate:g} msg/s was sustained"
    return Capacity(lo, (lo, hi), probes, stopped)


def capacity_warnings(found: Mapping[str, Capacity]) -> list[str]:
    """What a reader should doubt in a search's answers: modes more than `MODES_APART`
    times apart, a bracket not confirmed from both sides, and probes that failed on the
    generator's lag while their latency kept the SLO."""
    warnings = []
    answers = {mode: c.max_sustainable_msgs_per_s for mode, c in found.items()
               if c.max_sustainable_msgs_per_s}
    if len(answers) > 1:
        low, high = min(answers, key=answers.__getitem__), max(answers, key=answers.__getitem__)
        if answers[high] > MODES_APART * answers[low]:
            warnings.append(
                f"{high} ({answers[high]:,.0f} msg/s) and {low} ({answers[low]:,.0f} msg/s) "
                f"differ more than {MODES_APART:g}x: look at their deciding probes before "
                "believing the gap (a hiccup, a stall or the machine's load can decide one).")
    for mode, result in found.items():
        if not result.confirmed and result.stopped == "converged":
            warnings.append(f"{mode}: the bracket was not confirmed from both sides.")
        lagged = [p for p in result.probes if p.lag_only]
        if lagged:
            rates = ", ".join(f"{p.rate:,.0f}" for p in lagged)
            warnings.append(
                f"{mode}: {len(lagged)} probe{'s' if len(lagged) > 1 else ''} ({rates} "
                "msg/s) failed on the generator's lag, not on the SLO: the load generator "
                "(a loaded machine) fell behind, not necessarily the producer.")
    return warnings
