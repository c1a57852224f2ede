"""compare-modes plumbing: per-mode settings, interleaving, medians, change wording."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from producer_core.analysis.compare import (
    change_text,
    compare,
    parse_mode_configs,
    parse_modes,
    summary_rows,
)
from producer_core.errors import UsageError
from producer_core.workload.workload import Workload


def test_mode_configs_apply_to_their_mode_only():
    runs = parse_mode_configs(["partition", "none"], [("acks", "all")],
                              ["partition:linger.ms=500"])
    assert runs[0].settings["linger.ms"] == 500 and runs[1].settings["linger.ms"] == 5
    assert runs[0].settings.acks == runs[1].settings.acks == -1


def test_linger_ms_sets_each_modes_own_knob_and_mode_config_wins():
    runs = parse_mode_configs(["partition"], [], ["partition:linger.ms=7"], linger_ms=500)
    assert runs[0].settings["linger.ms"] == 7
    runs = parse_mode_configs(["partition"], [], [], linger_ms=500)
    assert runs[0].settings["linger.ms"] == 500


@pytest.mark.parametrize(("item", "fragment"), [
    ("partition-linger.ms=5", "expected MODE:KEY=VALUE"),
    ("partition:linger.ms", "expected MODE:KEY=VALUE"),
    ("broker2:x=1", "not in --modes"),
])
def test_bad_mode_config(item, fragment):
    with pytest.raises(UsageError, match=fragment):
        parse_mode_configs(["partition"], [], [item])


def test_parse_modes_refuses_unknown_and_duplicates():
    assert parse_modes("partition, none", ["partition", "none"]) == ["partition", "none"]
    with pytest.raises(UsageError, match="Allowed modes: partition, none"):
        parse_modes("partition,turbo", ["partition", "none"])
    with pytest.raises(UsageError, match="twice"):
        parse_modes("none,none", ["partition", "none"])


def fake_result(mode: str, requests: int, p50: float) -> dict:
    return {
        "mode": mode, "requests_sent": requests, "msgs_per_req": 1000 / requests,
        "partitions_per_request": {"mean": 2.0}, "rate": {"achieved_msgs_per_s": 100.0,
                                                          "mb_per_s": 0.1},
        "latency": {"p50_ms": p50, "p95_ms": p50, "p99_ms": p50, "max_ms": p50},
        "messages": {"failed": 0},
    }


def test_compare_interleaves_rounds_and_takes_medians():
    calls = []
    values = iter([(100, 10.0), (10, 50.0), (120, 12.0), (12, 40.0), (80, 11.0), (11, 60.0)])

    def run_one(workload, settings, mode, bootstrap, progress):
        calls.append((mode, workload.topic))
        requests, p50 = next(values)
        return SimpleNamespace(to_dict=lambda: fake_result(mode, requests, p50))

    runs = parse_mode_configs(["partition", "none"], [], [])
    doc = compare(Workload(topic="t"), runs, "b:1", repeat=3, run_one=run_one)
    assert [c[0] for c in calls] == ["partition", "none"] * 3
    assert len({c[1] for c in calls}) == 6  # a fresh topic per run
    summary = doc["summary"]
    assert summary["partition"]["requests_sent"] == {"median": 100, "min": 80, "max": 120}
    assert summary["none"]["p50_ms"]["median"] == 50.0
    rows = summary_rows(doc)
    none_requests = next(r for r in rows if r["mode"] == "none"
                         and r["metric"] == "requests_sent")
    assert none_requests["change"] == "89.0% fewer"


@pytest.mark.parametrize(("metric", "base", "value", "text"), [
    ("requests_sent", 25848, 167, "99.4% fewer"),
    ("requests_sent", 100, 150, "50.0% more"),
    ("msgs_per_req", 46.4, 7185.6, "154.9x"),
    ("p50_ms", 360, 679, "+319.0 ms"),
    ("achieved_msgs_per_s", 1000, 990, "-1.0%"),
])
def test_change_wording_matches_the_seed(metric, base, value, text):
    assert change_text(metric, base, value) == text
