"""SIGINT and SIGTERM during `produce` / `compare-modes`, as a user (or CI) sends them:
partial results written and marked incomplete, the embedded broker stopped, 130 / 143."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from producer_core.results.results_io import validate_document
from tests.cli.test_produce_cli import KBATCH, ROOT, alive, child_pids

pytestmark = pytest.mark.broker


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([*KBATCH, *args, "--no-progress"], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def wait_for_broker(proc: subprocess.Popen[str]) -> list[int]:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        brokers = [p for p in child_pids(proc.pid)
                   if "tansu" in Path(f"/proc/{p}/cmdline").read_text(errors="replace")]
        if brokers:
            return brokers
        time.sleep(0.2)
    raise AssertionError("the embedded broker did not start")


def interrupt(proc: subprocess.Popen[str], *signals: signal.Signals, after_s: float = 3.0,
              gap_s: float = 0.0) -> tuple[list[int], str, str, float]:
    """Send `signals` once the run is under way; return brokers, output, seconds to exit."""
    try:
        brokers = wait_for_broker(proc)
        time.sleep(after_s)
        sent = time.monotonic()
        for sig in signals:
            proc.send_signal(sig)
            time.sleep(gap_s)
        stdout, stderr = proc.communicate(timeout=30)
        return brokers, stdout, stderr, time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def consistent(run: dict) -> None:
    m = run["messages"]
    assert m["sent"] == (m["acknowledged"] + m["failed"] + m["unknown"]
                         + m["sent_unacknowledged"] + m["discarded"])
    assert 0 < m["acknowledged"] < m["intended"]


def broker_gone(brokers: list[int]) -> None:
    deadline = time.monotonic() + 5
    while any(alive(pid) for pid in brokers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(pid) for pid in brokers), "the broker outlived kbatch"


@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signal_writes_partial_results_and_stops_the_broker(tmp_path, sig, code) -> None:
    json_path, out_dir = tmp_path / "run.json", tmp_path / "out"
    proc = start("produce", "--partitions", "4", "--rate", "2000", "--duration", "60",
                 "--verify", "--json", str(json_path), "--out", str(out_dir))
    brokers, stdout, stderr, took = interrupt(proc, sig)
    assert proc.returncode == code, stderr
    assert "Traceback" not in stderr
    assert f"Interrupted by {sig.name}" in stderr and "partial results written" in stderr
    assert took < 10  # the grace is 2 s; a 60 s run does not go on
    run = json.loads(json_path.read_text())
    assert run["complete"] is False
    consistent(run)
    assert "verify" not in run  # a stopped run is not read back
    kept = json.loads((out_dir / "results.json").read_text())
    validate_document(kept)
    assert kept["complete"] is False
    assert kept["messages"]["acknowledged"] == run["messages"]["acknowledged"]
    assert "stopped before its end" in stdout
    broker_gone(brokers)


def test_compare_modes_signal_keeps_the_runs_done(tmp_path) -> None:
    json_path = tmp_path / "cmp.json"
    proc = start("compare-modes", "--modes", "partition,java", "--partitions", "4",
                 "--rate", "2000", "--duration", "4", "--json", str(json_path))
    brokers, _, stderr, _ = interrupt(proc, signal.SIGTERM, after_s=6.0)
    assert proc.returncode == 143, stderr
    assert "Traceback" not in stderr
    document = json.loads(json_path.read_text())
    validate_document(document)
    assert document["complete"] is False
    # mode partition (4 s) finished; java was cut short; nothing ran after the signal
    assert [run["mode"] for run in document["runs"]] == ["partition", "java"]
    assert document["runs"][0].get("complete", True) is True
    assert document["runs"][1]["complete"] is False
    for run in document["runs"]:
        m = run["messages"]
        assert m["sent"] == m["acknowledged"] + m["failed"] + m["unknown"]
    broker_gone(brokers)


def test_second_ctrl_c_exits_at_once_and_still_stops_the_broker(tmp_path) -> None:
    json_path = tmp_path / "run.json"
    # a hung broker keeps responses from coming, so the first Ctrl-C's grace would run out
    proc = start("produce", "--partitions", "4", "--rate", "2000", "--duration", "60",
                 "--json", str(json_path))
    brokers: list[int] = []
    try:
        brokers = wait_for_broker(proc)
        time.sleep(2.0)
        os.kill(brokers[0], signal.SIGSTOP)
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.3)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        for pid in brokers:
            if alive(pid):
                os.kill(pid, signal.SIGCONT)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    assert "stopped at once" in stderr
    assert "Traceback" not in stderr
    assert took < 8
    assert not json_path.exists()  # no results: the user asked to stop at once
    broker_gone(brokers)


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
@pytest.mark.parametrize("after_s", [0.1, 0.4, 0.9])
def test_a_signal_during_start_up_is_one_line_and_its_code(sig, code, after_s) -> None:
    """While kbatch imports its modules and checks its input (before any run): the
    documented code (128 + signal) and one line, never a KeyboardInterrupt traceback."""
    proc = start("produce", "--messages", "5")
    time.sleep(after_s)
    proc.send_signal(sig)
    try:
        _, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "Traceback" not in stderr, stderr
    if proc.returncode != 0:  # (a very fast machine may have finished the 5 messages)
        # 0.1 s in, a loaded machine may still be starting the interpreter, before any
        # handler can exist: killed by the signal, which a shell reports as the same code
        killed_before_python_ran = after_s < 0.4 and proc.returncode == -sig
        assert proc.returncode == code or killed_before_python_ran, stderr


def test_sigterm_on_a_kafka_broker_run_keeps_partial_results_and_exits_143(tmp_path) -> None:
    """SIGTERM is 143 whichever broker runs: with --broker kafka the cluster's own SIGTERM
    handling used to replace the run's (exit 130, no partial results)."""
    from producer_core.brokers.kafka_target import sigterm_as_interrupt

    seen: list[object] = []

    def mine(signum, frame):  # a run's StopOnSignal-like handler
        seen.append(signum)

    previous = signal.signal(signal.SIGTERM, mine)
    try:
        with sigterm_as_interrupt():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)
        assert seen == [signal.SIGTERM]  # the run's handler kept SIGTERM
    finally:
        signal.signal(signal.SIGTERM, previous)
    from producer_core.errors import Interrupted
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        with pytest.raises(Interrupted) as info, sigterm_as_interrupt():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)
        assert 128 + info.value.signum == 143
    finally:
        signal.signal(signal.SIGTERM, previous)


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_during_a_kafka_java_run_keeps_partial_results(tmp_path, sig, code) -> None:
    """The Java producer's run stops like the engine's: what it was handed settles within
    a grace, partial results are written (complete: false), 128 + the signal. It used to
    end in a CancelledError traceback and exit 1."""
    out = tmp_path / "kj.json"
    proc = start("produce", "--mode", "kafka-java", "--duration", "60", "--rate", "500",
                 "--json", str(out))
    try:
        wait_for_broker(proc)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not any(  # the JVM runs: messages flow
                "KbatchProducerDriver" in Path(f"/proc/{p}/cmdline").read_text(errors="replace")
                for p in child_pids(proc.pid) if Path(f"/proc/{p}").exists()):
            time.sleep(0.2)
        time.sleep(4)
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "Traceback" not in stderr, stderr
    assert proc.returncode == code, stderr
    document = json.loads(out.read_text())
    validate_document(document)
    assert document["complete"] is False and document["mode"] == "kafka-java"
    assert document["messages"]["acknowledged"] > 0


def test_sigterm_during_a_sweep_exits_143_and_keeps_the_finished_cells(tmp_path) -> None:
    out = tmp_path / "sweep"
    proc = start("sweep", "--modes", "partition", "--duration", "1", "--rate", "200",
                 "--out", str(out))
    try:
        wait_for_broker(proc)
        time.sleep(3)
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "Traceback" not in stderr
    assert proc.returncode == 143, stderr  # was -15: killed without any cleanup
    assert "--resume" in stderr
