"""`--out`, `kbatch report` and `kbatch gate` end to end on the embedded broker."""

from __future__ import annotations

import json

import jsonschema
import pyarrow.parquet as pq
import pytest

from producer_core.results.results_io import results_schema
from tests.cli.test_produce_cli import ROOT, kbatch


@pytest.mark.broker
def test_produce_out_then_report_and_gate(tmp_path):
    out = tmp_path / "run"
    proc = kbatch("produce", "--partitions", "8", "--rate", "1000", "--duration", "1",
                  "-X", "linger.ms=20", "--no-progress", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((out / "results.json").read_text())
    assert doc["kind"] == "run" and doc["schema_version"] == 1
    jsonschema.validate(doc, results_schema())  # a real run against the published schema
    assert doc["broker_version"].startswith("tansu ")
    assert doc["host"]["cpu_count"] >= 1 and doc["started_at"].endswith("Z")
    files = doc["files"]
    assert (out / files["latency_hgrm"]).read_text().startswith("       Value     Percentile")
    assert (out / files["latency_hdr"]).read_text().strip() == doc["histograms"]["latency_us"]
    log = pq.read_table(out / files["requests"])
    assert log.num_rows == doc["requests_sent"]
    assert sum(log.column("records").to_pylist()) == doc["records_sent"] == 1000

    proc = kbatch("report", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "kbatch produce — mode partition" in proc.stdout
    for name in ("latency.png", "requests.png", "over_time.png"):
        assert (out / "report" / name).stat().st_size > 0
    assert f"| requests_sent | {doc['requests_sent']:,} |" in (
        out / "report" / "report.md").read_text()

    gates = tmp_path / "gates.toml"
    gates.write_text('[[rule]]\ncheck = "partition.failed == 0"\n'
                     '[[rule]]\ncheck = "msgs_per_req >= 1"\n')
    assert kbatch("gate", str(out), "--gates", str(gates)).returncode == 0
    gates.write_text('[[rule]]\ncheck = "partition.requests_sent <= 1"\n')
    proc = kbatch("gate", str(out), "--gates", str(gates))
    assert proc.returncode == 1 and "FAIL rule 1 fails" in proc.stdout
    gates.write_text('[[rule]]\ncheck = "broker.requests_sent <= 1"\n')
    proc = kbatch("gate", str(out), "--gates", str(gates))
    assert proc.returncode == 2 and "no run of mode 'broker'" in proc.stderr
    gates.write_text('[[rule]]\ncheck = "partition.requests_sent <"\n')
    proc = kbatch("gate", str(out), "--gates", str(gates))
    assert proc.returncode == 2 and "cannot be parsed" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.broker
def test_compare_modes_out_passes_the_project_gate_rules(tmp_path):
    out = tmp_path / "cmp"
    proc = kbatch("compare-modes", "--modes", "partition,broker", "--partitions", "50",
                  "--rate", "2000", "--duration", "2", "--linger-ms", "200", "--no-progress",
                  "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((out / "results.json").read_text())
    assert doc["kind"] == "comparison" and doc["broker_version"].startswith("tansu ")
    for run in doc["runs"]:
        log = pq.read_table(out / run["files"]["requests"])
        assert log.num_rows == run["requests_sent"]
        assert set(log.column("mode").to_pylist()) == {run["mode"]}
    proc = kbatch("report", str(out), "--out", str(tmp_path / "rep"))
    assert proc.returncode == 0, proc.stderr
    assert "change vs partition" in proc.stdout
    assert (tmp_path / "rep" / "latency.png").stat().st_size > 0
    # The project's own gates file holds on a short run of the same shape.
    proc = kbatch("gate", str(out), "--gates", str(ROOT / "gates" / "ci.toml"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "rules hold." in proc.stdout
