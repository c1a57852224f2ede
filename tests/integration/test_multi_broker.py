"""Three clients produce to a multi-partition topic on a 3-broker cluster and read every
message back (assign + fetch) from the partition it was acknowledged on.

The cluster is the embedded lab (3 Tansu brokers behind the facade; there each backend
must also hold exactly the partitions its node leads, and kbatch's per-broker request
counts must equal the facade's per-node counts), and real Apache Kafka from
docker-compose.yml wherever Docker and a Compose tool are (skipped otherwise, with the
reason; a failure under CI=true).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from aiokafka import AIOKafkaProducer

from producer_core.brokers.lab import Lab
from producer_core.brokers.lab.protocol import API_FETCH, API_PRODUCE
from producer_core.config import build_settings
from producer_core.engine.drivers.engine import Delivery, run
from producer_core.engine.transport.transport import Cluster
from producer_core.results.results_io import validate_document
from producer_core.workload.workload import Workload, message_id_of
from tests.cli.test_produce_cli import KBATCH, ROOT
from tests.readback import read_all

pytestmark = pytest.mark.broker

PARTITIONS = 6


@dataclass
class Target:
    bootstrap: str
    lab: Lab | None  # None: real Apache Kafka


@pytest.fixture(scope="module", params=["lab", "docker"])
def cluster(request) -> Iterator[Target]:
    if request.param == "docker":
        yield Target(request.getfixturevalue("docker_kafka"), None)
        return
    with Lab(brokers=3) as lab:
        yield Target(lab.bootstrap, lab)
        assert lab.errors() == []


def fresh_topic(prefix: str) -> str:
    return f"{prefix}-{time.time_ns()}"  # real Kafka keeps topics between tests


def create_topic(bootstrap: str, topic: str) -> None:
    async def create() -> None:
        cluster = Cluster(bootstrap)
        try:
            await cluster.connect()
            await cluster.ensure_topic(topic, PARTITIONS)
        finally:
            await cluster.close()

    asyncio.run(create())


def payload(message_id: int) -> bytes:
    return message_id.to_bytes(8, "big") + b"x" * 32


def check_read_back(target: Target, topic: str, acked: dict[int, tuple[int, int]]) -> None:
    """Every acknowledged message is in the topic once, at its acknowledged place; on the
    lab, each backend holds exactly the partitions its node leads."""
    found = asyncio.run(read_all(target.bootstrap, topic, PARTITIONS, expected=len(acked)))
    stored = Counter(mid for records in found.values() for _, mid, _ in records)
    assert set(stored) == set(acked) and max(stored.values()) == 1
    for partition, records in found.items():
        for offset, message_id, _ in records:
            assert acked[message_id] == (partition, offset)
    lab = target.lab
    if lab is None:
        return
    per_partition = Counter(partition for partition, _ in acked.values())
    for node, backend in enumerate(lab.backends, start=1):
        led = {p for p in range(PARTITIONS) if lab.leader(topic, p) == node}
        expected = sum(per_partition[p] for p in led)
        direct = asyncio.run(read_all(backend.bootstrap, topic, PARTITIONS, expected=expected,
                                      timeout_s=10))
        assert {p for p, records in direct.items() if records} == led
        assert sum(len(records) for records in direct.values()) == expected


def test_confluent_kafka_produces_and_reads_back(cluster):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = fresh_topic("ck")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    for future in admin.create_topics([NewTopic(topic, PARTITIONS, 1)],
                                      operation_timeout=10).values():
        future.result()
    acked: dict[int, tuple[int, int]] = {}
    errors = []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(err)
        else:
            acked[message_id_of(msg.value())] = (msg.partition(), msg.offset())

    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 5})
    for i in range(600):
        producer.produce(topic, payload(i), key=f"k{i % 37}".encode(), on_delivery=on_delivery)
    assert producer.flush(30) == 0
    del producer, admin
    assert not errors and len(acked) == 600
    assert len({partition for partition, _ in acked.values()}) == PARTITIONS
    check_read_back(cluster, topic, acked)


def test_aiokafka_produces_and_reads_back(cluster):
    topic = fresh_topic("aio")
    create_topic(cluster.bootstrap, topic)

    async def produce() -> dict[int, tuple[int, int]]:
        producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap, linger_ms=5)
        await producer.start()
        try:
            futures = {i: await producer.send(topic, payload(i), partition=i % PARTITIONS)
                       for i in range(600)}
            results = {i: await f for i, f in futures.items()}
        finally:
            await producer.stop()
        return {i: (r.partition, r.offset) for i, r in results.items()}

    acked = asyncio.run(produce())
    assert len(acked) == 600
    check_read_back(cluster, topic, acked)


def test_engine_produces_reads_back_and_counts_requests_per_broker(cluster):
    workload = Workload(topic=fresh_topic("engine"), partitions=PARTITIONS, rate=3000,
                        messages=1500, duration_s=None)
    if cluster.lab is not None:
        cluster.lab.reset_counts()
    deliveries: list[Delivery] = []
    results = run(workload, build_settings([("linger.ms", "10")], mode="partition"),
                  "partition", cluster.bootstrap, deliveries=deliveries)
    assert results.metrics.messages_acked == 1500 and results.metrics.messages_failed == 0
    by_broker = dict(results.metrics.requests_by_broker)
    assert set(by_broker) == {1, 2, 3} and sum(by_broker.values()) == results.requests_sent
    if cluster.lab is not None:  # the lab counts the priming requests too
        primed = (results.priming or {}).get("requests_by_broker", {})
        assert {node: count + primed.get(str(node), 0) for node, count in by_broker.items()
                } == cluster.lab.request_counts(API_PRODUCE)
    acked = {mid: (d.partition, d.base_offset + i)
             for d in deliveries for i, mid in enumerate(d.message_ids)}
    check_read_back(cluster, workload.topic, acked)
    if cluster.lab is not None:
        assert sum(cluster.lab.request_counts(API_FETCH).values()) > 0


@pytest.mark.docker
@pytest.mark.timeout(900)
def test_kbatch_on_the_compose_cluster_reads_every_message_back(docker_kafka, tmp_path):
    """docker-compose.yml, started with the Compose tool, serves `kbatch produce --verify`."""
    import json
    import subprocess

    out = tmp_path / "r.json"
    done = subprocess.run(
        [*KBATCH, "produce", "--bootstrap-servers", docker_kafka, "--partitions", "6",
         "--replication-factor", "3", "--rate", "1000", "--duration", "3", "--verify",
         "-X", "acks=all", "--no-progress", "--json", str(out)],
        capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr
    document = json.loads(out.read_text())
    validate_document(document)
    assert document["broker_implementation"] == "external"
    assert document["messages"]["acknowledged"] == 3000
    verify = document["verify"]
    assert verify["present"] == 3000 and verify["missing"] == 0 and verify["duplicated"] == 0
    assert set(document["requests_by_broker"]) == {"1", "2", "3"}
