"""`--broker kafka` end to end, as a user runs it: results name the broker and its version,
and `kbatch lab up --broker kafka` with a round trip serves any client until `lab down`."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from producer_core.brokers.kafka import DIR_PREFIX
from producer_core.brokers.kafka_dist import KAFKA_VERSION
from producer_core.results.results_io import validate_document
from tests.cli.test_produce_cli import KBATCH, ROOT, alive, child_pids
from tests.kafka_fixtures import skip_kafka_reason

pytestmark = pytest.mark.skipif(skip_kafka_reason() is not None,
                                reason=skip_kafka_reason() or "")


def jvms_of(pid: int) -> list[int]:
    return [p for p in child_pids(pid)
            if "kafka.Kafka" in Path(f"/proc/{p}/cmdline").read_text(errors="replace")]


@pytest.mark.timeout(900)
def test_produce_on_kafka_names_the_broker_and_its_version(tmp_path):
    out = tmp_path / "r.json"
    proc = subprocess.Popen(
        [*KBATCH, "produce", "--broker", "kafka", "--partitions", "6", "--rate", "1000",
         "--duration", "1", "--json", str(out), "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    _, stderr = proc.communicate(timeout=600)  # a first run also fetches the jars
    assert proc.returncode == 0, stderr
    assert f"Started Apache Kafka {KAFKA_VERSION}" in stderr
    document = json.loads(out.read_text())
    validate_document(document)
    assert document["broker_implementation"] == "kafka"
    assert document["broker_version"] == KAFKA_VERSION
    assert document["broker"].startswith(f"Apache Kafka {KAFKA_VERSION}")
    assert document["messages"]["acknowledged"] == 1000
    assert not list(Path(tempfile.gettempdir()).glob(f"{DIR_PREFIX}{proc.pid}-*"))


def test_lab_up_kafka_with_a_round_trip_then_down(tmp_path):
    env = {**os.environ, "KBATCH_LAB_STATE": str(tmp_path / "lab.json")}
    up = subprocess.Popen([*KBATCH, "lab", "up", "--broker", "kafka", "--brokers", "1",
                           "--rtt-ms", "30"], cwd=ROOT, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert up.stdout is not None
        bootstrap = up.stdout.readline().strip()
        assert bootstrap, up.stderr.read() if up.stderr else ""
        jvms = jvms_of(up.pid)
        assert len(jvms) == 1
        status = subprocess.run([*KBATCH, "lab", "status"], capture_output=True, text=True,
                                cwd=ROOT, env=env, timeout=30)
        assert status.stdout.strip() == bootstrap and "Apache Kafka" in status.stderr
        out = tmp_path / "run.json"
        run = subprocess.run(
            [*KBATCH, "produce", "--bootstrap-servers", bootstrap, "--partitions", "3",
             "--rate", "500", "--duration", "1", "--json", str(out), "--no-progress"],
            capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
        assert run.returncode == 0, run.stderr
        document = json.loads(out.read_text())
        assert document["messages"]["acknowledged"] == 500
        assert document["rtt"]["p50_ms"] >= 30  # every response went through the relay
        down = subprocess.run([*KBATCH, "lab", "down"], capture_output=True, text=True,
                              cwd=ROOT, env=env, timeout=60)
        assert down.returncode == 0, down.stderr
        _, stderr = up.communicate(timeout=60)
    finally:
        if up.poll() is None:
            up.kill()
            up.wait()
    assert up.returncode == 0 and "Traceback" not in stderr
    deadline = time.monotonic() + 10
    while any(alive(p) for p in jvms) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(p) for p in jvms), "a Kafka JVM outlived `kbatch lab down`"
    assert not list(Path(tempfile.gettempdir()).glob(f"{DIR_PREFIX}{up.pid}-*"))


def kbatch_with_env(env: dict[str, str], *args: str, timeout: float = 180):
    return subprocess.run([*KBATCH, *args], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=timeout)


@pytest.mark.timeout(900)
def test_a_kafka_lab_keeps_serving_when_a_node_dies_and_restarts_it(tmp_path):
    """Three KRaft nodes: kill node 2 by the pid the lab started, `lab status` says DOWN,
    the others keep serving, `lab restart 2` brings it back on its data (issue 35)."""
    env = {**os.environ, "KBATCH_LAB_STATE": str(tmp_path / "lab.json")}
    up = subprocess.Popen([*KBATCH, "lab", "up", "--broker", "kafka", "--brokers", "3"],
                          cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)
    try:
        assert up.stdout is not None
        bootstrap = up.stdout.readline().strip()
        assert bootstrap, up.stderr.read() if up.stderr else ""

        def produce(topic: str) -> dict:
            out = tmp_path / f"{topic}.json"
            run = kbatch_with_env(env, "produce", "--bootstrap-servers", bootstrap, "--topic",
                                  topic, "--partitions", "3", "--replication-factor", "3",
                                  "--messages", "600", "--rate", "1000", "--json", str(out),
                                  "--no-progress")
            assert run.returncode == 0, run.stderr
            return json.loads(out.read_text())

        assert produce("before")["messages"]["acknowledged"] == 600
        state = json.loads(Path(env["KBATCH_LAB_STATE"]).read_text())
        node2 = next(n for n in state["nodes"] if n["node_id"] == 2)
        assert node2["pid"] in jvms_of(up.pid)
        os.kill(node2["pid"], 9)
        deadline = time.monotonic() + 30
        while True:
            status = kbatch_with_env(env, "lab", "status", timeout=30)
            if "DOWN" in status.stderr or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert status.returncode == 0 and "DOWN" in status.stderr.split("node 2:")[1]
        assert up.poll() is None, "the lab stopped when one node died"
        restart = kbatch_with_env(env, "lab", "restart", "2", "--timeout", "150", timeout=200)
        assert restart.returncode == 0 and "running again" in restart.stderr, restart.stderr
        status = kbatch_with_env(env, "lab", "status", timeout=30)
        assert "DOWN" not in status.stderr and status.stderr.count("running (") == 3
        assert produce("after")["messages"]["acknowledged"] == 600
        down = kbatch_with_env(env, "lab", "down", timeout=90)
        assert down.returncode == 0, down.stderr
        _, stderr = up.communicate(timeout=90)
    finally:
        if up.poll() is None:
            up.kill()
            up.wait()
    assert "node 2 (Kafka) exited" in stderr and "node 2 restarted" in stderr
    assert "Traceback" not in stderr
