"""`--consume` as a user runs it, against the embedded Tansu broker and Apache Kafka:
consumers read the run while it runs, end-to-end latency sits above the ack latency and
within the linger plus a fetch wait, and what they read agrees with what was acknowledged.
Bad input on the consumer side (cannot connect, more consumers than partitions) is a line
and a `consumers.problems` entry; the producer's results are still written."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from producer_core.brokers.kafka import KafkaCluster
from producer_core.results.results_io import validate_document
from tests.cli.test_produce_cli import KBATCH, ROOT
from tests.kafka_fixtures import BrokerUnderTest, fresh_topic

pytestmark = pytest.mark.broker

LINGER_MS = 100
FETCH_WAIT_MS = 500  # librdkafka's fetch.wait.max.ms default (Java's fetch.max.wait.ms too)


def produce(bootstrap: str, json_path: Path, *extra: str, partitions: int = 16,
            rate: int = 2000, duration_s: float = 5.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*KBATCH, "produce", "--bootstrap-servers", bootstrap,
         "--topic", fresh_topic("e2e"), "--partitions", str(partitions), "--rate", str(rate),
         "--duration", str(duration_s), "--json", str(json_path), "--no-progress", "--consume",
         *extra], cwd=ROOT, text=True, capture_output=True, timeout=300)


def check_end_to_end(doc: dict[str, Any], linger_ms: float = LINGER_MS) -> None:
    """The Done-when of issue 29: e2e above ack, within linger + a fetch wait, consumed =
    acknowledged, and the interval rows carry the consumers' figures."""
    validate_document(doc)
    ack, e2e, section = doc["latency"], doc["e2e_latency"], doc["consumers"]
    assert section["problems"] == []
    assert e2e["count"] == doc["messages"]["acknowledged"] > 0
    assert e2e["p50_ms"] >= ack["p50_ms"]
    assert e2e["p50_ms"] <= linger_ms + FETCH_WAIT_MS
    readback = section["readback"]
    assert readback["present"] == readback["acknowledged"] == doc["messages"]["acknowledged"]
    assert readback["missing"] == readback["duplicated"] == readback["out_of_order"] == 0
    assert readback["read_complete"]
    rows = (doc.get("intervals") or {}).get("run") or section["intervals"]
    assert sum(r["consumed"] for r in rows) > 0.9 * e2e["count"]
    assert all("lag_s" in r and "e2e_p99_ms" in r for r in rows)


def test_consumers_measure_end_to_end(broker_bootstrap: BrokerUnderTest, tmp_path: Path):
    path = tmp_path / "r.json"
    done = produce(broker_bootstrap.bootstrap, path, "-X", f"linger.ms={LINGER_MS}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "end-to-end latency p50" in done.stdout and "ack latency p50" in done.stdout
    check_end_to_end(json.loads(path.read_text()))


@pytest.mark.parametrize("mode", ["kafka-java", "librdkafka"])
def test_client_modes_on_kafka(kafka_cluster: KafkaCluster, tmp_path: Path, mode: str):
    path = tmp_path / "r.json"
    done = produce(kafka_cluster.bootstrap, path, "--mode", mode, "-X",
                   f"linger.ms={LINGER_MS}", "--consumers", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    check_end_to_end(json.loads(path.read_text()))


def test_transactions_read_committed_include_the_commit(kafka_cluster: KafkaCluster,
                                                        tmp_path: Path):
    path = tmp_path / "r.json"
    topic_id = fresh_topic("e2e-txn")
    done = produce(kafka_cluster.bootstrap, path, "--mode", "broker", "--verify",
                   "--transactional-id", topic_id, "--transaction-duration-ms", "300",
                   "--abort-every", "3", partitions=6, rate=1000, duration_s=3.0)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "transaction commit wait" in done.stdout
    doc = json.loads(path.read_text())
    validate_document(doc)
    section, verify = doc["consumers"], doc["verify"]
    assert section["isolation_level"] == "read_committed"
    assert verify["by"] == "consumers" and verify["problems"] == []
    assert verify["aborted_visible"] == 0 and doc["messages"]["aborted"] > 0
    assert verify["present"] == doc["messages"]["acknowledged"] == doc["e2e_latency"]["count"]
    # a record is readable only once its transaction commits: end-to-end waits for it
    assert doc["e2e_latency"]["p50_ms"] > doc["latency"]["p50_ms"]
    assert doc["e2e_latency"]["max_ms"] >= doc["transactions"]["commit_latency"]["p50_ms"]


def test_acks_0_is_measured_by_what_arrived(tansu_broker, tmp_path: Path):
    path = tmp_path / "r.json"
    done = produce(tansu_broker.bootstrap, path, "-X", "acks=0", partitions=4, rate=1000,
                   duration_s=2.0)
    assert done.returncode == 0, done.stdout + done.stderr
    doc = json.loads(path.read_text())
    readback = doc["consumers"]["readback"]
    assert doc["messages"]["acknowledged"] == 0
    assert readback["unacknowledged_found"] == doc["messages"]["sent_unacknowledged"] == 2000
    assert doc["e2e_latency"]["count"] == 2000


def test_consumers_that_cannot_connect_leave_the_producer_results(tansu_broker,
                                                                  tmp_path: Path):
    path = tmp_path / "r.json"
    done = produce(tansu_broker.bootstrap, path, "--consumer-config",
                   "security.protocol=SSL", partitions=2, rate=500, duration_s=1.0)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Consumers: " in done.stderr
    assert "Traceback" not in done.stderr
    doc = json.loads(path.read_text())
    assert doc["messages"]["acknowledged"] == 500
    assert "e2e_latency" not in doc
    problems = doc["consumers"]["problems"]
    assert any("could not reach" in p for p in problems)
    assert any("read 0 records of 500" in p for p in problems)


def test_more_consumers_than_partitions(tansu_broker, tmp_path: Path):
    path = tmp_path / "r.json"
    out = tmp_path / "out"
    done = produce(tansu_broker.bootstrap, path, "--consumers", "5", "--out", str(out),
                   partitions=2, rate=500, duration_s=1.0)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "--consumers 5 is more than the run's 2 partitions" in done.stderr
    doc = json.loads(path.read_text())
    assert doc["consumers"]["readback"]["present"] == 500
    saved = json.loads((out / "results.json").read_text())
    hgrm = out / saved["files"]["e2e_latency_hgrm"]
    assert "Total count    =          500" in hgrm.read_text()


def test_topic_deleted_mid_run(kafka_cluster: KafkaCluster, tmp_path: Path):
    from confluent_kafka import Consumer, KafkaException, TopicPartition
    from confluent_kafka.admin import AdminClient

    path, topic = tmp_path / "r.json", fresh_topic("e2e-gone")
    proc = subprocess.Popen(
        [*KBATCH, "produce", "--bootstrap-servers", kafka_cluster.bootstrap, "--topic", topic,
         "--partitions", "4", "--rate", "500", "--duration", "8", "--consume",
         "--allow-failures", "-X", "delivery.timeout.ms=4000", "-X", "request.timeout.ms=2000",
         "--json", str(path), "--no-progress"],
        cwd=ROOT, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    probe = Consumer({"bootstrap.servers": kafka_cluster.bootstrap, "group.id": topic})
    deadline = time.monotonic() + 180
    while True:  # delete once the producer has written (the topic exists before it starts)
        assert time.monotonic() < deadline and proc.poll() is None
        try:
            if probe.get_watermark_offsets(TopicPartition(topic, 0), timeout=5)[1] > 200:
                break
        except KafkaException:
            pass
        time.sleep(0.5)
    probe.close()
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap})
    admin.delete_topics([topic])[topic].result(30)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stdout + stderr
    assert "Traceback" not in stderr
    doc = json.loads(path.read_text())
    section = doc["consumers"]
    said = [p for p in section["problems"] if "no longer exist" in p]
    assert said, section["problems"]
    assert all(f"Consumers: {p}" in stderr for p in said)
    assert 0 < section["records_read"] <= doc["messages"]["acknowledged"]
