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
    phases = [p.phase for p in result.probes]
    assert [p for p in phases if p != "confirm"][-2:] == ["repeat", "repeat"]
    assert result.confirmed
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


def hiccups(knee: float, hiccup_at: set[int]):
    """`synthetic(knee)` whose probes numbered in `hiccup_at` (0-based) fail on the
    generator's lag alone (a scheduling hiccup): latency within the SLO."""
    probe, calls = synthetic(knee)

    def with_hiccups(rate: float) -> dict:
        index = len(calls)
        run = probe(rate)
        if index in hiccup_at:
            run["generator_lag"] = {"p99_ms": 189.0}
        return run

    return with_hiccups, calls


def test_one_hiccup_on_the_first_probe_does_not_send_the_search_down():
    """Issue 47: broker's first probe at 1,000 msg/s failed on one hiccup (lag p99 189 ms)
    and the search reported 421 msg/s; the retry passes and the search goes up."""
    probe, calls = hiccups(130_000.0, {0})
    result = find_capacity(probe, P99_100, SearchPlan(start_rate=1000, precision=0.25,
                                                      repeats=1, max_probes=30))
    assert [p.phase for p in result.probes[:2]] == ["up", "retry"]
    assert result.probes[0].lag_only and result.probes[1].ok
    found = result.max_sustainable_msgs_per_s
    assert found is not None and 130_000 / 1.25 <= found <= 130_000
    assert result.confirmed


def test_a_hiccup_at_the_bracket_high_end_is_caught_by_its_confirmation():
    """16,000 fails (and its retry), 8,000 fails, 4,000 fails on a hiccup although the
    knee is 5,000: the bracket (2,000, 4,000) ends with the high end probed again, which
    passes, and the search goes on up to the knee."""
    probe, calls = synthetic(5000.0)

    def flaky(rate: float) -> dict:
        first_at_4000 = rate == 4000.0 and 4000.0 not in calls
        run = probe(rate)
        if first_at_4000:
            run["latency"] = {"p99_ms": 500.0}
        return run

    result = find_capacity(flaky, P99_100, SearchPlan(start_rate=16_000, precision=0.1,
                                                      repeats=1))
    assert [p.phase for p in result.probes[:4]] == ["up", "retry", "down", "down"]
    assert "confirm" in [p.phase for p in result.probes]
    found = result.max_sustainable_msgs_per_s
    assert found is not None and 5000 / 1.1 <= found <= 5000
    assert result.confirmed


def test_the_result_names_its_deciding_probes_and_confirmation():
    probe, _ = synthetic(1000.0)
    result = find_capacity(probe, P99_100, SearchPlan(start_rate=1000, precision=0.05,
                                                      repeats=1))
    document = result.as_dict()
    lo, hi = document["bracket"]
    deciding = [document["probes"][i] for i in document["deciding_probes"]]
    assert {p["rate"] for p in deciding} == {lo, hi}
    assert all(p["ok"] for p in deciding if p["rate"] == lo)
    assert not any(p["ok"] for p in deciding if p["rate"] == hi)
    assert document["confirmed"] is True
    assert all("causes" in p for p in document["probes"])


def test_warnings_for_modes_far_apart_and_for_probes_failed_on_lag():
    from producer_core.analysis.capacity import Capacity, Probe, capacity_warnings

    lagged = Probe(1000.0, False, "lag", "up", causes=("lag",))
    slo = Probe(2000.0, False, "slo", "up", causes=("slo", "lag"))
    found = {"partition": Capacity(128_000.0, (128_000.0, None), [], "converged"),
             "broker": Capacity(421.0, (421.0, 1000.0), [lagged, slo], "converged")}
    text = " ".join(capacity_warnings(found))
    assert "partition (128,000 msg/s) and broker (421 msg/s) differ more than 10x" in text
    assert "broker: 1 probe (1,000 msg/s) failed on the generator's lag, not on the SLO" in text
    near = {"a": Capacity(1000.0, (1000.0, 1100.0), [], "converged"),
            "b": Capacity(5000.0, (5000.0, 5500.0), [], "converged")}
    assert not any("differ" in w for w in capacity_warnings(near))
