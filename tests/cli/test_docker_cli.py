"""`--broker docker` end to end, as a user runs it: Apache Kafka in containers on a network
of the run's own, faults only containers give, and nothing left behind on any exit.

These run wherever a Docker engine answers (.ci/run installs and starts one); without one
they are skipped with the reason, and under CI=true they fail (tests.container_support).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from producer_core.brokers.docker import LABEL_MANAGED, LABEL_OWNER, sweep_stale
from producer_core.brokers.kafka_dist import KAFKA_VERSION
from producer_core.results.results_io import validate_document
from tests.cli.test_produce_cli import KBATCH, ROOT
from tests.container_support import require_docker

pytestmark = [pytest.mark.docker, pytest.mark.timeout(900)]


@pytest.fixture(autouse=True)
def docker_engine() -> None:
    require_docker()


def owned_by(pid: int) -> tuple[list[str], list[str]]:
    """Names of the containers and networks a kbatch process labelled as its own."""
    label = f"{LABEL_OWNER}={pid}"
    containers = subprocess.run(["docker", "ps", "-a", "-q", "--filter", f"label={label}"],
                                capture_output=True, text=True, check=True).stdout.split()
    networks = subprocess.run(["docker", "network", "ls", "-q", "--filter", f"label={label}"],
                              capture_output=True, text=True, check=True).stdout.split()
    return containers, networks


def produce(*args: str, timeout: float = 600) -> tuple[subprocess.CompletedProcess[str], int]:
    proc = subprocess.Popen([*KBATCH, "produce", "--broker", "docker", "--no-progress", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    stdout, stderr = proc.communicate(timeout=timeout)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr), proc.pid


def test_three_containers_every_message_read_back_nothing_left(tmp_path):
    out = tmp_path / "r.json"
    done, pid = produce("--brokers", "3", "--partitions", "12", "--rate", "1000",
                        "--duration", "5", "--verify", "--json", str(out))
    assert done.returncode == 0, done.stderr
    document = json.loads(out.read_text())
    validate_document(document)
    assert document["broker_implementation"] == "docker"
    assert document["broker_version"] == KAFKA_VERSION
    assert KAFKA_VERSION in document["broker_image"]
    assert document["broker_image"] in document["broker"]
    assert document["messages"]["acknowledged"] == 5000
    assert document["verify"]["missing"] == 0 and document["verify"]["duplicated"] == 0
    assert set(document["requests_by_broker"]) == {"1", "2", "3"}  # leaders on all three
    kafka = document["broker_cost"]["kafka"]  # the JMX exporter in each container
    assert kafka["available"] is True, document["broker_cost"]
    assert kafka["produce_requests_run"] == document["requests_sent"] > 0
    assert owned_by(pid) == ([], [])


ISOLATION = ["--brokers", "3", "--partitions", "6", "--rate", "500", "--duration", "16",
             "--replication-factor", "3", "--verify", "--report-interval", "1",
             "--fault", "at=3s isolate=leader:0 for=8s"]


def test_an_isolated_leader_loses_and_duplicates_nothing_with_acks_all(tmp_path):
    out = tmp_path / "r.json"
    done, pid = produce(*ISOLATION, "--topic-config", "min.insync.replicas=2",
                        "-X", "acks=all", "-X", "enable.idempotence=true",
                        "--json", str(out))
    assert done.returncode == 0, done.stderr
    document = json.loads(out.read_text())
    verify = document["verify"]
    assert verify["missing"] == 0 and verify["duplicated"] == 0
    assert document["messages"]["acknowledged"] == document["messages"]["intended"] == 8000
    (fault,) = document["faults"]
    assert fault["action"] == "isolate" and fault["target"] == "leader:0"
    assert fault["node"] in (1, 2, 3) and fault["error"] is None
    assert 2.5 < fault["began_s"] < 6 and fault["ended_s"] - fault["began_s"] == \
        pytest.approx(8, abs=1.0)
    assert f"FAULT: isolate node {fault['node']} (leader of p0)" in done.stderr
    assert owned_by(pid) == ([], [])


def test_with_acks_1_the_isolated_leaders_loss_is_reported(tmp_path):
    out = tmp_path / "r.json"
    done, _ = produce(*ISOLATION, "-X", "acks=1", "-X", "enable.idempotence=false",
                      "--json", str(out))
    assert done.returncode == 4, done.stderr  # acknowledged messages missing
    document = json.loads(out.read_text())
    assert document["verify"]["missing"] > 0
    assert "acknowledged messages missing" in done.stderr


def test_sigterm_removes_the_containers_and_the_network():
    proc = subprocess.Popen([*KBATCH, "produce", "--broker", "docker", "--partitions", "2",
                             "--rate", "100", "--duration", "600", "--no-progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT)
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.startswith("Producing to"):
                break
        containers, networks = owned_by(proc.pid)
        assert len(containers) == 1 and len(networks) == 1
        inspect = json.loads(subprocess.run(["docker", "inspect", containers[0]],
                                            capture_output=True, text=True, check=True).stdout)
        bindings = inspect[0]["HostConfig"]["PortBindings"]
        # the client port and the JMX exporter's /metrics, each on loopback only
        assert sorted(bindings) == ["9092/tcp", "9404/tcp"]
        assert all(b["HostIp"] == "127.0.0.1" for port in bindings.values() for b in port)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert owned_by(proc.pid) == ([], [])


def test_leftovers_of_a_killed_kbatch_are_removed_and_live_ones_kept():
    import docker

    client = docker.from_env()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    labels = {LABEL_MANAGED: "true", LABEL_OWNER: str(dead.pid)}
    live = {LABEL_MANAGED: "true", LABEL_OWNER: str(os.getpid())}
    stale = client.networks.create(f"kbatch-test-stale-{dead.pid}", labels=labels)
    kept = client.networks.create(f"kbatch-test-live-{os.getpid()}-{time.time_ns()}",
                                  labels=live)
    try:
        removed = sweep_stale(client)
        assert stale.name in removed and kept.name not in removed
        names = [n.name for n in client.networks.list()]
        assert stale.name not in names and kept.name in names
    finally:
        kept.remove()


def test_without_a_docker_engine_one_paragraph_and_exit_2():
    env = {**os.environ, "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    done = subprocess.run([*KBATCH, "produce", "--broker", "docker", "--duration", "1"],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert done.returncode == 2
    assert "--broker docker needs a Docker engine" in done.stderr
    assert "Traceback" not in done.stderr


def test_lab_up_docker_serves_until_lab_down(tmp_path):
    env = {**os.environ, "KBATCH_LAB_STATE": str(tmp_path / "lab.json")}
    up = subprocess.Popen([*KBATCH, "lab", "up", "--broker", "docker", "--brokers", "1"],
                          cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)
    try:
        assert up.stdout is not None
        bootstrap = up.stdout.readline().strip()
        assert bootstrap.startswith("127.0.0.1:"), up.stderr.read() if up.stderr else ""
        containers, _ = owned_by(up.pid)
        assert len(containers) == 1
        status = subprocess.run([*KBATCH, "lab", "status"], capture_output=True, text=True,
                                env=env, cwd=ROOT, timeout=60)
        assert status.returncode == 0 and status.stdout.strip() == bootstrap
        assert "Apache Kafka (Docker)" in status.stderr
        produced = subprocess.run(
            [*KBATCH, "produce", "--bootstrap-servers", bootstrap, "--partitions", "2",
             "--rate", "200", "--duration", "1", "--verify", "--no-progress"],
            capture_output=True, text=True, cwd=ROOT, timeout=300)
        assert produced.returncode == 0, produced.stderr
        down = subprocess.run([*KBATCH, "lab", "down", "--timeout", "60"], capture_output=True,
                              text=True, env=env, cwd=ROOT, timeout=120)
        assert down.returncode == 0, down.stderr
        up.wait(timeout=60)
    finally:
        if up.poll() is None:
            up.kill()
    assert owned_by(up.pid) == ([], [])


def test_pause_kill_and_restart_in_one_run_nothing_lost(tmp_path):
    out = tmp_path / "r.json"
    done, pid = produce("--brokers", "3", "--partitions", "6", "--rate", "300", "--duration",
                        "22", "--replication-factor", "3", "--topic-config",
                        "min.insync.replicas=2", "-X", "acks=all", "--verify",
                        "--fault", "at=2s pause=node:1 for=2s",
                        "--fault", "at=4s kill=node:2 for=2s",
                        "--fault", "at=14s restart=node:3", "--json", str(out))
    assert done.returncode == 0, done.stderr
    document = json.loads(out.read_text())
    assert document["verify"]["missing"] == 0 and document["verify"]["duplicated"] == 0
    pause, kill, restart = document["faults"]
    assert [f["node"] for f in (pause, kill, restart)] == [1, 2, 3]
    assert all(f["error"] is None and f["ended_s"] is not None for f in (pause, kill, restart))
    assert pause["ended_s"] - pause["began_s"] == pytest.approx(2, abs=0.8)
    assert kill["ended_s"] - kill["began_s"] >= 2  # started again, after waiting to serve
    assert owned_by(pid) == ([], [])


def test_an_image_that_cannot_be_had_is_refused_with_exit_2():
    done = subprocess.run([*KBATCH, "produce", "--broker", "docker", "--duration", "1",
                           "--kafka-image", "kbatch-test/no-such-kafka:0"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 2, done.stderr
    assert "--kafka-image kbatch-test/no-such-kafka:0 is not on this machine" in done.stderr
    assert "Traceback" not in done.stderr
