"""docker-compose.yml runs what README promises: 3 Apache Kafka brokers in KRaft mode, a
pinned official image of kbatch's one Kafka version, and listeners a client on the host can
reach (checked by reading the file; tests/integration/test_compose.py runs it)."""

from __future__ import annotations

import base64
import re

import pytest
import yaml

from producer_core.brokers.kafka_dist import KAFKA_VERSION
from tests.docker_kafka import COMPOSE_FILE, compose_bootstrap, expand

SERVICES = yaml.safe_load(COMPOSE_FILE.read_text())["services"]


def env(service: dict) -> dict[str, str]:
    return {k: str(v) for k, v in service["environment"].items()}


def listeners(text: str) -> dict[str, str]:
    return dict(item.split("://", 1) for item in text.split(","))


def test_three_brokers_of_a_pinned_official_image():
    assert len(SERVICES) == 3
    images = {service["image"] for service in SERVICES.values()}
    assert len(images) == 1
    (image,) = images
    # CI may name kbatch's own build; the default is the official image, pinned
    match = re.fullmatch(r"\$\{KBATCH_KAFKA_IMAGE:-(apache/kafka:(\d+\.\d+\.\d+))\}", image)
    assert match, image  # no latest, no floating
    assert expand(image, {}) == match.group(1)
    assert expand(image, {"KBATCH_KAFKA_IMAGE": "kbatch/kafka:x"}) == "kbatch/kafka:x"


def test_the_compose_file_runs_kbatchs_one_kafka_version():
    (image,) = {service["image"] for service in SERVICES.values()}
    assert expand(image, {}) == f"apache/kafka:{KAFKA_VERSION}"


def test_kraft_mode_with_a_three_voter_quorum():
    ids = sorted(int(env(s)["KAFKA_NODE_ID"]) for s in SERVICES.values())
    assert ids == [1, 2, 3]
    cluster_ids = {env(s)["CLUSTER_ID"] for s in SERVICES.values()}
    assert len(cluster_ids) == 1
    (cluster_id,) = cluster_ids
    assert len(base64.urlsafe_b64decode(cluster_id + "==")) == 16  # a UUID, as KRaft requires
    for name, service in SERVICES.items():
        e = env(service)
        assert set(e["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
        assert not any("ZOOKEEPER" in key for key in e)
        voters = e["KAFKA_CONTROLLER_QUORUM_VOTERS"].split(",")
        assert sorted(v.split("@")[0] for v in voters) == ["1", "2", "3"]
        assert {v.split("@")[1].split(":")[0] for v in voters} == set(SERVICES)
        assert e["KAFKA_CONTROLLER_LISTENER_NAMES"] in listeners(e["KAFKA_LISTENERS"])
        assert service["hostname"] == name


def test_external_listeners_are_published_on_the_hosts_loopback_and_advertised_so():
    published = []
    for service in SERVICES.values():
        e = env(service)
        protocol_map = dict(item.split(":") for item in e["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"]
                            .split(","))
        bound = listeners(e["KAFKA_LISTENERS"])
        advertised = listeners(expand(e["KAFKA_ADVERTISED_LISTENERS"], {}))
        assert set(bound) <= set(protocol_map) and set(advertised) <= set(bound)
        assert e["KAFKA_INTER_BROKER_LISTENER_NAME"] in advertised
        host, port = advertised["EXTERNAL"].rsplit(":", 1)
        container_port = bound["EXTERNAL"].rsplit(":", 1)[1]
        assert host == "127.0.0.1"
        assert f"127.0.0.1:{port}:{container_port}" in [expand(p, {}) for p in service["ports"]]
        published.append(int(port))
    assert len(set(published)) == 3
    assert compose_bootstrap(env={}) == ",".join(f"127.0.0.1:{p}" for p in published)
    moved = {f"KBATCH_COMPOSE_PORT_{i}": str(40000 + i) for i in (1, 2, 3)}
    assert compose_bootstrap(env=moved) == "127.0.0.1:40001,127.0.0.1:40002,127.0.0.1:40003"


def test_replicated_internal_topics_fit_three_brokers():
    for service in SERVICES.values():
        e = env(service)
        assert int(e["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"]) <= 3
        assert int(e["KAFKA_TRANSACTION_STATE_LOG_MIN_ISR"]) <= int(
            e["KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR"]) <= 3


def test_container_tests_skip_with_the_reason_or_fail_under_ci(monkeypatch):
    from tests import container_support

    monkeypatch.setattr(container_support, "docker_unavailable_reason",
                        lambda: "Docker is not installed")
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception, match="Docker is not installed"):
        container_support.require_docker()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true but the container tests cannot"):
        container_support.require_docker()
