"""`--runner spark` and `kbatch analyze` as a user runs them: clear errors before anything
starts, and one distributed run end to end, analyzed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from cli.main import cli
from tests.spark_support import assert_row_reproduces_run, spark_test

KBATCH = [sys.executable, "-m", "cli.main"]
ROOT = Path(__file__).resolve().parents[2]


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def kbatch(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KBATCH, *args], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT)


@pytest.mark.parametrize("command", [["produce", "--runner", "spark"], ["analyze", "."]])
def test_without_the_extra_the_error_names_it(monkeypatch, command):
    monkeypatch.setitem(sys.modules, "pyspark", None)
    result = invoke(*command)
    assert result.exit_code == 2
    assert "PySpark is not installed" in result.output
    assert "pip install 'kbatch[spark]'" in result.output


@pytest.mark.parametrize(("args", "message"), [
    (["--spark-master", "spark:/h:7077"], "--spark-master 'spark:/h:7077' is not a Spark "
                                          "master URL. Allowed forms: local"),
    (["--spark-master", "local[1]", "--workers", "2"], "runs 1 task(s) at a time, but "
                                                       "--workers 2 needs 2"),
    (["--spark-master", "spark://spark-1:7077"], "the embedded broker (or lab) listens on "
                                                 "this machine's loopback address"),
    (["--spark-master", "spark://spark-1:7077", "--bootstrap-servers", "localhost:9092"],
     "--bootstrap-servers localhost:9092 is a loopback address"),
    (["--spark-master", "yarn", "--brokers", "3"], "the embedded broker (or lab)"),
    (["--spark-conf", "executor.memory=2g"], "Malformed --spark-conf"),
])
def test_bad_runner_flags_are_refused_before_anything_starts(args, message):
    for command in ("produce", "compare-modes"):
        result = invoke(command, "--runner", "spark", *args)
        assert result.exit_code == 2, result.output
        assert message in " ".join(result.output.split()), result.output
        assert "Traceback" not in result.output


def test_spark_flags_need_the_spark_runner():
    result = invoke("produce", "--workers", "2", "--spark-master", "local[2]")
    assert result.exit_code == 2
    assert "--workers, --spark-master only apply with --runner spark" in result.output


def test_analyze_refuses_bad_input_before_starting_spark(tmp_path):
    result = invoke("analyze", str(tmp_path))
    assert result.exit_code == 2 and "No results.json in" in result.output
    result = invoke("analyze", str(tmp_path), "--group-by", "mode,colour")
    assert result.exit_code == 2 and "--group-by: unknown column(s) colour" in result.output
    result = invoke("analyze", str(tmp_path), "--spark-master", "local[x]")
    assert result.exit_code == 2 and "is not a Spark master URL" in result.output


@pytest.mark.broker
@spark_test
def test_produce_on_spark_then_analyze_it(tmp_path):
    run_dir = tmp_path / "spark-run"
    proc = kbatch("produce", "--runner", "spark", "--workers", "2", "--partitions", "8",
                  "--rate", "3000", "--duration", "2", "--spark-start-lead", "3",
                  "-X", "linger.ms=10", "--no-progress", "--out", str(run_dir))
    assert proc.returncode == 0, proc.stderr
    assert "2 Spark workers on local[2]" in proc.stderr
    document = json.loads((run_dir / "results.json").read_text())
    assert document["messages"]["acknowledged"] == 6000 and document["messages"]["failed"] == 0
    assert document["runner"]["workers"] == 2
    assert sum(s["requests_sent"] for s in document["runner"]["shares"]) == (
        document["requests_sent"])
    assert pq.read_table(run_dir / "runs" / "partition-1" / "requests.parquet").num_rows == (
        document["requests_sent"])

    out = tmp_path / "analysis"
    proc = kbatch("analyze", str(run_dir), "--out", str(out), "--spark-master", "local[2]")
    assert proc.returncode == 0, proc.stderr
    assert "kbatch analyze" in proc.stdout and "1 run(s) analyzed" in proc.stderr
    (row,) = pq.read_table(out / "summary").to_pylist()
    assert row["run"] == f"{run_dir}/partition-1" and row["mode"] == "partition"
    assert_row_reproduces_run(row, document, run_dir / document["files"]["requests"])
