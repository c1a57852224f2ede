"""Fault runs as a user makes them: `kbatch produce --verify` against a broker this test
pauses (SIGSTOP), or kills and restarts, on loopback. The verdict comes from reading the
topic back (`--verify`), and the exit code is the documented one.

Each broker here is a Tansu process this test started; it is always continued and stopped,
whatever happens. The README's table 'Fault runs' is measured with these commands.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from producer_core.brokers.embedded import EmbeddedBroker, free_port
from producer_core.results.results_io import validate_document
from tests.cli.test_produce_cli import KBATCH, ROOT
from tests.kafka_fixtures import own_embedded_broker

pytestmark = [pytest.mark.broker, pytest.mark.faults]

PARTITIONS = 6
RATE = 5000
DURATION_S = 5
NO_IDEMPOTENCE = ("-X", "enable.idempotence=false", "-X", "acks=1")


@pytest.fixture()
def broker() -> Iterator[EmbeddedBroker]:
    """A broker of this test alone, on a fixed port (a restart must come back there)."""
    with own_embedded_broker(free_port()) as broker:
        yield broker


def kbatch_produce(bootstrap: str, topic: str, json_path: Path, *extra: str,
                   duration_s: float = DURATION_S) -> tuple[subprocess.Popen[str], float]:
    proc = subprocess.Popen(
        [*KBATCH, "produce", "--bootstrap-servers", bootstrap, "--topic", topic,
         "--partitions", str(PARTITIONS), "--rate", str(RATE), "--duration", str(duration_s),
         "--keys", "60", "--verify", "--json", str(json_path), "--no-progress", *extra],
        cwd=ROOT, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return proc, time.monotonic()


async def _wait_until_written(bootstrap: str, topic: str, records: int) -> None:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            cluster = await consumer._client.fetch_all_metadata()  # never auto-creates
            if len(cluster.partitions_for_topic(topic) or ()) == PARTITIONS:
                ends = await consumer.end_offsets(tps)
                if sum(ends.values()) >= records:
                    return
            await asyncio.sleep(0.1)
    finally:
        await consumer.stop()
    raise AssertionError(f"kbatch wrote fewer than {records} records to {topic} in 60 s")


def wait_until_written(bootstrap: str, topic: str, records: int = 2000) -> None:
    """Until the run is under way: kbatch's start-up (imports, --verify's offsets, topic
    creation) takes a few seconds on a loaded machine, and a fault must hit the run."""
    asyncio.run(_wait_until_written(bootstrap, topic, records))


def finish(proc: subprocess.Popen[str], began: float) -> tuple[str, str, float]:
    try:
        stdout, stderr = proc.communicate(timeout=150)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return stdout, stderr, time.monotonic() - began


def report(label: str, idempotence: bool, code: int | None, took: float, run: dict) -> None:
    """One line per fault run (pytest -s shows it): the figures of the README's table."""
    m, v = run["messages"], run["verify"]
    print(f"\n{label} idempotence={idempotence}: exit {code}, {took:.1f} s, acknowledged "
          f"{m['acknowledged']}, failed {m['failed']}, unknown {m['unknown']}, retried "
          f"{run['retried_requests']}; verify present {v['present']} missing {v['missing']} "
          f"duplicated {v['duplicated']} out_of_order {v['out_of_order']} unacknowledged_found "
          f"{v['unacknowledged_found']}")


def run_with_leader_killed(kafka_cluster, topic: str, json_path: Path, *extra: str
                           ) -> tuple[dict, str, str, int]:
    """`kbatch produce --verify` (8 s) on a fresh 3-replica topic of the session's cluster,
    SIGKILLing the leader of partition 0 once records are written, then restarting it (the
    cluster is left whole): (checked results, stdout, stderr, exit code)."""
    bootstrap = kafka_cluster.bootstrap
    asyncio.run(create_replicated_topic(bootstrap, topic))
    proc, began = kbatch_produce(bootstrap, topic, json_path, *extra, duration_s=8)
    leader = asyncio.run(leader_of(bootstrap, topic, 0))
    try:
        wait_until_written(bootstrap, topic)
        kafka_cluster.kill_node(leader)
        stdout, stderr, _ = finish(proc, began)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        kafka_cluster.start_node(leader)
    return outcome(json_path), stdout, stderr, proc.returncode


def outcome(json_path: Path) -> dict:
    run = json.loads(json_path.read_text())
    validate_document(run)
    m, v = run["messages"], run["verify"]
    assert v["read_complete"] is True
    assert v["acknowledged"] == m["acknowledged"]
    assert v["present"] + v["missing"] == v["acknowledged"]
    # whatever the topic holds beyond the acknowledged messages may have been written:
    # only messages whose outcome is unknown (or sent without acks)
    assert v["unacknowledged_found"] <= m["unknown"] + m["sent_unacknowledged"]
    return run


@pytest.mark.parametrize("extra,idempotence", [((), True), (NO_IDEMPOTENCE, False)],
                         ids=["idempotence", "no-idempotence"])
def test_paused_broker(broker, tmp_path, extra, idempotence) -> None:
    """SIGSTOP for 6 s with request.timeout.ms=2000: requests time out, connections close,
    batches are retried; with idempotence nothing is duplicated or reordered."""
    json_path = tmp_path / "run.json"
    proc, began = kbatch_produce(broker.bootstrap, "paused", json_path,
                                 "-X", "request.timeout.ms=2000", *extra)
    pid = broker.pid
    assert pid is not None
    try:
        wait_until_written(broker.bootstrap, "paused")
        os.kill(pid, signal.SIGSTOP)
        time.sleep(6.0)
    finally:
        os.kill(pid, signal.SIGCONT)
    stdout, stderr, took = finish(proc, began)
    run = outcome(json_path)
    v, m = run["verify"], run["messages"]
    report("paused", idempotence, proc.returncode, took, run)
    assert "Traceback" not in stderr
    assert run["idempotence"]["enabled"] is idempotence is v["idempotence"]
    assert run["retried_requests"] > 0  # the pause cost retries
    assert v["missing"] == 0
    if idempotence:
        assert v["duplicated"] == 0 and v["out_of_order"] == 0
    # without idempotence, duplicates are whatever the retries wrote twice: counted and
    # reported (never hidden), and not an exit-code failure
    assert proc.returncode == (3 if m["failed"] + m["unknown"] else 0), stderr
    assert "--verify" in stdout and "duplicated" in stdout  # on screen too


async def _create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, partitions, 1)])
    finally:
        await admin.close()


@pytest.mark.parametrize("extra,idempotence", [
    pytest.param((), True, id="idempotence"),
    pytest.param(NO_IDEMPOTENCE, False, id="no-idempotence")])
def test_killed_and_restarted_broker(broker, tmp_path, extra, idempotence) -> None:
    """SIGKILL the broker mid-run, start a new one on the same port, recreate the topic.

    Tansu is in-memory: the restarted broker's log is empty, so everything acknowledged
    before the kill is gone. --verify must say so (missing > 0, exit 4), and what was
    acknowledged after the restart must be there.
    """
    json_path = tmp_path / "run.json"
    port = broker.port
    proc, began = kbatch_produce(broker.bootstrap, "restarted", json_path,
                                 "-X", "request.timeout.ms=2000", "-X", "delivery.timeout.ms=15000",
                                 *extra, duration_s=8)
    restarted: EmbeddedBroker | None = None
    try:
        wait_until_written(broker.bootstrap, "restarted")
        assert broker.pid is not None
        os.kill(broker.pid, signal.SIGKILL)
        broker.stop()  # reap it
        time.sleep(1.0)
        restarted = EmbeddedBroker(port=port)
        restarted.start()
        asyncio.run(_create_topic(restarted.bootstrap, "restarted", PARTITIONS))
        stdout, stderr, took = finish(proc, began)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if restarted is not None:
            restarted.stop()
    run = outcome(json_path)
    v = run["verify"]
    report("restart", idempotence, proc.returncode, took, run)
    assert "Traceback" not in stderr
    assert v["missing"] > 0  # acknowledged before the kill, lost with the broker's memory
    assert proc.returncode == 4, stderr  # a verify problem outranks failed messages (3)
    assert "acknowledged messages missing" in stderr
    assert v["present"] > 0  # acknowledged after the restart: in the new log
    if idempotence:
        assert v["duplicated"] == 0 and v["out_of_order"] == 0
        assert run["idempotence"]["epoch_bumps"] >= 1  # the new broker: a new producer id


async def leader_of(bootstrap: str, topic: str, partition: int) -> int:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
    await consumer.start()
    try:
        cluster = await consumer._client.fetch_all_metadata()
        leader = cluster.leader_for_partition(TopicPartition(topic, partition))
    finally:
        await consumer.stop()
    assert leader is not None and leader >= 0, f"{topic}-{partition} has no leader"
    return int(leader)


async def create_replicated_topic(bootstrap: str, name: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, PARTITIONS, 3)])
    finally:
        await admin.close()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # until every partition has a leader
        try:
            for p in range(PARTITIONS):
                await leader_of(bootstrap, name, p)
            return
        except AssertionError:
            await asyncio.sleep(0.3)
    raise AssertionError(f"{name} got no leaders in 30 s")


@pytest.mark.parametrize("extra,idempotence", [
    ((), True), (("-X", "enable.idempotence=false"), False)],
    ids=["idempotence", "no-idempotence-acks-all"])
def test_leader_change_on_kafka(kafka_cluster, tmp_path, extra, idempotence) -> None:
    """SIGKILL the leader of partition 0 of a 3-replica topic on the 3-node Apache Kafka
    cluster mid-run: its partitions move to another node (NOT_LEADER, metadata refresh,
    retries). With acks=all and 3 replicas nothing acknowledged may be lost; with
    idempotence nothing is duplicated or reordered either."""
    from tests.kafka_fixtures import fresh_topic

    topic = fresh_topic("leader-change")
    bootstrap = kafka_cluster.bootstrap
    asyncio.run(create_replicated_topic(bootstrap, topic))
    json_path = tmp_path / "run.json"
    proc, began = kbatch_produce(bootstrap, topic, json_path, *extra, duration_s=8)
    leader = asyncio.run(leader_of(bootstrap, topic, 0))
    try:
        try:
            wait_until_written(bootstrap, topic)
        except AssertionError:
            proc.kill()
            raise AssertionError(f"kbatch did not get going: {proc.communicate()[1][-2000:]}"
                                 ) from None
        kafka_cluster.kill_node(leader)
        stdout, stderr, took = finish(proc, began)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        kafka_cluster.start_node(leader)  # the session's cluster: leave it whole
    run = outcome(json_path)
    v, m = run["verify"], run["messages"]
    report(f"leader change (node {leader} killed)", idempotence, proc.returncode, took, run)
    assert "Traceback" not in stderr
    assert run["retried_requests"] > 0  # the move cost retries
    assert v["missing"] == 0
    if idempotence:
        assert v["duplicated"] == 0 and v["out_of_order"] == 0
    assert proc.returncode == (3 if m["failed"] + m["unknown"] else 0), stderr
    assert "--verify" in stdout


def test_a_failed_read_back_keeps_the_results(broker, tmp_path) -> None:
    """The broker dies mid-run and stays dead: messages fail, and the read-back cannot
    reach anyone. The results JSON and summary are still written, `verify` says why it is
    incomplete, and the exit code is the run's own (3: messages failed), not a bare 1."""
    json_path = tmp_path / "run.json"
    proc, began = kbatch_produce(broker.bootstrap, "gone", json_path,
                                 "-X", "request.timeout.ms=2000",
                                 "-X", "delivery.timeout.ms=4000", duration_s=4)
    try:
        wait_until_written(broker.bootstrap, "gone")
        assert broker.pid is not None
        os.kill(broker.pid, signal.SIGKILL)
        broker.stop()
        stdout, stderr, took = finish(proc, began)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "Traceback" not in stderr
    assert proc.returncode == 3, stderr
    run = json.loads(json_path.read_text())
    validate_document(run)
    m, v = run["messages"], run["verify"]
    assert m["failed"] + m["unknown"] > 0
    assert v["read_complete"] is False and "could not read the topics back" in v["read_error"]
    assert v["acknowledged"] == m["acknowledged"] and v["problems"] == []
    assert "read-back" in stdout and "messages failed" in stderr  # the summary is there
    assert "delivery is unconfirmed" in stderr
    # the client library's own log lines (aiokafka, reading back) are in a file, not here
    logged = [line for line in stderr.splitlines() if line.startswith("Unable connect")]
    assert not logged, stderr
