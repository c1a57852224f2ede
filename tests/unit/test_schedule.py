"""Rate profiles: intended offsets are a pure function of the message index."""

from __future__ import annotations

import numpy as np
import pytest

from producer_core.workload.schedule import PoissonSchedule, bursts, constant, ramp, step


def all_offsets(schedule, horizon: float) -> np.ndarray:
    return schedule.take(horizon + 1.0, 10_000_000)


def test_constant_rate_message_k_at_k_over_rate():
    schedule = constant(1000, 2.0)
    offsets = all_offsets(schedule, 2.0)
    assert offsets.size == 2000
    assert offsets[1234] == pytest.approx(1.234)
    assert schedule.finished


def test_take_hands_out_only_what_is_due_and_never_twice():
    schedule = constant(1000, 2.0)
    first = schedule.take(0.0105, 10_000)
    assert first.size == 11  # messages at 0.000 .. 0.010
    second = schedule.take(0.0205, 5)
    assert second.size == 5 and second[0] == pytest.approx(0.011)
    assert schedule.next_offset() == pytest.approx(0.016)


def test_step_profile_rates():
    schedule = step([(1000, 1.0), (5000, 1.0), (1000, 1.0)], 3.0)
    offsets = all_offsets(schedule, 3.0)
    counts = np.histogram(offsets, bins=[0, 1, 2, 3])[0]
    assert counts.tolist() == [1000, 5000, 1000]


def test_ramp_reaches_its_target_rate():
    schedule = ramp(0, 10_000, 1.0, 2.0)
    offsets = all_offsets(schedule, 2.0)
    # integral: 0.5 * 10k over the ramp + 10k during the hold
    assert offsets.size == pytest.approx(15_000, abs=1)
    late_ramp = np.sum((offsets >= 0.9) & (offsets < 1.0))
    assert late_ramp == pytest.approx(950, abs=2)  # mean rate 9,500/s over the last 0.1 s
    assert np.all(np.diff(offsets) > 0)


def test_bursts_are_on_then_silent():
    schedule = bursts(2000, 0.25, 0.75, 2.0)
    offsets = all_offsets(schedule, 2.0)
    assert offsets.size == 1000  # two bursts of 500
    phase = offsets % 1.0
    assert np.all(phase < 0.25 + 1e-9)


def test_step_can_start_silent():
    schedule = step([(0, 0.5), (1000, 1.0)], 1.0)
    assert schedule.take(0.4, 100).size == 0
    offsets = all_offsets(schedule, 1.0)
    assert offsets[0] == pytest.approx(0.5) and offsets.size == 500


def test_poisson_interarrival_mean_and_variance():
    schedule = PoissonSchedule(2000, 20.0, seed=3)
    gaps = np.diff(all_offsets(schedule, 20.0))
    assert gaps.mean() == pytest.approx(1 / 2000, rel=0.02)
    # exponential: variance = mean^2
    assert gaps.var() == pytest.approx((1 / 2000) ** 2, rel=0.05)


def test_poisson_is_reproducible():
    a = all_offsets(PoissonSchedule(500, 2.0, seed=9), 2.0)
    b = all_offsets(PoissonSchedule(500, 2.0, seed=9), 2.0)
    assert np.array_equal(a, b)


@pytest.mark.parametrize("make", [
    lambda: constant(700, 3.0),
    lambda: step([(0, 0.2), (1000, 0.5), (300, 1.0)], 3.0),
    lambda: ramp(100, 2000, 1.5, 3.0),
    lambda: bursts(900, 0.3, 0.2, 3.0),
])
def test_scalar_offsets_agree_with_vectorized(make):
    schedule = make()
    ks = np.arange(0, 2000, 37)
    vector = schedule.offsets_of(0, 2000)[ks]
    scalar = np.array([schedule.offset_of(int(k)) for k in ks])
    assert np.allclose(vector, scalar, rtol=0, atol=1e-9)


@pytest.mark.parametrize("schedule", [
    constant(1000, 10.0), ramp(100, 5000, 5.0, 10.0), step([(1000, 2.0), (3000, 8.0)], 10.0),
], ids=["constant", "ramp", "step"])
def test_offsets_of_a_pass_match_each_message_offset(schedule) -> None:
    """Passes inside one segment take the unmasked path; across a boundary the general one;
    both give every message's own offset."""
    boundary = schedule.due_count(2.0)
    for first, count in [(0, 1), (5, 2), (100, 300), (boundary - 3, 7), (boundary, 50)]:
        got = schedule.offsets_of(first, count)
        assert got.dtype == np.float64 and len(got) == count
        expected = [schedule.offset_of(k) for k in range(first, first + count)]
        assert got.tolist() == pytest.approx(expected, rel=1e-12, abs=1e-12)
