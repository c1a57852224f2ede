"""`kbatch lab up/down/status` and `--brokers N --rtt-ms R` end to end, as a user runs them."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.cli.test_produce_cli import KBATCH, ROOT, alive, child_pids

pytestmark = pytest.mark.broker


def run_kbatch(env: dict[str, str], *args: str, timeout: float = 60):
    return subprocess.run([*KBATCH, *args], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, env=env)


@pytest.fixture()
def lab_env(tmp_path):
    return {**os.environ, "KBATCH_LAB_STATE": str(tmp_path / "lab.json")}


def start_lab(env: dict[str, str], *args: str) -> tuple[subprocess.Popen[str], str, list[int]]:
    # Ctrl-C as at a person's terminal: a shell's background job (a CI script's `cmd &`)
    # inherits SIGINT ignored, and `lab up` leaves Python's Ctrl-C handling as it finds it
    proc = subprocess.Popen([*KBATCH, "lab", "up", *args], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stdout is not None
    bootstrap = proc.stdout.readline().strip()  # printed once every broker answers
    assert bootstrap, proc.stderr.read() if proc.stderr else ""
    brokers = [p for p in child_pids(proc.pid)
               if "tansu" in Path(f"/proc/{p}/cmdline").read_text(errors="replace")]
    return proc, bootstrap, brokers


def test_lab_up_status_down(lab_env):
    proc, bootstrap, brokers = start_lab(lab_env, "--brokers", "3", "--rtt-ms", "1")
    try:
        assert len(bootstrap.split(",")) == 3 and len(brokers) == 3
        status = run_kbatch(lab_env, "lab", "status")
        assert status.returncode == 0 and status.stdout.strip() == bootstrap
        again = run_kbatch(lab_env, "lab", "up", "--brokers", "2")
        assert again.returncode == 1 and "already running" in again.stderr
        down = run_kbatch(lab_env, "lab", "down")
        assert down.returncode == 0, down.stderr
        _, stderr = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and "Lab stopped" in stderr and "Traceback" not in stderr
    time.sleep(0.3)
    assert not any(alive(pid) for pid in brokers), "a broker outlived `kbatch lab down`"
    assert not Path(lab_env["KBATCH_LAB_STATE"]).exists()
    assert run_kbatch(lab_env, "lab", "status").returncode == 1
    assert "No lab is running" in run_kbatch(lab_env, "lab", "down").stderr


def test_ctrl_c_stops_the_lab_and_its_brokers(lab_env):
    proc, _, brokers = start_lab(lab_env, "--brokers", "2")
    try:
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and "Traceback" not in stderr
    time.sleep(0.3)
    assert brokers and not any(alive(pid) for pid in brokers)
    assert not Path(lab_env["KBATCH_LAB_STATE"]).exists()


def test_produce_and_compare_on_an_embedded_lab(tmp_path, lab_env):
    out = tmp_path / "run.json"
    proc = run_kbatch(lab_env, "produce", "--brokers", "3", "--rtt-ms", "1", "--partitions",
                      "9", "--rate", "2000", "--duration", "1", "-X", "linger.ms=20",
                      "--no-progress", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    assert result["messages"]["acknowledged"] == 2000 and result["messages"]["failed"] == 0
    assert set(result["requests_by_broker"]) == {"1", "2", "3"}
    assert "lab of 3 embedded Tansu brokers" in result["broker"]
    assert result["rtt"]["p50_ms"] >= 1.0  # the emulated round trip is in every request

    out = tmp_path / "cmp.json"
    proc = run_kbatch(lab_env, "compare-modes", "--brokers", "2", "--modes", "partition,none",
                      "--partitions", "4", "--rate", "1000", "--duration", "1", "--no-progress",
                      "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    for run in json.loads(out.read_text())["runs"]:
        assert set(run["requests_by_broker"]) == {"1", "2"}


@pytest.mark.parametrize(("args", "code", "fragment"), [
    (["produce", "--brokers", "0"], 2, "a lab has 1 to 16 brokers"),
    (["produce", "--brokers", "17"], 2, "a lab has 1 to 16 brokers"),
    (["produce", "--brokers", "3", "--bootstrap-servers", "127.0.0.1:1"], 2,
     "cannot be combined with --bootstrap-servers"),
    (["compare-modes", "--rtt-ms", "2", "--jitter-ms", "3"], 2, "must be between 0"),
    (["lab", "up", "--brokers", "0"], 2, "a lab has 1 to 16 brokers"),
    (["lab", "up", "--base-port", "65535", "--brokers", "2"], 2, "ports go from 1 to 65535"),
])
def test_bad_lab_input_is_one_clear_message(lab_env, args, code, fragment):
    proc = run_kbatch(lab_env, *args, "--messages", "5") if args[0] != "lab" else run_kbatch(
        lab_env, *args)
    assert proc.returncode == code, proc.stderr
    assert fragment in proc.stderr and "Traceback" not in proc.stderr


def test_lab_up_on_a_taken_port_names_it(lab_env):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        proc = run_kbatch(lab_env, "lab", "up", "--brokers", "1", "--base-port", str(port))
    assert proc.returncode == 1
    assert f"Port {port} on 127.0.0.1 is already in use" in proc.stderr
    assert "Traceback" not in proc.stderr


def _produce(env: dict[str, str], bootstrap: str, topic: str, out: Path) -> dict:
    proc = run_kbatch(env, "produce", "--bootstrap-servers", bootstrap, "--topic", topic,
                      "--partitions", "3", "--messages", "300", "--rate", "1000",
                      "--no-progress", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text())


def test_a_lab_keeps_serving_when_a_node_dies_and_restarts_it(tmp_path, lab_env):
    proc, bootstrap, brokers = start_lab(lab_env, "--brokers", "3")
    try:
        before = _produce(lab_env, bootstrap, "before", tmp_path / "before.json")
        assert before["messages"]["acknowledged"] == 300
        state = json.loads(Path(lab_env["KBATCH_LAB_STATE"]).read_text())
        node2 = next(n for n in state["nodes"] if n["node_id"] == 2)
        assert node2["pid"] in brokers
        os.kill(node2["pid"], signal.SIGKILL)  # the process the lab started for node 2
        deadline = time.monotonic() + 10
        while True:
            status = run_kbatch(lab_env, "lab", "status")
            if "DOWN" in status.stderr or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert status.returncode == 0 and status.stdout.strip() == bootstrap
        assert "node 2:" in status.stderr and "DOWN" in status.stderr.split("node 2:")[1]
        assert "DOWN" not in status.stderr.split("node 2:")[0], status.stderr
        assert proc.poll() is None, "the lab stopped when one node died"

        restart = run_kbatch(lab_env, "lab", "restart", "2", "--timeout", "30")
        assert restart.returncode == 0, restart.stderr
        assert "running again" in restart.stderr
        status = run_kbatch(lab_env, "lab", "status")
        assert "DOWN" not in status.stderr and status.stderr.count("running (Tansu pid") == 3
        after = _produce(lab_env, bootstrap, "after", tmp_path / "after.json")
        assert after["messages"]["acknowledged"] == 300 and after["messages"]["failed"] == 0
        assert set(after["requests_by_broker"]) == {"1", "2", "3"}

        again = run_kbatch(lab_env, "lab", "restart", "2")
        assert again.returncode == 0 and "nothing to restart" in again.stderr
        bad = run_kbatch(lab_env, "lab", "restart", "9")
        assert bad.returncode == 2 and "No node 9" in bad.stderr
        down = run_kbatch(lab_env, "lab", "down")
        assert down.returncode == 0, down.stderr
        _, stderr = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "node 2 (Tansu) exited" in stderr and "node 2 restarted" in stderr
    assert "Traceback" not in stderr
