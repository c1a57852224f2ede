"""kbatch sweep's pure logic: grid, windows, SLO, frontier, recommendation, resume."""

from __future__ import annotations

import json
import re
import threading

import pytest

from producer_core.analysis.sweep import (
    Cell,
    CellResult,
    check_cells,
    done_units,
    eta_s,
    expand_grid,
    frontiers,
    meets,
    pareto,
    parse_axis,
    parse_int_list,
    parse_slo,
    pending_units,
    recommend,
    resume_key,
    window_assignments,
)
from producer_core.analysis.sweep_run import SweepPlan, SweepRunner
from producer_core.config import MODES
from producer_core.errors import UsageError
from producer_core.results.results_io import load_results
from producer_core.workload.workload import Workload
from tests.results_fakes import fake_results

# --------------------------------------------------------------------------- grid


def test_grid_multiplies_windows_rates_and_axes_per_mode():
    cells = expand_grid(["partition", "broker"], [0, 50], [1000.0, 2000.0],
                        [parse_axis("broker.batch.max.partitions=-1,100"),
                         parse_axis("acks=1,all")])
    by_mode = {m: [c for c in cells if c.mode == m] for m in ("partition", "broker")}
    # partition: 2 windows x 2 rates x acks(2); the broker-only axis does not apply.
    assert len(by_mode["partition"]) == 8
    assert all(dict(c.axes).keys() == {"acks"} for c in by_mode["partition"])
    assert len(by_mode["broker"]) == 16
    assert len({c.id for c in cells}) == len(cells)
    assert cells[0] == Cell("partition", 0, 1000.0, (("acks", "1"),))


def test_mode_none_has_no_window_and_runs_once():
    cells = expand_grid(["none", "broker"], [0, 5, 10])
    assert [c.id for c in cells] == ["none", "broker_w0", "broker_w5", "broker_w10"]
    assert cells[0].assignments() == []


@pytest.mark.parametrize("mode,key", [
    ("partition", "linger.ms"), ("java", "linger.ms"), ("librdkafka", "linger.ms"),
    ("broker", "broker.linger.ms"), ("bruce", "bruce.combined.max.delay.ms"),
    ("adaptive", "adaptive.linger.max.ms"), ("aimd", "aimd.linger.max.ms"),
])
def test_each_mode_gets_its_own_window_setting(mode, key):
    assert window_assignments(mode, 35)[0] == (key, "35")


def test_every_mode_builds_valid_settings_for_extreme_windows():
    # aimd's min (1) and initial (5) windows are lowered below a small cap.
    cells = expand_grid(list(MODES), [0, 1, 500])
    check_cells(cells, [])
    assert ("aimd.linger.min.ms", "0") in Cell("aimd", 0).assignments()
    assert Cell("aimd", 3).assignments() == [("aimd.linger.max.ms", "3"),
                                             ("aimd.linger.initial.ms", "3")]


def test_cell_ids_are_gate_metric_words():
    cells = expand_grid(["broker"], [5], [2500.5],
                        [parse_axis("broker.batch.max.partitions=-1,333")])
    for cell in cells:
        assert re.fullmatch(r"[A-Za-z_]\w*", cell.id), cell.id
    assert cells[0].id == "broker_w5_r2500p5_partitions_m1"
    assert cells[0].label == ("mode broker, broker.linger.ms=5, rate 2,500 msg/s, "
                              "broker.batch.max.partitions=-1")


@pytest.mark.parametrize("text", ["", "a,b", "5,-1", "1000000"])
def test_bad_windows_are_refused(text):
    with pytest.raises(UsageError, match="--windows"):
        parse_int_list(text, "--windows")


def test_windows_are_sorted_and_deduplicated():
    assert parse_int_list("50, 0,5,50", "--windows") == [0, 5, 50]


def test_axis_errors():
    with pytest.raises(UsageError, match="unknown setting 'linger.msx'"):
        parse_axis("linger.msx=1,2")
    with pytest.raises(UsageError, match="Malformed"):
        parse_axis("acks")
    with pytest.raises(UsageError, match="window setting of a swept mode"):
        expand_grid(["broker"], [5], [], [parse_axis("broker.linger.ms=1,2")])


def test_a_bad_cell_fails_before_anything_runs():
    cells = expand_grid(["partition"], [5], [], [parse_axis("batch.size=100,abc")])
    with pytest.raises(UsageError, match="Cell mode partition, linger.ms=5, batch.size=abc"):
        check_cells(cells, [])


# --------------------------------------------------------------------------- SLO


@pytest.mark.parametrize("text,metric,strict,limit", [
    ("p99<=50ms", "p99_ms", False, 50.0), ("P50 < 2s", "p50_ms", True, 2000.0),
    ("p999<=7.5", "p999_ms", False, 7.5), ("p99.9<=1s", "p999_ms", False, 1000.0),
    ("max<=100ms", "max_ms", False, 100.0),
])
def test_slo_parsing(text, metric, strict, limit):
    slo = parse_slo(text)
    assert (slo.metric, slo.strict, slo.limit_ms) == (metric, strict, limit)


@pytest.mark.parametrize("text", ["p98<=5ms", "p99>=5ms", "p99<=", "p99<=5min", "fast"])
def test_bad_slo_is_refused(text):
    with pytest.raises(UsageError, match="--slo"):
        parse_slo(text)


def test_strict_slo_excludes_the_limit():
    assert parse_slo("p99<=50").holds(50.0)
    assert not parse_slo("p99<50").holds(50.0)


# --------------------------------------------------------------------------- frontier


def test_pareto_keeps_only_undominated_points():
    points = [("a", 10, 100), ("b", 20, 50), ("c", 30, 60), ("d", 5, 200), ("e", 20, 50),
              ("f", 40, 10)]
    # c is beaten by b; b and e tie (both kept).
    assert pareto(points) == ["d", "a", "b", "e", "f"]


def run(requests: int, p99: float, failed: int = 0, duration: float = 10.0,
        bytes_per_request: float = 1000.0, achieved: float = 1000.0) -> dict:
    return {"duration_s": duration, "requests_sent": requests, "msgs_per_req": 1.0,
            "bytes_per_request": {"mean": bytes_per_request, "p50": 0, "max": 0},
            "latency": {"p50_ms": p99 / 2, "p95_ms": p99, "p99_ms": p99, "p999_ms": p99,
                        "max_ms": p99},
            "messages": {"failed": failed},
            "rate": {"target_msgs_per_s": 1000.0, "achieved_msgs_per_s": achieved},
            "generator_lag": {"p99_ms": 1.0}}


def result(cell: Cell, *runs: dict, errors: tuple[str, ...] = ()) -> CellResult:
    return CellResult(cell, list(runs), list(errors))


SLO = parse_slo("p99<=50ms")


def test_frontier_leaves_out_failed_cells():
    good = result(Cell("broker", 5), run(100, 40))
    lossy = result(Cell("broker", 50), run(10, 30, failed=3))
    broken = result(Cell("broker", 500), errors=("round 1: boom",))
    assert frontiers([good, lossy, broken]) == {"requests_per_s": ["broker_w5"],
                                                "bytes_per_request": ["broker_w5"]}
    assert lossy.status == "failed" and lossy.reason() == "3 messages failed"
    assert broken.status == "failed" and broken.reason() == "round 1: boom"


def test_a_cell_that_did_not_get_its_load_is_failed():
    starved = result(Cell("broker", 5), run(10, 30, achieved=700))
    fine = result(Cell("broker", 50), run(20, 40, achieved=905))
    assert starved.status == "failed" and fine.status == "ok"
    assert starved.reason().startswith("load not met: 700 of 1,000 msg/s acknowledged in the "
                                      "schedule's window, generator lag p99")
    assert frontiers([starved, fine])["requests_per_s"] == ["broker_w50"]
    assert recommend([starved, fine], SLO)["cell"] == "broker_w50"


def test_bytes_frontier_prefers_bigger_requests():
    small = result(Cell("broker", 5), run(100, 10, bytes_per_request=100))
    big = result(Cell("broker", 50), run(10, 40, bytes_per_request=5000))
    worse = result(Cell("partition", 50), run(50, 45, bytes_per_request=2000))
    assert frontiers([small, big, worse])["bytes_per_request"] == ["broker_w50",
                                                                    "broker_w5"]


# --------------------------------------------------------------------------- recommendation


def test_recommendation_names_fewest_requests_meeting_slo_and_the_reference():
    results = [
        result(Cell("partition", 5), run(5800, 20)),
        result(Cell("partition", 50), run(3000, 48)),
        result(Cell("partition", 500), run(500, 400)),
        result(Cell("broker", 5), run(2000, 12)),
        result(Cell("broker", 35), run(1120, 41)),
        result(Cell("broker", 100), run(300, 120)),
    ]
    rec = recommend(results, SLO)
    assert rec["cell"] == "broker_w35"
    assert rec["reference_cell"] == "partition_w50"
    assert rec["fewer_requests_pct"] == pytest.approx(62.7, abs=0.05)
    assert rec["text"] == (
        "mode broker, broker.linger.ms=35: p99 41.0 ms, 112 requests/s, 63% fewer than the "
        "best partition setting that meets the SLO (linger.ms=50: p99 48.0 ms, "
        "300 requests/s).")


def test_the_worst_repeat_decides_and_spread_is_shown():
    flaky = result(Cell("broker", 35), run(1000, 30), run(1000, 60), run(1000, 40))
    steady = result(Cell("broker", 20), run(1500, 30), run(1500, 35), run(1600, 32))
    assert not meets(flaky, SLO) and meets(steady, SLO)
    rec = recommend([flaky, steady], SLO)
    assert rec["cell"] == "broker_w20"
    assert "p99 32.0 ms (30.0–35.0), 150 requests/s" in rec["text"]
    assert "no partition setting" not in rec["text"]


def test_no_cell_meets_the_slo():
    rec = recommend([result(Cell("broker", 5), run(100, 80)),
                     result(Cell("partition", 5), run(900, 70))], SLO)
    assert rec["cell"] is None
    assert rec["text"] == ("No cell meets p99<=50ms; the lowest p99 is mode partition, "
                           "linger.ms=5: p99 70.0 ms, 90 requests/s.")


def test_reference_mode_that_never_meets_the_slo_is_said():
    rec = recommend([result(Cell("broker", 5), run(100, 20)),
                     result(Cell("partition", 5), run(900, 70))], SLO)
    assert rec["text"].endswith("; no partition setting meets the SLO.")


# --------------------------------------------------------------------------- resume


def test_pending_units_interleave_rounds_and_skip_done():
    cells = [Cell("partition", 5), Cell("broker", 5)]
    done = done_units([{"cell": "partition_w5", "round": 1}, {"cell": "broker_w5", "round": 2},
                       {"mode": "partition"}])
    assert done == {("partition_w5", 1), ("broker_w5", 2)}
    assert [(c.id, r) for c, r in pending_units(cells, 2, done)] == [
        ("broker_w5", 1), ("partition_w5", 2)]


def test_resume_key_ignores_the_base_topic_name_wherever_it_appears():
    def workload(topic: str, rate: float = 1000.0) -> dict:
        return {"topic": topic, "rate": rate, "value_size": {topic: {"fixed": 100}}}

    assert resume_key({"windows": [5]}, workload("kbatch-1")) == resume_key(
        {"windows": [5]}, workload("kbatch-2"))
    assert resume_key({}, workload("kbatch-1")) != resume_key({}, workload("kbatch-2", 500.0))


def test_eta_uses_the_mean_of_finished_cells():
    assert eta_s([], 4, 12.0) == 48.0
    assert eta_s([10.0, 20.0], 3, 99.0) == 45.0


class Boom(Exception):
    pass


def fake_runner(tmp_path, calls, fail_cells=(), interrupt_at=None, slo="p99<=500ms"):
    cells = expand_grid(["partition", "broker"], [5, 50])
    plan = SweepPlan(cells, 2, Workload(topic="t", partitions=8, rate=1000.0, duration_s=2.0),
                     [], {"modes": ["partition", "broker"], "windows": [5, 50], "rates": [],
                          "axes": {}, "settings": {}}, parse_slo(slo))

    def run_one(workload, settings, mode, bootstrap, progress):
        calls.append(workload.topic)
        if interrupt_at is not None and len(calls) == interrupt_at:
            raise KeyboardInterrupt
        if any(workload.topic.startswith(f"t-{c}-") for c in fail_cells):
            raise Boom("broker went away")
        return fake_results(mode, seed=len(calls))

    return SweepRunner(plan, tmp_path / "out", "127.0.0.1:9092", run_one, "test cluster",
                       embedded=False)


def test_sweep_document_is_valid_results_with_failed_cells_marked(tmp_path):
    calls: list[str] = []
    document = fake_runner(tmp_path, calls, fail_cells=("broker_w50",)).run(resume=False)
    assert len(calls) == 8  # 4 cells x 2 repeats, every cell on its own topic
    assert len(set(calls)) == 8
    loaded = load_results(tmp_path / "out")
    assert loaded.kind == "comparison" and loaded.document["kind"] == "sweep"
    assert loaded.modes == ["partition_w5", "partition_w50", "broker_w5"]
    cells = {c["id"]: c for c in document["sweep"]["cells"]}
    assert cells["broker_w50"]["status"] == "failed"
    assert "Boom: broker went away" in cells["broker_w50"]["reason"]
    assert cells["broker_w5"]["status"] == "ok" and cells["broker_w5"]["repeats_done"] == 2
    assert set(document["sweep"]["frontier"]["requests_per_s"]) <= {
        "partition_w5", "partition_w50", "broker_w5"}
    assert document["sweep"]["recommendation"]["cell"] in cells
    for run_document in document["runs"]:
        assert (tmp_path / "out" / run_document["files"]["latency_hdr"]).is_file()


def test_interrupted_sweep_resumes_with_only_the_missing_runs(tmp_path):
    calls: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        fake_runner(tmp_path, calls, interrupt_at=4).run(resume=False)
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert [(r["cell"], r["round"]) for r in saved["runs"]] == [
        ("partition_w5", 1), ("partition_w50", 1), ("broker_w5", 1)]
    with pytest.raises(UsageError, match="already holds results"):
        fake_runner(tmp_path, []).run(resume=False)
    resumed: list[str] = []
    document = fake_runner(tmp_path, resumed).run(resume=True)
    assert resumed == ["t-broker_w50-1", "t-partition_w5-2", "t-partition_w50-2",
                       "t-broker_w5-2", "t-broker_w50-2"]
    assert all(c["status"] == "ok" and c["repeats_done"] == 2
               for c in document["sweep"]["cells"])
    assert len(document["runs"]) == 8


def test_a_stopped_sweep_keeps_out_the_unit_cut_short_and_resumes_it(tmp_path):
    """A signal sets the stop event (cli.steps.pipeline): the run in progress ends early with
    incomplete results, which are not a finished cell; no other unit starts."""
    stop = threading.Event()
    calls: list[str] = []
    runner = fake_runner(tmp_path, calls)

    def run_one(workload, settings, mode, bootstrap, progress, stop=None):
        calls.append(workload.topic)
        results = fake_results(mode, seed=len(calls))
        if len(calls) == 3:  # Ctrl-C during the third unit: it stops early
            stop.set()
            results.metrics.complete = False
        return results

    runner.run_one, runner.stop = run_one, stop
    with pytest.raises(KeyboardInterrupt):
        runner.run(resume=False)
    assert len(calls) == 3
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert [(r["cell"], r["round"]) for r in saved["runs"]] == [
        ("partition_w5", 1), ("partition_w50", 1)]
    assert all(r["complete"] for r in saved["runs"])
    resumed: list[str] = []
    document = fake_runner(tmp_path, resumed).run(resume=True)
    assert resumed[0] == "t-broker_w5-1" and len(resumed) == 6
    assert len(document["runs"]) == 8


def test_a_sweep_stopped_before_a_unit_starts_runs_none(tmp_path):
    stop = threading.Event()
    stop.set()
    calls: list[str] = []
    runner = fake_runner(tmp_path, calls)
    runner.stop = stop
    with pytest.raises(KeyboardInterrupt):
        runner.run(resume=False)
    assert calls == []
    assert json.loads((tmp_path / "out" / "results.json").read_text())["runs"] == []


def test_resume_refuses_a_different_sweep(tmp_path):
    fake_runner(tmp_path, []).run(resume=False)
    runner = fake_runner(tmp_path, [])
    runner.plan.cells = runner.plan.cells[:2]
    runner.plan.grid = {**runner.plan.grid, "windows": [5]}
    with pytest.raises(UsageError, match="different grid"):
        runner.run(resume=True)


def test_resume_refuses_a_directory_that_is_not_a_sweep(tmp_path):
    from producer_core.results.results_io import write_results_dir
    from tests.results_fakes import fake_comparison

    document, results = fake_comparison(files=True)
    write_results_dir(tmp_path / "out", document, results)
    with pytest.raises(UsageError, match="holds a comparison, not a sweep"):
        fake_runner(tmp_path, []).run(resume=True)


def with_broker_cpu(document: dict, cpu_per_million: float) -> dict:
    return {**document, "broker_cost": {"broker": {"cpu_s_per_million_msgs": cpu_per_million},
                                        "kafka": {"available": False}}}


def test_minimize_broker_cpu_picks_the_cheapest_cell_for_the_broker():
    results = [
        result(Cell("partition", 50), with_broker_cpu(run(3000, 48), 90.0)),
        result(Cell("broker", 5), with_broker_cpu(run(2000, 12), 40.0)),
        result(Cell("broker", 35), with_broker_cpu(run(1120, 41), 55.0)),
    ]
    assert recommend(results, SLO)["cell"] == "broker_w35"  # fewest requests
    rec = recommend(results, SLO, minimize="broker-cpu")
    assert rec["cell"] == "broker_w5" and rec["minimize"] == "broker-cpu"
    assert rec["reference_cell"] == "partition_w50"
    assert rec["less_broker_cpu_pct"] == pytest.approx(55.6, abs=0.05)
    assert "broker CPU 40.0 s per million messages" in rec["text"]


def test_minimize_broker_cpu_without_measurements_says_so():
    results = [result(Cell("broker", 5), run(2000, 12))]
    rec = recommend(results, SLO, minimize="broker-cpu")
    assert rec["cell"] is None and "broker's CPU measured" in rec["text"]
