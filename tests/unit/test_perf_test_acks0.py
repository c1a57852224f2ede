"""`kbatch perf-test --producer-props acks=0` (issue 49): no acknowledgement comes, so the
records perf-test counts are those written; it printed "0 records sent" for 50."""

from __future__ import annotations

from cli.commands.perf_test import PerfTestProgress, final_lines
from producer_core.results.perf_test_format import parse_line


def document(acks: str) -> dict:
    return {"messages": {"acknowledged": 0 if acks == "0" else 50,
                         "sent_unacknowledged": 50 if acks == "0" else 0},
            "settings": {"acks": acks}, "duration_s": 0.5, "workload": {"warmup_s": 0.0},
            "latency": {"mean_ms": 0.0, "max_ms": 0.0, "p50_ms": 0.0, "p95_ms": 0.0,
                        "p99_ms": 0.0, "p999_ms": 0.0}}


def test_acks0_counts_the_records_written():
    (line,) = final_lines(document("0"), 10.0, 0)
    parsed = parse_line(line)
    assert parsed is not None and parsed.records == 50 and parsed.records_per_s == 100.0


def test_acks_all_counts_the_acknowledged_only():
    doc = document("all")
    doc["messages"]["sent_unacknowledged"] = 7  # in flight when a signal stopped it
    (line,) = final_lines(doc, 10.0, 0)
    assert parse_line(line).records == 50


def test_acks0_window_lines_count_the_records_written(capsys):
    row = {"acknowledged": 0, "records": 20, "start_s": 0.0, "end_s": 1.0, "max_ms": 0.0}
    PerfTestProgress(5.0, 10.0, acks0=True).on_interval(row)
    PerfTestProgress(5.0, 10.0).on_interval(row)  # acks!=0: nothing acknowledged, no line
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and parse_line(lines[0]).records == 20
