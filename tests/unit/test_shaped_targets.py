"""Shaped workloads: the target is the profile's mean over the run; sizes are recorded as
distributions."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from producer_core.results.metrics import Results, RunMetrics
from producer_core.workload.message_source import run_target_rate
from producer_core.workload.workload import Workload
from producer_core.workload.workload_file import load_workload

ROOT = Path(__file__).resolve().parents[2]


def test_target_is_the_mean_over_the_run_not_the_end_state() -> None:
    workload = load_workload(ROOT / "workloads" / "bursts-and-ramps.yaml")
    # ramp 500 -> 5000 over 10 s then 5000 (mean 3875 over 20 s), bursts 8000 on 0.5 s of
    # every 2 s (mean 2000), poisson 1500
    assert run_target_rate(workload) == pytest.approx(3875 + 2000 + 1500, abs=1)
    assert workload.target_rate == pytest.approx(8500)  # the long-run (end) state
    shorter = replace(workload, duration_s=10.0)  # --duration 10: the ramp's first half
    assert run_target_rate(shorter) == pytest.approx(2750 + 2000 + 1500, abs=1)
    assert run_target_rate(Workload(rate=2500, duration_s=3)) == 2500
    assert run_target_rate(Workload(rate=None, duration_s=3)) is None
    assert run_target_rate(Workload(rate=700, messages=10, duration_s=None)) == 700


def test_results_show_the_mean_target_and_the_size_distributions() -> None:
    workload = load_workload(ROOT / "workloads" / "bursts-and-ramps.yaml")
    results = Results(mode="partition", workload=workload.as_dict(), settings={},
                      bootstrap="b", broker="", duration_s=20.0, metrics=RunMetrics(),
                      target_msgs_per_s=run_target_rate(workload))
    document = results.to_dict()
    assert document["rate"]["target_msgs_per_s"] == pytest.approx(7375, abs=1)
    sizes = document["workload"]["value_size"]
    assert sizes["arrivals"] == {"uniform": [20, 2000], "mean": 1010.0}
    assert sizes["ramp"] == {"fixed": 100, "mean": 100.0}
    assert document["workload"]["message_size"] is None
    one = Workload(message_size=300).as_dict()
    assert one["message_size"] == 300 and one["value_size"] == {
        "kbatch": {"fixed": 300, "mean": 300.0}}
