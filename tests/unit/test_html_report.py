"""The HTML report's figures and page, the dashboard's state, /metrics text and address
parsing: pure logic on synthetic results (the browser tests are in
tests/cli/test_html_report_browser.py and tests/integration/test_dashboard_browser.py)."""

from __future__ import annotations

import json
import re
import socket

import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families

from cli.charts.charts import mode_color
from cli.dashboard.prometheus_text import prometheus_text
from cli.dashboard.server import parse_address
from cli.dashboard.state import DashboardState
from cli.report.html_figures import (
    Line,
    frontier_figure,
    mode_hex,
    over_time_figures,
    over_time_panels,
    percentile_figure,
)
from cli.report.html_report import build_report
from producer_core.engine.drivers.run_types import Progress
from producer_core.errors import UsageError
from producer_core.results.histogram import LatencyHistogram
from producer_core.results.intervals import IntervalRecorder, engine_live
from producer_core.results.results_io import LoadedResults, add_facts
from tests.results_fakes import fake_comparison, fake_results


def run_with_intervals(mode: str, seed: int = 1, extra: dict | None = None) -> dict:
    """A fake run whose intervals were recorded by the real recorder (2 intervals);
    `extra` keys are added to every interval row (figures another part of kbatch adds)."""
    results = fake_results(mode, seed=seed)
    m = results.metrics
    acked = m.messages_acked
    m.messages_acked = 0
    recorder = IntervalRecorder(1.0)
    recorder.begin(0.0, m, engine_live(m))
    m.messages_acked = acked // 2
    recorder.poll(1.0)
    m.messages_acked = acked
    m.latency.record_seconds(np.full(10, 0.5))
    recorder.finish(2.0)
    document = results.to_dict()
    for row in document["intervals"]["run"]:
        row.update(extra or {})
    add_facts(document, embedded=False)
    return document


def loaded(document: dict, name: str = "results.json") -> LoadedResults:
    from pathlib import Path

    return LoadedResults(Path("/nowhere") / name, json.loads(json.dumps(document)))


def test_today_s_interval_rows_give_the_five_panels_in_order() -> None:
    rows = run_with_intervals("partition")["intervals"]["run"]
    panels = [p for p, *_ in over_time_panels([Line("partition", "partition", rows)])]
    assert panels == ["requests_per_s", "msgs_per_req", "latency", "msgs_per_s", "mb_per_s"]
    latency = next(keys for p, _, _, keys in over_time_panels(
        [Line("p", "partition", rows)]) if p == "latency")
    assert latency == ["p50_ms", "p99_ms", "mean_ms", "max_ms"]


def test_new_interval_keys_become_panels_and_absent_ones_do_not() -> None:
    """End-to-end latency, consumer lag and broker cost, added to the rows by other parts
    of kbatch, are drawn with no change to the report; a run without them draws none."""
    extra = {"e2e_p50_ms": 3.0, "e2e_p99_ms": 9.0, "consumer_lag": 120,
             "broker": {"cpu_s": 0.4, "name": "b1"}, "flag": True}
    with_extra = run_with_intervals("broker", extra=extra)["intervals"]["run"]
    plain = run_with_intervals("partition")["intervals"]["run"]
    panels = {p: (title, unit, keys) for p, title, unit, keys in over_time_panels(
        [Line("a", "broker", with_extra), Line("b", "partition", plain)])}
    assert panels["e2e"] == ("E2e latency", "ms", ["e2e_p50_ms", "e2e_p99_ms"])
    assert panels["consumer_lag"][2] == ["consumer_lag"]
    assert panels["broker.cpu_s"][1] == "s"
    assert "flag" not in panels and "broker.name" not in panels
    figures = over_time_figures([Line("a", "broker", with_extra), Line("b", "partition", plain)])
    assert {t.legendgroup for t in figures["e2e"].data} == {"a"}  # only the run that has it
    assert "e2e" not in over_time_figures([Line("b", "partition", plain)])


def test_each_run_has_its_mode_colour_and_repeats_are_dashed() -> None:
    rows = run_with_intervals("partition")["intervals"]["run"]
    figure = over_time_figures([Line("p #1", "partition", rows), Line("b", "broker", rows),
                                Line("p #2", "partition", rows)])["requests_per_s"]
    colours = [t.line.color for t in figure.data]
    assert colours == [mode_hex("partition"), mode_hex("broker"), mode_hex("partition")]
    assert mode_hex("partition") != mode_hex("broker")
    assert [t.line.dash for t in figure.data] == ["solid", "solid", "dash"]
    from matplotlib.colors import to_hex

    assert mode_hex("bruce") == to_hex(mode_color("bruce"))  # the PNGs' palette


def test_percentile_curve_is_on_the_log_inverse_axis_and_ends_at_the_max() -> None:
    histogram = LatencyHistogram()
    histogram.record_seconds(np.linspace(0.001, 0.1, 10_000))
    figure = percentile_figure([("partition", "partition", histogram)])
    trace = figure.data[0]
    assert figure.layout.xaxis.type == "log"
    assert trace.x[0] == 1.0 and trace.x[-1] == pytest.approx(10_000)
    assert trace.y[-1] == pytest.approx(histogram.max_ms)
    assert list(figure.layout.xaxis.ticktext)[:4] == ["0%", "90%", "99%", "99.9%"]
    assert all(b >= a for a, b in zip(trace.y, trace.y[1:], strict=False))


def test_frontier_hover_names_each_cell_s_settings(tmp_path) -> None:
    from tests.unit.test_sweep import fake_runner

    document = fake_runner(tmp_path, []).run(resume=False)
    figure = frontier_figure(document)
    assert figure is not None
    hovers = [h for trace in figure.data for h in (trace.hovertext or ())]
    assert len(hovers) == 4
    assert any("mode broker" in h and "window 50 ms" in h and "requests/s" in h for h in hovers)
    assert frontier_figure({"kind": "sweep", "sweep": {"cells": []}}) is None


def test_report_page_is_one_self_contained_file() -> None:
    document, _ = fake_comparison(("partition", "broker", "none"))
    for run, mode in zip(document["runs"], ("partition", "broker", "none"), strict=True):
        run["intervals"] = run_with_intervals(mode)["intervals"]
    text = build_report([loaded(document)])
    assert text.startswith("<!DOCTYPE html>")
    assert not re.search(r"<script[^>]+src=", text)  # every script inlined
    assert not re.search(r"<link[^>]+href=", text)  # every style inlined
    assert text.count("Plotly.newPlot") == 8  # bars, percentiles, five over-time panels...
    for chart in ("chart-requests", "chart-latency", "chart-over-requests_per_s",
                  "chart-over-msgs_per_req", "chart-over-latency"):
        assert f'id="{chart}"' in text
    assert "kbatch compare-modes" in text and "p99.9" in text  # the tables
    assert "No charts over time" not in text


def test_old_results_without_intervals_say_so(tmp_path) -> None:
    """A file of the first schema-1 kbatch: no intervals, kind, started_at or host."""
    from producer_core.results.results_io import load_results

    document = fake_results("partition").to_dict()
    for key in ("intervals", "kind", "started_at", "host"):
        document.pop(key, None)
    path = tmp_path / "old.json"
    path.write_text(json.dumps(document))
    text = build_report([load_results(path)])
    assert "No charts over time for partition" in text
    assert 'id="chart-latency"' in text and 'id="chart-requests"' in text


def _snapshot_state() -> DashboardState:
    state = DashboardState("kbatch test")
    live = state.begin_run("partition", "partition")
    rows = run_with_intervals("partition", extra={"broker_cpu_s": 0.25})["intervals"]["run"]
    for row in rows:
        state.interval(live, row)
    state.progress(live, Progress(2.0, 2200, 2100, 3, 4, 400, 55.0, 2200, 1.5))
    state.begin_run("broker \"quoted\"\n", "broker")
    state.warn("something happened")
    state.sweep_progress(3, 8, 42.0, "broker_w50 round 1")
    return state


def test_metrics_text_parses_as_prometheus_exposition() -> None:
    text = prometheus_text(_snapshot_state().snapshot())
    families = {f.name: f for f in text_string_to_metric_families(text)}
    acked = families["kbatch_messages_acknowledged"]
    assert acked.type == "counter"
    values = {s.labels["run"]: s.value for s in acked.samples if s.name.endswith("_total")}
    assert values["partition"] == 2100  # the live progress, fresher than the intervals
    assert values['broker "quoted"\n'] == 0  # escaped label values survive the round trip
    quantiles = {s.labels["quantile"]: s.value
                 for s in families["kbatch_ack_latency_seconds"].samples}
    assert set(quantiles) == {"0.5", "0.95", "0.99", "0.999", "1.0"}
    assert quantiles["1.0"] == pytest.approx(0.5, rel=0.01)  # the 0.5 s values recorded
    assert families["kbatch_generator_lag_p99_seconds"].samples[0].value == 0.0015
    assert families["kbatch_interval_broker_cpu_s"].samples[0].value == 0.25
    assert families["kbatch_sweep_units_done"].samples[0].value == 3
    assert families["kbatch_warnings"].samples[0].value == 1
    assert families["kbatch_up"].samples[0].value == 1


def test_failed_messages_in_an_interval_become_a_warning_at_once() -> None:
    state = DashboardState("t")
    live = state.begin_run("partition", "partition")
    state.interval(live, {"start_s": 1.0, "end_s": 2.0, "failed": 7})
    assert state.snapshot().warnings == ["partition: 7 messages failed in 1.0-2.0 s"]


def test_a_second_round_gets_its_own_line() -> None:
    state = DashboardState("t")
    state.begin_run("partition", "partition")
    state.begin_run("partition", "partition")
    runs = state.snapshot().runs
    assert [r.label for r in runs] == ["partition", "partition #2"]
    assert [r.done for r in runs] == [True, False]


@pytest.mark.parametrize(("text", "expected"), [
    ("8080", ("127.0.0.1", 8080, True)),
    ("0", ("127.0.0.1", 0, True)),
    ("127.0.0.1:0", ("127.0.0.1", 0, True)),
    ("localhost:9000", ("localhost", 9000, True)),
    ("[::1]:0", ("::1", 0, True)),
    ("0.0.0.0:0", ("0.0.0.0", 0, False)),
])
def test_dashboard_addresses(text, expected) -> None:
    assert parse_address(text) == expected


@pytest.mark.parametrize("text", ["", "abc", "1.2.3.4:", "70000", "host:port", ":::1"])
def test_bad_dashboard_addresses_are_usage_errors(text) -> None:
    with pytest.raises(UsageError, match="--dashboard"):
        parse_address(text)


def test_a_port_in_use_is_a_clear_usage_error() -> None:
    from cli.dashboard.server import open_dashboard

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(UsageError, match=f"port {port} on 127.0.0.1 is in use"):
            open_dashboard(f"127.0.0.1:{port}", "t")


def test_a_sweep_feeds_the_dashboard_its_progress_cells_and_failures(tmp_path) -> None:
    """The sweep's hooks through a real dashboard server: cells done of total, each cell a
    run with its intervals, a failed cell a warning, the state and /metrics served."""
    import urllib.request

    from cli.dashboard.server import open_dashboard, sweep_hooks
    from tests.unit.test_sweep import fake_runner

    dashboard = open_dashboard("127.0.0.1:0", "kbatch sweep test")
    assert dashboard is not None
    try:
        sweeper = fake_runner(tmp_path, [], fail_cells=("broker_w50",))
        fake_run = sweeper.run_one

        def run_one(workload, settings, mode, bootstrap, progress):
            results = fake_run(workload, settings, mode, bootstrap, progress)
            progress.on_interval({"start_s": 0.0, "end_s": 1.0, "requests": 5, "records": 50,
                                  "msgs_per_s": 50.0,
                                  "latency_us": results.metrics.latency.encode()})
            return results

        sweeper.run_one = run_one
        ends = []
        sweeper.on_start, sweeper.on_end = sweep_hooks(
            lambda *a: None, lambda *a: ends.append(a), 8, tmp_path / "out",
            lambda left: left * 2.0)
        sweeper.run(resume=False)
        snapshot = dashboard.state.snapshot()
        assert len(ends) == 8
        assert (snapshot.sweep.done, snapshot.sweep.total) == (8, 8)
        assert len(snapshot.runs) == 8 and all(len(r.rows) == 1 for r in snapshot.runs[:2])
        assert [w for w in snapshot.warnings if "broker_w50" in w and "failed" in w]
        state = json.loads(urllib.request.urlopen(dashboard.url + "state.json",
                                                  timeout=10).read())
        assert "frontier" in state["figures"] and "over-msgs_per_s" in state["figures"]
        assert state["sweep"]["done"] == 8
        metrics = urllib.request.urlopen(dashboard.url + "metrics", timeout=10).read().decode()
        assert "kbatch_sweep_units_done 8" in metrics
        page = urllib.request.urlopen(dashboard.url, timeout=10).read().decode()
        assert "Plotly.react" in page and "<script src" not in page
    finally:
        dashboard.close()
