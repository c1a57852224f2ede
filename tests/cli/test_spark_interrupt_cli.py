"""SIGINT while `--runner spark` starts (issue 49): honoured at once. The stopper only set
its event then, and the Spark runner, which cannot take the event, ran the whole workload
before kbatch exited (56 s for a 20 s run); now the start is interrupted, no run begins."""

from __future__ import annotations

import signal
import subprocess
import time

from tests.cli.test_produce_cli import KBATCH, ROOT
from tests.spark_support import spark_test


@spark_test
def test_sigint_while_spark_starts_ends_before_any_run():
    proc = subprocess.Popen([*KBATCH, "produce", "--runner", "spark", "--workers", "2",
                             "--rate", "500", "--duration", "20", "--no-progress"],
                            cwd=ROOT, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        assert proc.stderr is not None
        lines = []
        while True:
            lines.append(proc.stderr.readline())
            if not lines[-1] or "Starting Spark" in lines[-1]:
                break
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stderr = "".join(lines) + stderr
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "Interrupted by SIGINT" in stderr
    assert "stopped producing after" not in stderr, "the workload ran after the signal"
