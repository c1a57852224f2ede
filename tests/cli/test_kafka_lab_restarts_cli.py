"""`kbatch lab restart` on a 3-node Apache Kafka lab with two nodes killed (issue 49): each
is restarted in turn within the documented --timeout (the first used to fail after a fixed
60 s waiting for Metadata listing all 3 nodes, and its stale error failed the next restart
at once), and a restarted node stays watched (killed again, `lab status` says DOWN)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.cli.test_kafka_cli import jvms_of, kbatch_with_env
from tests.cli.test_produce_cli import KBATCH, ROOT
from tests.kafka_fixtures import skip_kafka_reason

pytestmark = pytest.mark.skipif(skip_kafka_reason() is not None,
                                reason=skip_kafka_reason() or "")


def _node(env: dict[str, str], node_id: int) -> dict:
    state = json.loads(Path(env["KBATCH_LAB_STATE"]).read_text())
    return next(n for n in state["nodes"] if n["node_id"] == node_id)


def _wait_down(env: dict[str, str], *node_ids: int) -> str:
    deadline = time.monotonic() + 60
    while True:
        status = kbatch_with_env(env, "lab", "status", timeout=30).stderr
        lines = {n: status.split(f"node {n}:")[1].split("\n")[0] for n in node_ids}
        if all("DOWN" in line for line in lines.values()) or time.monotonic() > deadline:
            return status
        time.sleep(0.5)


@pytest.mark.timeout(900)
def test_two_of_three_nodes_killed_and_restarted_one_after_the_other(tmp_path):
    env = {**os.environ, "KBATCH_LAB_STATE": str(tmp_path / "lab.json")}
    up = subprocess.Popen([*KBATCH, "lab", "up", "--broker", "kafka", "--brokers", "3"],
                          cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)
    try:
        assert up.stdout is not None
        assert up.stdout.readline().strip(), up.stderr.read() if up.stderr else ""
        for node_id in (2, 3):
            pid = _node(env, node_id)["pid"]
            assert pid in jvms_of(up.pid)
            os.kill(pid, 9)
        status = _wait_down(env, 2, 3)
        assert status.count("DOWN") == 2, status
        for node_id in (2, 3):
            began = time.monotonic()
            restart = kbatch_with_env(env, "lab", "restart", str(node_id), "--timeout", "120",
                              timeout=200)
            assert restart.returncode == 0, restart.stderr
            assert "running again" in restart.stderr, restart.stderr
            assert time.monotonic() - began < 130
        status = kbatch_with_env(env, "lab", "status", timeout=30).stderr
        assert "DOWN" not in status and status.count("running (") == 3, status
        os.kill(_node(env, 2)["pid"], 9)  # the restarted node is still watched
        status = _wait_down(env, 2)
        assert "DOWN" in status.split("node 2:")[1].split("\n")[0], status
        down = kbatch_with_env(env, "lab", "down", timeout=90)
        assert down.returncode == 0, down.stderr
        _, stderr = up.communicate(timeout=90)
    finally:
        if up.poll() is None:
            up.kill()
            up.wait()
    assert stderr.count("node 2 (Kafka) exited") == 2 and "node 3 restarted" in stderr
    assert "could not be restarted" not in stderr and "Traceback" not in stderr
