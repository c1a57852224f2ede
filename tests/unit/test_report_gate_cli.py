"""`kbatch report` and `kbatch gate` on saved (synthetic) results, in-process and fast."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from cli.commands.gate import gate
from cli.commands.report import report
from producer_core.analysis.compare import SUMMARY_METRICS
from producer_core.results.results_io import RunRecorder, add_facts, write_results_dir
from producer_core.results.run_facts import run_document
from tests.results_fakes import fake_comparison, fake_results

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A comparison directory (2 rounds) and a single-run directory."""
    root = tmp_path_factory.mktemp("saved")
    document, results = fake_comparison(repeat=2, files=True)
    write_results_dir(root / "cmp", document, results)
    run = RunRecorder(lambda: fake_results("partition"))()
    run_doc = run_document(run, files=True)
    add_facts(run_doc, embedded=False)
    write_results_dir(root / "run", run_doc, [run])
    return root


def invoke(command, *args):
    return CliRunner().invoke(command, [str(a) for a in args], catch_exceptions=False)


def markdown_rows(text: str, first_cell: str) -> list[list[str]]:
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] == first_cell:
            rows.append(cells)
    return rows


def number(text: str) -> float:
    return float(text.replace(",", ""))


def test_report_writes_pngs_and_markdown_matching_the_json(saved, tmp_path):
    out = tmp_path / "report"
    proc = invoke(report, saved / "cmp", "--out", out)
    assert proc.exit_code == 0, proc.output
    assert "kbatch compare-modes" in proc.output  # the live table, on stdout
    for name in ("latency.png", "requests.png", "requests_per_second.png"):
        data = (out / name).read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 10_000, name
    text = (out / "report.md").read_text()
    for name in ("latency.png", "requests.png", "requests_per_second.png"):
        assert f"]({name})" in text
    document = json.loads((saved / "cmp" / "results.json").read_text())
    # Comparison table: "median (min–max)" per mode, as the terminal shows it.
    for metric in SUMMARY_METRICS:
        if any(metric not in document["summary"][mode] for mode in document["modes"]):
            assert markdown_rows(text, metric) == []  # an optional figure (broker_cost)
            continue
        [row] = markdown_rows(text, metric)
        for index, mode in enumerate(document["modes"]):
            cell = row[2 * index] if index else row[1]  # metric, mode, (mode, change)...
            match = re.fullmatch(r"(\S+) \((\S+)–(\S+)\)", cell)
            assert match, cell
            digits = 1 if metric.endswith("_ms") or metric in (
                "msgs_per_req", "partitions_per_request") else 0
            digits = 2 if metric == "mb_per_s" else digits
            for value, key in zip(match.groups(), ("median", "min", "max"), strict=True):
                assert number(value) == round(document["summary"][mode][metric][key], digits)
    # Latency table: every run's percentiles exactly as in the JSON.
    for run in document["runs"]:
        [row] = markdown_rows(text, f"{run['mode']} round {run['round']}")
        expected = [run["latency"][k] for k in ("p50_ms", "p95_ms", "p99_ms", "p999_ms",
                                                 "max_ms", "mean_ms")]
        assert [number(c) for c in row[1:7]] == expected
        assert number(row[7]) == run["latency"]["count"]
    assert "broker_version" not in text and "unknown" in text  # facts line


def test_report_of_a_run_and_a_plain_json_file(saved, tmp_path):
    plain = tmp_path / "plain.json"
    plain.write_text((saved / "run" / "results.json").read_text())
    out = tmp_path / "r"
    proc = invoke(report, saved / "run", plain, "--out", out)
    assert proc.exit_code == 0, proc.output
    assert "kbatch produce — mode partition" in proc.output
    text = (out / "report.md").read_text()
    run = json.loads(plain.read_text())
    [row] = markdown_rows(text, "requests_sent")[:1]
    assert number(row[1]) == run["requests_sent"]
    # Two inputs with the same mode are labelled by input in the charts.
    assert (out / "latency.png").stat().st_size > 10_000
    # plain.json's request log path does not resolve next to it: its curve is left out,
    # but the run directory's one is drawn.
    assert (out / "requests_per_second.png").exists()


def test_report_default_out_dir_and_no_charts(saved, tmp_path):
    target = tmp_path / "copy"
    target.mkdir()
    (target / "results.json").write_text((saved / "run" / "results.json").read_text())
    proc = invoke(report, target, "--no-charts")
    assert proc.exit_code == 0, proc.output
    assert (target / "report" / "report.md").is_file()
    assert not list((target / "report").glob("*.png"))


def test_report_bad_input_is_exit_2(tmp_path):
    proc = CliRunner().invoke(report, [str(tmp_path / "missing")])
    assert proc.exit_code == 2 and "No results at" in proc.output


GATES_PASS = """
[[rule]]
check = "broker.requests_sent <= 0.1 * partition.requests_sent"
[[rule]]
check = "broker.msgs_per_req >= 50"
[[rule]]
check = "broker.collector.partitions_per_send.mean >= 8"
"""


def write(tmp_path, text, name="gates.toml"):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_gate_passes_with_exit_0(saved, tmp_path):
    md = tmp_path / "summary.md"
    proc = invoke(gate, saved / "cmp", "--gates", write(tmp_path, GATES_PASS), "--markdown", md)
    assert proc.exit_code == 0, proc.output
    assert "3 of 3 rules hold." in proc.output
    for check in ("broker.requests_sent <= 0.1 * partition.requests_sent",
                  "broker.msgs_per_req >= 50"):
        assert check in proc.output
    assert proc.output.count(" pass ") == 3
    text = md.read_text()
    assert "| 1 | broker.requests_sent <= 0.1 * partition.requests_sent | 20 |" in text


def test_gate_fails_with_exit_1_and_a_reason(saved, tmp_path):
    gates = write(tmp_path, GATES_PASS + '[[rule]]\ncheck = "broker.p99_ms <= 1"\n'
                                         'why = "tail latency budget"\n')
    proc = invoke(gate, saved / "cmp", "--gates", gates)
    assert proc.exit_code == 1, proc.output
    assert re.search(r"FAIL rule 4 fails: broker.p99_ms = [\d.,]+ is not <= 1\. tail latency "
                     r"budget", proc.output)
    assert "3 of 4 rules hold, 1 fail." in proc.output


def test_gate_malformed_file_is_exit_2(saved, tmp_path):
    proc = CliRunner().invoke(gate, [str(saved / "cmp"), "--gates",
                                     str(write(tmp_path, '[[rule]]\ncheck = "p99 =< 3"\n'))])
    assert proc.exit_code == 2
    assert "rule 1: check 'p99 =< 3' cannot be parsed" in proc.output


def test_gate_missing_and_unknown_metrics_are_exit_2(saved, tmp_path):
    gates = write(tmp_path, GATES_PASS + '[[rule]]\ncheck = "partition.collector.sends >= 1"\n'
                                         '[[rule]]\ncheck = "broker.p99 <= 1"\n')
    proc = CliRunner().invoke(gate, [str(saved / "cmp"), "--gates", str(gates)])
    assert proc.exit_code == 2
    assert "missing metric 'partition.collector.sends'" in proc.output
    assert "unknown metric 'broker.p99'" in proc.output
    assert "3 of 5 rules hold, 2 could not be evaluated." in proc.output


def test_gate_against_a_baseline(saved, tmp_path):
    gates = write(tmp_path, 'baseline = "../base"\n[[rule]]\nmetric = "broker.p99_ms"\n'
                            'max_increase = "10%"\n', "sub/gates.toml")
    # No baseline directory yet: the relative path is resolved against the gates file.
    proc = CliRunner().invoke(gate, [str(saved / "cmp"), "--gates", str(gates)])
    assert proc.exit_code == 2 and "base" in proc.output
    proc = invoke(gate, saved / "cmp", "--gates", gates, "--baseline", saved / "cmp")
    assert proc.exit_code == 0, proc.output
    # A run compared with a comparison: the same mode's numbers are what count.
    proc = invoke(gate, saved / "run", "--gates",
                  write(tmp_path, '[[rule]]\nmetric = "partition.p99_ms"\nmax_increase = "0%"\n'),
                  "--baseline", saved / "run")
    assert proc.exit_code == 0, proc.output
