"""Exit codes of runs whose messages did not all get through: 3, or 0 with
--allow-failures (still reported); compare-modes --verify verifies every run."""

from __future__ import annotations

import json
import os
import signal
import subprocess

import pytest
from click.testing import CliRunner

from cli.main import cli
from producer_core.brokers.embedded import EmbeddedBroker
from tests.cli.test_produce_cli import KBATCH, ROOT
from tests.integration.test_faults_verify import PARTITIONS, wait_until_written

pytestmark = pytest.mark.broker


@pytest.mark.parametrize("allow,code", [(False, 3), (True, 0)])
def test_hung_broker_run_exits_3_unless_failures_are_allowed(tmp_path, allow, code) -> None:
    """The broker hangs (SIGSTOP) a moment into the run: delivery.timeout.ms=2000 ends
    every message still open as failed or unknown."""
    json_path = tmp_path / "run.json"
    topic = f"exit-codes-{int(allow)}"
    broker = EmbeddedBroker()
    broker.start()
    proc = subprocess.Popen(
        [*KBATCH, "produce", "--bootstrap-servers", broker.bootstrap, "--topic", topic,
         "--partitions", str(PARTITIONS), "--rate", "2000", "--duration", "4",
         "-X", "delivery.timeout.ms=2000", "--json", str(json_path), "--no-progress",
         *(["--allow-failures"] if allow else [])],
        cwd=ROOT, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    pid = broker.pid
    assert pid is not None
    try:
        wait_until_written(broker.bootstrap, topic, records=500)
        os.kill(pid, signal.SIGSTOP)
        _, stderr = proc.communicate(timeout=60)
    finally:
        os.kill(pid, signal.SIGCONT)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        broker.stop()
    run = json.loads(json_path.read_text())
    assert run["messages"]["failed"] + run["messages"]["unknown"] > 0, run["messages"]
    assert proc.returncode == code, stderr
    assert "have an unknown outcome" in stderr
    assert ("allowed by --allow-failures" in stderr) is allow


def test_compare_modes_verifies_every_run(tmp_path) -> None:
    json_path = tmp_path / "cmp.json"
    result = CliRunner().invoke(cli, [
        "compare-modes", "--modes", "partition,java", "--partitions", "3", "--rate", "2000",
        "--messages", "1000", "--verify", "--json", str(json_path), "--no-progress"])
    assert result.exit_code == 0, result.output
    document = json.loads(json_path.read_text())
    assert document["complete"] is True
    for run in document["runs"]:
        verify = run["verify"]
        assert verify["acknowledged"] == verify["present"] == 1000
        assert verify["missing"] == verify["duplicated"] == verify["out_of_order"] == 0
    assert "mode java, round 1" in result.output
