"""A signal while `--broker kafka` starts (issue 49): honoured at once, not once Kafka has
started (it took 11.5 s): exit 128 + the signal, one line, no JVM left behind, and the run
never begins."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.cli.test_produce_cli import KBATCH, ROOT, alive, child_pids
from tests.kafka_fixtures import skip_kafka_reason

pytestmark = pytest.mark.skipif(skip_kafka_reason() is not None,
                                reason=skip_kafka_reason() or "")


@pytest.mark.timeout(300)
@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_while_kafka_starts_stops_the_start(sig, code):
    proc = subprocess.Popen([*KBATCH, "produce", "--broker", "kafka", "--messages", "50",
                             "--no-progress"], cwd=ROOT, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    jvms: set[int] = set()
    try:
        assert proc.stderr is not None
        lines = []
        while True:  # "Starting Apache Kafka ...": the nodes are being launched
            lines.append(proc.stderr.readline())
            if not lines[-1] or "Starting Apache Kafka" in lines[-1]:
                break
        deadline = time.monotonic() + 60
        while not jvms and time.monotonic() < deadline:  # a node's JVM exists
            jvms = {p for p in child_pids(proc.pid) if "kafka.Kafka" in
                    Path(f"/proc/{p}/cmdline").read_text(errors="replace")}
            time.sleep(0.05)
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stderr = "".join(lines) + stderr
    assert proc.returncode == code, stderr
    assert "Traceback" not in stderr and f"Interrupted by {sig.name}" in stderr
    assert "Started Apache Kafka" not in stderr and "Producing to" not in stderr, stderr
    assert jvms and not any(alive(pid) for pid in jvms), "a Kafka JVM outlived kbatch"
