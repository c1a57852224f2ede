"""Real Apache Kafka (``producer_core.brokers.kafka``): a 3-node cluster whose leaders are
really spread, every mode delivering every acknowledged message, single-node faults, and
no JVM or data directory left behind on any exit path."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pytest

from producer_core.brokers.kafka import DIR_PREFIX, KafkaCluster, sweep_stale_dirs
from producer_core.brokers.kafka_dist import KAFKA_VERSION
from producer_core.config import build_settings
from producer_core.engine.drivers.engine import Delivery, run
from producer_core.engine.transport.transport import Cluster
from producer_core.workload.workload import Workload
from tests.kafka_fixtures import fresh_topic, skip_kafka_reason
from tests.readback import read_all

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(skip_kafka_reason() is not None,
                                reason=skip_kafka_reason() or "")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped by its parent) is not running
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _wait_dead(pids: list[int], timeout_s: float = 15.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return [p for p in pids if _alive(p)]


async def _leaders(bootstrap: str, topic: str, partitions: int) -> list[int]:
    cluster = Cluster(bootstrap)
    try:
        await cluster.connect()
        await cluster.ensure_topic(topic, partitions)
        view = await cluster.refresh_metadata([topic])
        return view.leaders[topic]
    finally:
        await cluster.close()


def test_three_nodes_lead_partitions_and_every_acked_message_reads_back(kafka_cluster):
    assert kafka_cluster.nodes == 3 and len(kafka_cluster.node_pids) == 3
    assert kafka_cluster.version == KAFKA_VERSION == "4.4.0"
    topic = fresh_topic("spread")
    leaders = asyncio.run(_leaders(kafka_cluster.bootstrap, topic, 12))
    assert set(leaders) == {1, 2, 3}, f"leaders not spread: {leaders}"

    deliveries: list[Delivery] = []
    workload = Workload(topic=topic, partitions=12, rate=4000, messages=4000, duration_s=None)
    results = run(workload, build_settings(mode="broker"), "broker", kafka_cluster.bootstrap,
                  deliveries=deliveries)
    document = results.to_dict()
    assert document["messages"]["acknowledged"] == 4000 and document["messages"]["failed"] == 0
    assert {int(n) for n, count in document["requests_by_broker"].items() if count} == {1, 2, 3}
    reported = {mid: (d.partition, d.base_offset + i)
                for d in deliveries for i, mid in enumerate(d.message_ids)}
    assert sorted(reported) == list(range(4000))
    found = asyncio.run(read_all(kafka_cluster.bootstrap, topic, 12, expected=4000))
    stored = Counter(mid for recs in found.values() for _, mid, _ in recs)
    assert set(stored) == set(range(4000)) and max(stored.values()) == 1
    for partition, records in found.items():
        for offset, mid, _ in records:
            assert reported[mid] == (partition, offset)
            assert leaders[partition] in (1, 2, 3)


@pytest.mark.parametrize("mode", ["partition", "java", "broker", "adaptive", "librdkafka"])
def test_every_mode_delivers_every_acknowledged_message(broker_bootstrap, mode):
    bootstrap = broker_bootstrap.bootstrap
    workload = Workload(topic=fresh_topic(f"modes-{mode}"), partitions=12, rate=4000,
                        messages=3000, duration_s=None, keys=60)
    results = run(workload, build_settings(mode=mode), mode, bootstrap)
    document = results.to_dict()
    acked = document["messages"]["acknowledged"]
    assert acked == 3000 and document["messages"]["failed"] == 0
    found = asyncio.run(read_all(bootstrap, workload.topic, 12, expected=acked))
    stored = Counter(mid for recs in found.values() for _, mid, _ in recs)
    assert set(stored) == set(range(3000)) and max(stored.values()) == 1


def test_a_killed_node_restarts_and_rejoins(kafka_cluster):
    before = kafka_cluster.node_pids
    kafka_cluster.kill_node(3)
    assert not _alive(before[3]) and set(kafka_cluster.node_pids) == {1, 2}
    kafka_cluster.start_node(3)
    after = kafka_cluster.node_pids
    assert set(after) == {1, 2, 3} and after[3] != before[3]
    assert after[1] == before[1] and after[2] == before[2]
    topic = fresh_topic("rejoined")
    assert set(asyncio.run(_leaders(kafka_cluster.bootstrap, topic, 9))) == {1, 2, 3}


def test_stop_leaves_no_process_and_no_data_dir():
    cluster = KafkaCluster(nodes=1)
    with cluster:
        pids, root = cluster.pids, cluster.data_root
        assert len(pids) == 1 and root is not None and root.is_dir()
        assert root.name.startswith(f"{DIR_PREFIX}{os.getpid()}-")
        assert cluster.start_time_s is not None and cluster.start_time_s > 0
    assert _wait_dead(pids, 1.0) == []
    assert not root.exists() and cluster.pids == [] and cluster.data_root is None
    cluster.stop()  # idempotent


_CHILD = """
import sys, time
from producer_core.brokers.kafka import KafkaCluster
cluster = KafkaCluster(nodes=1).start()
print(cluster.pids[0], cluster.data_root, flush=True)
time.sleep(600)
"""


def test_parent_killed_leaves_no_jvm_and_the_next_start_removes_its_data():
    child = subprocess.Popen([sys.executable, "-c", _CHILD], stdout=subprocess.PIPE, text=True,
                             cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        line = child.stdout.readline() if child.stdout else ""
        assert line, "the child did not start Kafka"
        pid_text, root_text = line.split()
        jvm, root = int(pid_text), Path(root_text)
        assert _alive(jvm) and root.is_dir()
        child.kill()  # no Python code runs in the parent: only the kernel's death signal
        child.wait(10)
        assert _wait_dead([jvm]) == [], "the Kafka JVM outlived its killed parent"
        assert root.is_dir()  # nobody could remove it ...
        assert root in sweep_stale_dirs()  # ... until the next start sweeps it
        assert not root.exists()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_kbatch_terminated_mid_run_stops_kafka_and_removes_its_data():
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "produce", "--broker", "kafka", "--partitions", "4",
         "--rate", "100", "--duration", "120", "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        output = ""
        assert proc.stdout is not None
        while "Producing to" not in output:
            line = proc.stdout.readline()
            assert line, f"kbatch ended before producing:\n{output}"
            output += line
        mine = list(Path(tempfile.gettempdir()).glob(f"{DIR_PREFIX}{proc.pid}-*"))
        assert len(mine) == 1
        jvms = _kafka_children(proc.pid)
        assert jvms, "no Kafka JVM found under kbatch"
        proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=60)
        assert proc.returncode == 143, output + rest  # SIGTERM: 128 + 15
        assert "Interrupted" in rest
        assert _wait_dead(jvms, 5.0) == []
        assert not mine[0].exists()
        assert not list(Path(tempfile.gettempdir()).glob(f"{DIR_PREFIX}{proc.pid}-*"))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _kafka_children(parent: int) -> list[int]:
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == parent and b"kafka.Kafka" in cmdline:
            pids.append(int(stat.parent.name))
    return pids
