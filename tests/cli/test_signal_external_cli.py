"""SIGINT during a run against --bootstrap-servers (issue 49): kbatch started no broker,
so it must not say "the broker was shut down"; it says it left the cluster as it was."""

from __future__ import annotations

import signal
import subprocess
import time

import pytest

from tests.cli.test_produce_cli import KBATCH, ROOT

pytestmark = pytest.mark.broker


def test_sigint_on_an_external_cluster_does_not_claim_a_shutdown(tansu_broker):
    proc = subprocess.Popen([*KBATCH, "produce", "--bootstrap-servers", tansu_broker.bootstrap,
                             "--partitions", "2", "--rate", "500", "--duration", "60",
                             "--report-interval", "0.5", "--no-progress"],
                            cwd=ROOT, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        assert proc.stderr is not None
        began, seen = time.monotonic(), []
        while time.monotonic() - began < 60:  # "Producing to ...": the run is under way
            seen.append(proc.stderr.readline())
            if not seen[-1] or "Producing to" in seen[-1]:
                break
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=30)
        stderr = "".join(seen) + stderr
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    assert "Interrupted by SIGINT" in stderr
    assert "the broker was shut down" not in stderr
    assert "left as it was" in " ".join(stderr.split())
    assert tansu_broker.pid is not None  # the user's cluster still runs
