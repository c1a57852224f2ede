"""The capacity search against synthetic producers: a known knee is found within the
precision, noise at the boundary is caught by the repeats, and every criterion counts."""

from __future__ import annotations

import random

import pytest

from producer_core.analysis.capacity import Criteria, SearchPlan, find_capacity, judge

P99_100 = Criteria("p99_ms", 100.0, slo_text="p99<=100ms")


def synthetic(knee: float, *, lag_knee: float | None = None, noise: float = 0.0,
              seed: int = 1, e2e_extra_ms: float | None = None):
    """A producer whose p99 is 10 ms below `knee` msg/s and explodes above it; achieved
    rate follows the target until the knee. `noise` jitters the knee per probe."""
    rng = random.Random(seed)
    calls: list[float] = []

    def probe(rate: float) -> dict:
        calls.append(rate)
        effective = knee * (1 + rng.uniform(-noise, noise))
        over = rate > effective
        lagging = lag_knee is not None and rate > lag_knee
        run = {"rate": {"achieved_msgs_per_s": min(rate, effective) if over else rate},
               "messages": {"failed": 0, "unknown": 0},
               "generator_lag": {"p99_ms": 500.0 if lagging else 0.5},
               "latency": {"p99_ms": 900.0 if over else 10.0}}
        if e2e_extra_ms is not None:
            run["e2e_latency"] = {"p99_ms": run["latency"]["p99_ms"] + e2e_extra_ms}
        return run

    return probe, calls


@pytest.mark.parametrize("knee", [37.0, 1000.0, 5300.0, 123_456.0])
@pytest.mark.parametrize("start", [10.0, 1000.0, 1_000_000.0])
def test_the_knee_is_found_within_the_precision(knee, start):
    probe, calls = synthetic(knee)
    result = find_capacity(probe, P99_100, SearchPlan(start_rate=start, precision=0.02))
    found = result.max_sustainable_msgs_per_s
    assert found is not None and knee / 1.02 <= found <= knee
    lo, hi = result.bracket
    assert lo == found and hi is not None and hi > knee and hi / lo <= 1.02 + 1e-9
    assert result.stopped == "converged"
    assert [p.phase for p in result.probes][-2:] == ["repeat", "repeat"]
    assert len(calls) <= 30


def test_a_boundary_that_passed_by_luck_is_caught_by_the_repeats():
    probe, _ = synthetic(2000.0, noise=0.05, seed=7)
    result = find_capacity(probe, P99_100, SearchPlan(start_rate=500, precision=0.01,
                                                      repeats=3, max_probes=60))
    assert result.max_sustainable_msgs_per_s is not None
    # confirmed 4 times (bisect + 3 repeats): above the noisy knee's low edge it would fail
    assert result.max_sustainable_msgs_per_s <= 2000.0 * 1.05
    repeats = [p for p in result.probes if p.phase == "repeat"]
    assert repeats and repeats[-1].ok


def test_generator_lag_bounds_the_rate_even_when_latency_holds():
    probe, _ = synthetic(50_000.0, lag_knee=8000.0)
    result = find_capacity(probe, P99_100, SearchPlan(start_rate=1000, precision=0.05))
    assert 8000 / 1.05 <= result.max_sustainable_msgs_per_s <= 8000
    assert any("generator lag" in p.reason for p in result.probes if not p.ok)


def test_end_to_end_latency_counts_when_the_run_has_it():
    probe, _ = synthetic(1000.0, e2e_extra_ms=95.0)  # ack p99 10 ms, e2e 105 ms
    result = find_capacity(probe, P99_100, SearchPlan(start_rate=100, min_rate=10))
    assert result.max_sustainable_msgs_per_s is None
    assert "end-to-end p99 105.0 ms" in result.probes[0].reason
    assert result.stopped == "no rate down to 10 msg/s was sustained"


def test_max_rate_and_probe_budget_end_the_search_and_say_so():
    probe, _ = synthetic(1e9)
    capped = find_capacity(probe, P99_100, SearchPlan(start_rate=1000, max_rate=5000))
    assert capped.max_sustainable_msgs_per_s == 5000
    assert capped.stopped == "reached --max-rate 5,000 msg/s"
    probe, _ = synthetic(3000.0)
    short = find_capacity(probe, P99_100, SearchPlan(start_rate=1000, max_probes=3))
    assert len(short.probes) == 3 and short.stopped == "probe budget (3) spent"


def test_judge_names_every_failed_criterion():
    run = {"rate": {"achieved_msgs_per_s": 900.0}, "messages": {"failed": 2, "unknown": 1},
           "generator_lag": {"p99_ms": 80.0}, "latency": {"p99_ms": 150.0}}
    ok, reason = judge(run, 1000.0, P99_100)
    assert not ok
    for words in ("3 messages not acknowledged", "achieved 90.0% of the rate",
                  "generator lag p99 above 50 ms", "ack p99 misses p99<=100ms"):
        assert words in reason
    run = {"rate": {"achieved_msgs_per_s": 995.0}, "messages": {"failed": 0},
           "generator_lag": {"p99_ms": 1.0}, "latency": {"p99_ms": 100.0}}
    assert judge(run, 1000.0, P99_100) == (
        True, "achieved 995/s, p99 100.0 ms, generator lag p99 1.0 ms")
