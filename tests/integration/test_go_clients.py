"""Modes franz-go, sarama and kafka-go against real brokers: Go's producers on kbatch's
workload, through the Go client driver.

Counts are facts: the driver's Produce request count must equal the frames a wire proxy
saw (Tansu) and Kafka's own Produce count (1 and 3 Apache Kafka nodes), every acknowledged
message must be in the topic once where the driver said, and results must validate."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest

from producer_core.brokers import BrokerTarget
from producer_core.brokers.target import broker_target
from producer_core.config import build_settings
from producer_core.engine.drivers.engine import Delivery, run
from producer_core.engine.modes.go_toolchain import find_go
from producer_core.measure.cost_run import measured
from producer_core.results.results_io import add_facts, results_schema, validate_document
from producer_core.workload.workload import Workload
from tests.client_checks import all_acknowledged, assert_read_back_where_reported
from tests.kafka_fixtures import fresh_topic, skip_kafka_reason
from tests.readback import read_all
from tests.wire_proxy import produce_frames_of

pytestmark = [pytest.mark.broker, pytest.mark.timeout(900)]
"""900 s: a test may build the Go driver (2 min from a cold Go cache at load 10)."""

GO_MODES = ("franz-go", "sarama", "kafka-go")


@pytest.mark.parametrize("mode", GO_MODES)
def test_go_client_counts_match_the_wire_and_every_ack_reads_back(mode, counted_broker):
    _, proxy = counted_broker
    workload = Workload(topic=f"go-wire-{mode}", partitions=12, rate=3000, duration_s=2.0,
                        keys=40)
    settings = build_settings({"linger.ms": "20"}.items(), mode=mode)
    deliveries: list[Delivery] = []
    results = run(workload, settings, mode, proxy.address, deliveries=deliveries)
    doc = results.to_dict()
    total = workload.total_messages
    assert doc["mode"] == mode
    assert doc["messages"] == all_acknowledged(total)
    section = doc["go_client"]
    assert section["client"] == mode and section["client_version"].startswith("v")
    assert section["request_counting"] == "wire"
    assert section["properties"]["linger.ms"] == "20" and section["properties"]["acks"] == "all"
    assert produce_frames_of(results) == proxy.produce_requests  # (priming on it too)
    assert results.requests_sent > 10
    assert sum(doc["requests_by_broker"].values()) == results.requests_sent
    assert doc["records_sent"] == total and doc["bytes_sent"] > total * 100
    assert 1 <= doc["partitions_per_request"]["max"] <= 12
    latency = doc["latency"]
    assert latency["count"] == total and doc["rtt"]["count"] == results.requests_sent
    assert 0.1 < latency["p50_ms"] <= latency["p99_ms"] <= latency["max_ms"] < 30_000
    if mode == "franz-go":  # its own OnBrokerWrite hook agrees with the wire
        assert section["producer_metrics"]["hook_produce_requests"] == results.requests_sent
        assert doc["idempotence"]["enabled"] is True and doc["idempotence"]["producer_id"] >= 0
    elif mode == "kafka-go":  # no idempotent producer: the results say so
        assert "enable.idempotence" not in section["properties"]
        assert doc["idempotence"] == {"enabled": False}
        assert any("kafka-go has no idempotent producer" in w for w in doc["warnings"])
    else:
        assert doc["idempotence"]["enabled"] is True
    add_facts(doc, embedded=True)
    document = json.loads(json.dumps(doc))
    validate_document(document)
    jsonschema.validate(document, results_schema())

    assert_read_back_where_reported(proxy.address, workload.topic, 12, 40, total, deliveries)


@pytest.mark.parametrize("mode", GO_MODES)
def test_each_client_runs_with_its_own_batching_defaults(mode, tansu_broker):
    """No linger given: each client's own default decides (franz-go lingers 10 ms, sarama
    sends at once, kafka-go waits up to 1 s per partition for 100 messages)."""
    workload = Workload(topic=fresh_topic(f"go-defaults-{mode}"), partitions=4, rate=400,
                        duration_s=2.0)
    results = run(workload, build_settings(mode=mode), mode, tansu_broker.bootstrap)
    doc = results.to_dict()
    assert doc["messages"]["acknowledged"] == workload.total_messages
    assert "linger.ms" not in doc["go_client"]["properties"]
    if mode == "kafka-go":
        assert doc["latency"]["p50_ms"] > 200  # BatchTimeout 1 s at 100 msg/s per partition


@pytest.fixture(scope="module", params=[1, 3], ids=["1-node", "3-nodes"])
def kafka_target(request: pytest.FixtureRequest) -> Iterator[tuple[BrokerTarget, int]]:
    reason = skip_kafka_reason()
    if reason:
        pytest.skip(reason)
    with broker_target(None, brokers=request.param, broker="kafka") as target:
        yield target, request.param


@pytest.mark.parametrize("mode", GO_MODES)
def test_kafka_counts_every_produce_request_a_go_client_sent(kafka_target, mode):
    target, nodes = kafka_target
    workload = Workload(topic=fresh_topic(f"go-cost-{mode}"), partitions=20, rate=1500,
                        duration_s=2.0, warmup_s=0.5)
    settings = build_settings({"linger.ms": "5"}.items(), mode=mode)
    deliveries: list[Delivery] = []
    results = measured(run, target, sample_s=0.5)(
        workload, settings, mode, target.bootstrap, deliveries=deliveries)
    doc = results.to_dict()
    kafka = doc["broker_cost"]["kafka"]
    total = workload.total_messages
    assert doc["messages"]["acknowledged"] == total
    assert kafka["available"] is True, doc["broker_cost"]
    assert kafka["produce_requests_run"] == doc["requests_sent"] > 0, (mode, kafka)
    assert len(doc["requests_by_broker"]) == nodes  # node ids from the cluster's metadata
    found = asyncio.run(read_all(target.bootstrap, workload.topic, 20, total))
    stored = Counter(mid for records in found.values() for _, mid, _ in records)
    assert set(stored) == set(range(total)) and max(stored.values()) == 1  # no loss, no dup
    assert sorted(mid for d in deliveries for mid in d.message_ids) == list(range(total))


def test_the_driver_is_built_once_per_source(tmp_path, monkeypatch):
    from producer_core.engine.drivers.go_clients import driver

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    messages: list[str] = []
    first = driver.prepare("sarama", progress=messages.append)
    assert any("Building kbatch's Go client driver" in m for m in messages)
    assert first.command()[1] == "sarama" and driver.is_built()
    messages.clear()
    assert driver.prepare("kafka-go", progress=messages.append).binary == first.binary
    assert messages == []  # cached: one binary for the three clients
    original = driver.sources()
    monkeypatch.setattr(driver, "sources",
                        lambda: {**original, "main.go": original["main.go"] + b"\n// edited\n"})
    edited = driver.prepare("franz-go", progress=messages.append)
    assert edited.binary != first.binary and messages
    assert len(list((tmp_path / "kbatch" / "go-clients-driver").iterdir())) == 2


def test_the_go_sources_are_gofmt_and_vet_clean_and_their_tests_pass():
    """gofmt, go vet and go test (the Produce request parser, every version 3-13) on the
    driver's sources, with the modules go.sum pins."""

    go = find_go()
    assert go is not None, "the Go toolchain is needed"
    source = Path(__file__).parents[2] / "producer_core/engine/drivers/go_clients/go"
    gofmt = Path(go).with_name("gofmt")
    unformatted = subprocess.run([str(gofmt), "-l", "."], cwd=source, capture_output=True,
                                 text=True, check=True, timeout=120).stdout
    assert unformatted == "", f"not gofmt-clean: {unformatted}"
    for command in (["vet", "."], ["test", "-count=1", "."]):
        done = subprocess.run([go, *command], cwd=source, capture_output=True, text=True,
                              timeout=600, env={**os.environ, "GOFLAGS": "-mod=readonly"})
        assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.faults
@pytest.mark.parametrize("mode", ["franz-go", "sarama"])
def test_a_leader_kill_loses_and_duplicates_nothing_with_an_idempotent_go_client(
        mode, kafka_cluster, tmp_path):
    """SIGKILL the leader of partition 0 of a 3-replica topic on the session's 3-node Kafka
    cluster mid-run, as tests/integration/test_faults_verify.py does for kbatch's engine:
    with acks=all and idempotence (both clients' setting here), --verify reads back no
    loss, no duplicate and nothing out of order."""
    from tests.integration.test_faults_verify import run_with_leader_killed

    run, stdout, stderr, returncode = run_with_leader_killed(
        kafka_cluster, fresh_topic(f"go-leader-{mode}"), tmp_path / "run.json", "--mode", mode)
    v, m = run["verify"], run["messages"]
    assert "Traceback" not in stderr
    assert run["idempotence"]["enabled"] is True
    assert v["missing"] == 0 and v["duplicated"] == 0 and v["out_of_order"] == 0, v
    assert m["acknowledged"] > 0
    assert returncode == (3 if m["failed"] + m["unknown"] else 0), stderr
    assert "--verify" in stdout
