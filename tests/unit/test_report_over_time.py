"""`kbatch report` over time: every mode (librdkafka too) from intervals, mode colours,
the per-topic table; on synthetic results."""

from __future__ import annotations

import json

import numpy as np
from click.testing import CliRunner

from cli.charts.charts import mode_color
from cli.commands.report import report
from producer_core.results.intervals import IntervalRecorder, engine_live
from producer_core.results.metrics import ClientCounts, TopicMetrics
from producer_core.results.results_io import add_facts
from tests.results_fakes import fake_results

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _with_intervals(mode: str, client: bool = False) -> dict:
    results = fake_results("none")
    results.mode = mode
    m = results.metrics
    if client:  # librdkafka: no request log, only totals
        m.client_counts = ClientCounts(requests=len(m.requests), batches=len(m.requests))
        m.requests = []
    m.topics = {"a": TopicMetrics(acknowledged=1500, generated=1500, requests=600,
                                  records_sent=1500),
                "b": TopicMetrics(acknowledged=500, generated=500, requests=400,
                                  records_sent=500)}
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
    add_facts(document, embedded=False)
    return document


def test_over_time_chart_has_every_mode_and_the_topics_table(tmp_path) -> None:
    paths = []
    for mode, client in (("partition", False), ("librdkafka", True)):
        path = tmp_path / f"{mode}.json"
        path.write_text(json.dumps(_with_intervals(mode, client)))
        paths.append(str(path))
    out = tmp_path / "rep"
    proc = CliRunner().invoke(report, [*paths, "--out", str(out)], catch_exceptions=False)
    assert proc.exit_code == 0, proc.output
    data = (out / "over_time.png").read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 20_000
    text = (out / "report.md").read_text()
    assert "](over_time.png)" in text
    assert "Not in the charts over time" not in text  # librdkafka is drawn too
    assert "per topic" in text and "| a " in text and "| b " in text
    assert "per topic" in proc.output


def test_report_names_runs_it_cannot_draw_over_time(tmp_path) -> None:
    document = fake_results("partition").to_dict()  # no intervals, no request log
    add_facts(document, embedded=False)
    path = tmp_path / "old.json"
    path.write_text(json.dumps(document))
    proc = CliRunner().invoke(report, [str(path), "--out", str(tmp_path / "r")],
                              catch_exceptions=False)
    assert proc.exit_code == 0
    assert "Not in the charts over time" in (tmp_path / "r" / "report.md").read_text()


def test_each_mode_has_one_colour() -> None:
    modes = ("partition", "none", "broker", "java", "bruce", "librdkafka", "adaptive", "aimd")
    colours = [mode_color(m) for m in modes]
    assert len(set(colours)) == len(modes)
    assert mode_color("librdkafka") == mode_color("librdkafka")
