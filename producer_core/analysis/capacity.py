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
`repeats` times, and a repeat that fails moves the bracket down. No I/O and no clock here:
the caller passes `probe(rate) -> results document` (tests pass a synthetic one).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

ACHIEVED_RATIO = 0.99
DEFAULT_MAX_LAG_MS = 50.0


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
    achieved = float(run["rate"]["achieved_msgs_per_s"])
    failed = int(run["messages"]["failed"]) + int(run["messages"].get("unknown", 0))
    lag = float(run.get("generator_lag", {}).get("p99_ms", 0.0))
    ack = float(run["latency"][criteria.slo_metric])
    name = criteria.slo_metric.removesuffix("_ms").replace("p999", "p99.9")
    figures = (f"achieved {achieved:,.0f}/s, {name} {ack:,.1f} ms, generator lag p99 "
               f"{lag:,.1f} ms")
    problems = []
    if failed:
        problems.append(f"{failed:,} messages not acknowledged")
    if achieved < criteria.achieved_ratio * rate:
        problems.append(f"achieved {achieved / rate:.1%} of the rate")
    if lag > criteria.max_lag_ms:
        problems.append(f"generator lag p99 above {criteria.max_lag_ms:g} ms")
    if not criteria.holds(ack):
        problems.append(f"ack {name} misses {criteria.slo_text or criteria.slo_metric}")
    e2e = e2e_latency(run)
    if e2e is not None and criteria.slo_metric in e2e:
        value = float(e2e[criteria.slo_metric])
        figures += f", end-to-end {name} {value:,.1f} ms"
        if not criteria.holds(value):
            problems.append(f"end-to-end {name} misses {criteria.slo_text or name}")
    if problems:
        return False, f"{figures}: " + "; ".join(problems)
    return True, figures


@dataclass
class Probe:
    """One run at one rate, and its verdict."""

    rate: float
    ok: bool
    reason: str
    phase: str  # "up" | "down" | "bisect" | "repeat"
    run: Mapping[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"rate": round(self.rate, 3), "ok": self.ok, "reason": self.reason,
                "phase": self.phase}


@dataclass
class Capacity:
    """A search's outcome: the highest sustained rate (None: not even the lowest rate
    tried), the bracket it ended with, and every probe."""

    max_sustainable_msgs_per_s: float | None
    bracket: tuple[float | None, float | None]
    probes: list[Probe] = field(default_factory=list)
    stopped: str = ""

    def as_dict(self) -> dict[str, Any]:
        value = self.max_sustainable_msgs_per_s
        return {"max_sustainable_msgs_per_s": None if value is None else round(value, 3),
                "bracket": [None if b is None else round(b, 3) for b in self.bracket],
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

    def attempt(rate: float, phase: str) -> bool:
        run = probe(rate)
        ok, reason = judge(run, rate, criteria)
        result = Probe(rate, ok, reason, phase, run)
        probes.append(result)
        if on_probe is not None:
            on_probe(result)
        return ok

    def budget_left() -> bool:
        return len(probes) < plan.max_probes

    lo: float | None = None  # highest rate that passed (and was not refuted)
    hi: float | None = None  # lowest rate that failed
    rate = min(max(plan.start_rate, plan.min_rate), plan.max_rate)
    if attempt(rate, "up"):
        lo = rate
        while budget_left() and lo < plan.max_rate:
            rate = min(lo * 2, plan.max_rate)
            if attempt(rate, "up"):
                lo = rate
            else:
                hi = rate
                break
    else:
        hi = rate
        while budget_left() and hi > plan.min_rate:
            rate = max(hi / 2, plan.min_rate)
            if attempt(rate, "down"):
                lo = rate
                break
            hi = rate
    passed = [lo] if lo is not None else []
    converged = False
    while lo is not None and budget_left():
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
            if not attempt(lo, "repeat"):
                confirmed = False
                break
        if confirmed:
            converged = True
            break
        hi = lo  # the boundary's repeat failed: it was noise that it passed
        lower = [r for r in passed if r < lo]
        lo = max(lower) if lower else None
        while lo is None and budget_left() and hi > plan.min_rate:
            rate = max(hi / 2, plan.min_rate)
            if attempt(rate, "down"):
                lo = rate
                passed.append(rate)
            else:
                hi = rate
    stopped = "converged"
    if not converged:
        stopped = f"probe budget ({plan.max_probes}) spent"
    if lo is not None and lo >= plan.max_rate:
        stopped = f"reached --max-rate {plan.max_rate:,.0f} msg/s"
    if lo is None:
        stopped = f"no rate down to {plan.min_rate:g} msg/s was sustained"
    return Capacity(lo, (lo, hi), probes, stopped)
