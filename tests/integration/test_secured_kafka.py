"""TLS and SASL against a real, secured Apache Kafka: every protocol and mechanism through
kbatch's engine and librdkafka, read back; the user's mistakes as clear errors; no secret
in any output.

ONE Kafka node serves the module, with a listener per case (`KafkaSecurity`):
TLS (SSL), MTLS (SSL, client certificate required), SASLTLS (SASL_SSL: PLAIN, SCRAM-SHA-256,
SCRAM-SHA-512, OAUTHBEARER with unsecured tokens), SASLPLAIN (SASL_PLAINTEXT: PLAIN and
SCRAM-SHA-256 only, so SCRAM-SHA-512 is a mechanism it lacks), and BADNAME (SSL with a
certificate for another host name), beside the cluster's PLAINTEXT CLIENT listener.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from producer_core.brokers.kafka import KafkaCluster
from producer_core.brokers.kafka_security import (
    KafkaSecurity,
    SecureListener,
    make_ca,
    write_client_properties,
)
from producer_core.config import build_settings
from producer_core.engine.drivers.engine import Delivery, run
from producer_core.engine.transport.transport import Cluster
from producer_core.errors import BrokerError, UsageError
from producer_core.properties import load_properties
from producer_core.workload.workload import Workload
from tests.cli.test_client_properties_cli import one_paragraph_error
from tests.cli.test_produce_cli import kbatch
from tests.kafka_fixtures import fresh_topic, skip_kafka_reason
from tests.readback import read_all

pytestmark = pytest.mark.broker

ALL = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
LISTENERS = [
    SecureListener("TLS", "SSL"),
    SecureListener("MTLS", "SSL", client_auth=True),
    SecureListener("SASLTLS", "SASL_SSL", ALL),
    SecureListener("SASLPLAIN", "SASL_PLAINTEXT", ("PLAIN", "SCRAM-SHA-256")),
    SecureListener("BADNAME", "SSL"),
]


class Secured:
    """The module's secured cluster and how to write client files for it."""

    def __init__(self, cluster: KafkaCluster, security: KafkaSecurity, directory: Path):
        self.cluster = cluster
        self.security = security
        self.directory = directory

    def props(self, listener: str, mechanism: str | None = None, **changes: str | None
              ) -> dict[str, str]:
        props = self.security.client_properties(
            listener, self.cluster.listener_bootstrap(listener), mechanism)
        for key, value in changes.items():
            key = key.replace("_", ".")
            if value is None:
                props.pop(key, None)
            else:
                props[key] = value
        return props

    def file(self, name: str, props: dict[str, str]) -> Path:
        return write_client_properties(self.directory / f"{name}.properties", props)


@pytest.fixture(scope="module")
def secured(tmp_path_factory) -> Iterator[Secured]:
    reason = skip_kafka_reason()
    if reason:
        pytest.skip(reason)
    directory = tmp_path_factory.mktemp("secured-kafka")
    security = KafkaSecurity(directory, LISTENERS)
    elsewhere = security.tls.server_pem(directory / "elsewhere.pem", ["elsewhere.example"])
    cluster = KafkaCluster(
        1, extra_listeners=security.extra_listeners, format_args=security.format_args,
        server_properties={**security.server_properties,
                           "listener.name.badname.ssl.keystore.location": str(elsewhere)})
    cluster.start()
    try:
        yield Secured(cluster, security, directory)
    finally:
        cluster.stop()


CASES = [("TLS", None), ("MTLS", None), ("SASLTLS", "PLAIN"), ("SASLTLS", "SCRAM-SHA-256"),
         ("SASLTLS", "SCRAM-SHA-512"), ("SASLTLS", "OAUTHBEARER"), ("SASLPLAIN", "PLAIN"),
         ("SASLPLAIN", "SCRAM-SHA-256")]


def produce_and_read_back(secured: Secured, props: dict[str, str], mode: str) -> None:
    """Produce 300 messages with these client properties and read every one back."""
    bootstrap = props.pop("bootstrap.servers")
    settings = build_settings([*props.items(), ("linger.ms", "5")], mode=mode)
    topic = fresh_topic(f"sec-{mode}")
    workload = Workload(topic=topic, partitions=3, rate=2000, duration_s=None, messages=300)
    deliveries: list[Delivery] = []
    results = run(workload, settings, mode, bootstrap, deliveries=deliveries)
    assert results.metrics.messages_acked == 300 and results.metrics.messages_failed == 0
    found = asyncio.run(read_all(bootstrap, topic, 3, 300, 60,
                                 **settings.security.aiokafka_kwargs()))
    ids = sorted(message_id for records in found.values() for _, message_id, _ in records)
    assert ids == list(range(300))


@pytest.mark.parametrize("mode", ["partition", "librdkafka"])
@pytest.mark.parametrize("listener, mechanism", CASES)
def test_every_protocol_and_mechanism_produces_and_reads_back(secured, listener, mechanism,
                                                              mode):
    produce_and_read_back(secured, secured.props(listener, mechanism), mode)


@pytest.mark.parametrize("mode", ["partition", "librdkafka"])
def test_librdkafka_names_for_sasl_ssl_and_mtls(secured, mode):
    tls = secured.security.tls
    base = {"ssl.ca.location": str(tls.ca)}
    scram = {"bootstrap.servers": secured.cluster.listener_bootstrap("SASLTLS"),
             "security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-512",
             "sasl.username": secured.security.user, "sasl.password": secured.security.password,
             **base}
    produce_and_read_back(secured, scram, mode)
    mtls = {"bootstrap.servers": secured.cluster.listener_bootstrap("MTLS"),
            "security.protocol": "SSL", "ssl.certificate.location": str(tls.client_cert),
            "ssl.key.location": str(tls.client_key), **base}
    produce_and_read_back(secured, mtls, mode)


def test_host_name_verification_is_on_by_default_and_can_be_turned_off(secured):
    props = secured.props("BADNAME")
    bootstrap = props["bootstrap.servers"]

    async def connect(extra: dict[str, str]) -> None:
        settings = build_settings([*props.items(), *extra.items()][1:])
        cluster = Cluster.for_settings(bootstrap, settings)
        try:
            await cluster.connect()
        finally:
            await cluster.close()

    with pytest.raises(BrokerError, match="does not name the host") as info:
        asyncio.run(connect({}))
    assert "ssl.endpoint.identification.algorithm=" in str(info.value)
    asyncio.run(connect({"ssl.endpoint.identification.algorithm": ""}))


def test_topic_creation_with_configs_and_replication_factor(secured):
    bootstrap = secured.cluster.bootstrap  # the PLAINTEXT CLIENT listener
    topic = fresh_topic("sec-configs")

    async def create(replication: str | None, configs: tuple[tuple[str, str], ...]) -> None:
        from producer_core.topic_creation import TopicCreation

        cluster = Cluster(bootstrap, topic_creation=TopicCreation(
            None if replication is None else int(replication), configs))
        try:
            await cluster.connect()
            await cluster.ensure_topic(topic, 2)
        finally:
            await cluster.close()

    asyncio.run(create("1", (("min.insync.replicas", "1"), ("retention.ms", "4321000"))))
    assert asyncio.run(describe(bootstrap, topic))["retention.ms"] == "4321000"
    with pytest.raises(UsageError, match="already exists with replication factor 1"):
        asyncio.run(create("2", ()))
    topic = fresh_topic("sec-rf")
    with pytest.raises(BrokerError, match="refused to create topic .*replication factor"):
        asyncio.run(create("3", ()))


async def describe(bootstrap: str, topic: str) -> dict[str, str]:
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        [response] = await admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, topic)])
        [resource] = response.to_object()["resources"]
        return {entry["config_names"]: entry["config_value"]
                for entry in resource["config_entries"]}
    finally:
        await admin.close()


def test_no_secret_in_output_results_or_results_directory(secured, tmp_path):
    password = secured.security.password
    props = secured.file("secret-check", secured.props("SASLTLS", "SCRAM-SHA-512"))
    assert password in props.read_text()
    out, directory = tmp_path / "cmp.json", tmp_path / "results"
    proc = kbatch("compare-modes", "--modes", "librdkafka,partition", "--command-config",
                  str(props), "--messages", "200", "--rate", "2000", "--no-progress",
                  "--json", str(out), "--out", str(directory))
    assert proc.returncode == 0, proc.stderr
    assert password not in proc.stdout and password not in proc.stderr
    document = out.read_text()
    assert password not in document
    for path in directory.rglob("*"):
        if path.is_file():
            assert password.encode() not in path.read_bytes(), path
    runs = {run["mode"]: run for run in json.loads(document)["runs"]}
    for run_document in runs.values():
        assert run_document["settings"]["sasl.jaas.config"] == "[redacted]"
        assert run_document["settings"]["security.protocol"] == "SASL_SSL"
        assert run_document["messages"]["acknowledged"] == 200
    assert runs["librdkafka"]["librdkafka"]["config"]["sasl.password"] == "[redacted]"


def _error_case(secured: Secured, case: str) -> tuple[dict[str, str], str]:
    tls = secured.security.tls
    if case == "wrong password":
        return secured.props("SASLTLS", "SCRAM-SHA-256", sasl_jaas_config=(
            "org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="{secured.security.user}" password="not-the-password";')), (
            "authentication failed")
    if case == "wrong CA":
        _, _, other = make_ca(secured.directory, "unrelated CA")
        return secured.props("TLS", ssl_truststore_location=str(other)), "not trusted"
    if case == "TLS to a plaintext port":
        return secured.props("TLS", bootstrap_servers=secured.cluster.bootstrap), (
            "is this the broker's TLS listener")
    if case == "mechanism the broker lacks":
        return secured.props("SASLPLAIN", "PLAIN", sasl_mechanism="SCRAM-SHA-512",
                             sasl_jaas_config=secured.props(
                                 "SASLTLS", "SCRAM-SHA-512")["sasl.jaas.config"]), (
            "does not offer sasl.mechanism=SCRAM-SHA-512")
    if case == "no client certificate":
        return secured.props("MTLS", ssl_keystore_location=None, ssl_keystore_type=None), (
            "requires a client certificate")
    assert case == "plaintext to a TLS port"
    return {"bootstrap.servers": secured.cluster.listener_bootstrap("TLS"),
            "ssl.ca.location": str(tls.ca)}, "set security.protocol"


@pytest.mark.parametrize("mode", ["partition", "librdkafka"])
@pytest.mark.parametrize("case", ["wrong password", "wrong CA", "TLS to a plaintext port",
                                  "mechanism the broker lacks", "no client certificate",
                                  "plaintext to a TLS port"])
def test_mistakes_are_one_clear_error_within_seconds(secured, case, mode):
    props, expected = _error_case(secured, case)
    path = secured.file(case.replace(" ", "-"), props)
    load_properties(path)  # the file itself is well-formed
    began = time.monotonic()
    proc = kbatch("produce", "--mode", mode, "--command-config", str(path), "--messages",
                  "50", "--no-progress", timeout=60)
    elapsed = time.monotonic() - began
    error = one_paragraph_error(proc, 1)
    assert expected in error, error
    assert secured.security.password not in proc.stdout + proc.stderr
    assert elapsed < 20, f"{case}: {elapsed:.1f} s (shared machine)"


def test_workload_file_topics_get_the_topic_options(secured, tmp_path):
    first, second = fresh_topic("wl-a"), fresh_topic("wl-b")
    workload = tmp_path / "two.yaml"
    workload.write_text(f"messages: 100\ntopics:\n"
                        f"  - {{name: {first}, partitions: 2, rate: {{constant: 1000}}}}\n"
                        f"  - {{name: {second}, partitions: 3, rate: {{constant: 1000}}}}\n")
    bootstrap = secured.cluster.bootstrap
    proc = kbatch("produce", "--bootstrap-servers", bootstrap, "--workload", str(workload),
                  "--topic-config", "retention.ms=777000", "--replication-factor", "1",
                  "--no-progress")
    assert proc.returncode == 0, proc.stderr
    for topic in (first, second):
        assert asyncio.run(describe(bootstrap, topic))["retention.ms"] == "777000"
    workload.write_text(workload.read_text().replace(first, fresh_topic("wl-c"))
                        .replace(second, fresh_topic("wl-d")))
    error = one_paragraph_error(kbatch("produce", "--bootstrap-servers", bootstrap,
                                       "--workload", str(workload), "--replication-factor",
                                       "3", "--no-progress"), 1)
    assert "refused to create topic 'wl-c" in error and "replication factor" in error.lower()


@pytest.mark.parametrize("listener, mechanism", [
    ("MTLS", None), ("SASLTLS", "SCRAM-SHA-512"), ("SASLPLAIN", "PLAIN")])
def test_kafka_java_takes_the_same_security(secured, listener, mechanism):
    """Mode kafka-java gets the security under the Java client's names (PEM inline, JAAS
    built from the user's settings) and reads back every message; the results' copy of the
    driver's properties is redacted."""
    produce_and_read_back(secured, secured.props(listener, mechanism), "kafka-java")


def test_kafka_java_results_hold_no_secret(secured, tmp_path):
    password = secured.security.password
    props = secured.file("java-secret", secured.props("SASLTLS", "SCRAM-SHA-512"))
    out = tmp_path / "run.json"
    proc = kbatch("produce", "--mode", "kafka-java", "--command-config", str(props),
                  "--messages", "100", "--rate", "1000", "--no-progress", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    assert password not in proc.stdout + proc.stderr + out.read_text()
    java = json.loads(out.read_text())["kafka_java"]["properties"]
    assert java["sasl.jaas.config"] == "[redacted]"
    assert java["security.protocol"] == "SASL_SSL"
