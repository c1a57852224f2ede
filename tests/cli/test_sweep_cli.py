"""`kbatch sweep` end to end on the embedded broker: the out dir is read by report and gate;
an interrupted sweep resumes with only the missing cells."""

from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest

from tests.cli.test_produce_cli import KBATCH, ROOT, kbatch
from tests.spark_support import spark_test

GRID = ("--modes", "partition,broker", "--windows", "0,50", "--partitions", "8",
        "--rate", "400", "--duration", "1")


@pytest.mark.broker
def test_sweep_out_dir_is_read_by_report_and_gate(tmp_path):
    out = tmp_path / "sweep"
    proc = kbatch("sweep", *GRID, "--slo", "p99<=5s", "--out", str(out), timeout=240)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((out / "results.json").read_text())
    assert doc["kind"] == "sweep"
    assert doc["modes"] == ["partition_w0", "partition_w50", "broker_w0", "broker_w50"]
    assert len({r["workload"]["topic"] for r in doc["runs"]}) == 4  # a fresh topic each
    for run in doc["runs"]:
        assert run["messages"]["acknowledged"] == 400 and run["messages"]["failed"] == 0
    by_cell = {r["cell"]: r for r in doc["runs"]}
    assert by_cell["broker_w50"]["settings"]["broker.linger.ms"] == 50
    assert by_cell["partition_w50"]["settings"]["linger.ms"] == 50
    # A 50 ms window batches: far fewer requests than no window at all.
    assert by_cell["broker_w50"]["requests_sent"] * 3 < by_cell["broker_w0"]["requests_sent"]
    rec = doc["sweep"]["recommendation"]
    assert rec["cell"] in doc["modes"] and "Recommendation for p99<=5s: mode" in proc.stdout
    assert (out / "frontier.png").stat().st_size > 10_000

    report = kbatch("report", str(out), timeout=120)
    assert report.returncode == 0, report.stderr
    assert "broker_w50" in (out / "report" / "report.md").read_text()

    gates = tmp_path / "gates.toml"
    gates.write_text('[[rule]]\ncheck = "broker_w50.requests_sent < broker_w0.requests_sent"\n'
                     '[[rule]]\ncheck = "partition_w0.p99_ms <= 5000"\n')
    gate = kbatch("gate", str(out), "--gates", str(gates), timeout=60)
    assert gate.returncode == 0, gate.stdout + gate.stderr
    assert "2 of 2 rules hold" in gate.stdout


@pytest.mark.broker
def test_interrupted_sweep_resumes(tmp_path):
    out = tmp_path / "sweep"
    results = out / "results.json"
    proc = subprocess.Popen([*KBATCH, "sweep", *GRID, "--out", str(out)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # stop it once the first cell is on disk
            if results.is_file() and json.loads(results.read_text() or "{}").get("runs"):
                break
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, stderr
    assert "--resume" in stderr and "Traceback" not in stderr
    first = [r["cell"] for r in json.loads(results.read_text())["runs"]]
    assert 1 <= len(first) < 4

    again = kbatch("sweep", *GRID, "--out", str(out), timeout=60)
    assert again.returncode == 2 and "--resume" in again.stderr

    resumed = kbatch("sweep", *GRID, "--out", str(out), "--resume", timeout=240)
    assert resumed.returncode == 0, resumed.stderr
    doc = json.loads(results.read_text())
    cells = [r["cell"] for r in doc["runs"]]
    assert cells[:len(first)] == first and sorted(cells) == sorted(doc["modes"])
    assert len(cells) == 4
    # Only the missing cells ran again.
    assert resumed.stdout.count(" round 1 (mode ") + resumed.stderr.count(
        " round 1 (mode ") == 4 - len(first)


@spark_test
def test_sweep_on_spark_runs_each_cell_on_its_own_broker(tmp_path):
    out = tmp_path / "sweep"
    proc = kbatch("sweep", *GRID, "--runner", "spark", "--workers", "2", "--out", str(out),
                  timeout=400)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((out / "results.json").read_text())
    assert sorted(r["cell"] for r in doc["runs"]) == sorted(doc["modes"])
    assert len(doc["runs"]) == 4
    brokers = {r["broker"] for r in doc["runs"]}
    assert len(brokers) == 4 and all("the task's own" in b for b in brokers)  # one each
    for run in doc["runs"]:
        assert run["messages"]["acknowledged"] == 400 and run["messages"]["failed"] == 0
    by_cell = {r["cell"]: r for r in doc["runs"]}
    assert by_cell["broker_w50"]["requests_sent"] * 3 < by_cell["broker_w0"]["requests_sent"]
    assert (out / "runs" / "broker_w50-1" / "requests.parquet").is_file()


def test_spark_flags_need_runner_spark(tmp_path):
    proc = kbatch("sweep", *GRID, "--workers", "3", "--out", str(tmp_path / "x"), timeout=60)
    assert proc.returncode == 2 and "--workers only apply with --runner spark" in proc.stderr
