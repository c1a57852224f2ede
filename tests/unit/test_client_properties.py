"""Shared client files (Confluent Cloud's, MSK's): every name a real client knows is
accepted and listed once; a misspelt name is refused with the closest known one."""

from __future__ import annotations

import pytest

from cli.options.client import client_inputs
from producer_core.brokers.kafka_security import make_tls_files
from producer_core.client_properties import (
    JAVA_CONSUMER,
    JAVA_PRODUCER,
    LIBRDKAFKA_PRODUCER,
    closest_name,
    is_foreign,
)
from producer_core.config import build_settings
from producer_core.errors import ConfigError

CONFLUENT_CLOUD = """\
# Required connection configs for Kafka producer, consumer, and admin
bootstrap.servers={bootstrap}
security.protocol=PLAINTEXT
sasl.mechanism=PLAIN
sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\
    username='KEY' password='hush-hush';
client.dns.lookup=use_all_dns_ips
session.timeout.ms=45000
acks=all
key.serializer=org.apache.kafka.common.serialization.StringSerializer
value.serializer=org.apache.kafka.common.serialization.StringSerializer
schema.registry.url=https://psrc-00000.us-east-2.aws.confluent.cloud
basic.auth.credentials.source=USER_INFO
basic.auth.user.info=SR_KEY:hush-hush
"""

MSK_SCRAM = """\
bootstrap.servers={bootstrap}
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\
    username="alice" password="hush-hush";
ssl.truststore.location={truststore}
metadata.max.age.ms=60000
reconnect.backoff.ms=50
send.buffer.bytes=131072
receive.buffer.bytes=65536
compression.type=lz4
"""


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    return make_tls_files(tmp_path_factory.mktemp("tls"))


def _settings(path, mode, overrides=()):
    inputs = client_inputs(path, list(overrides), None, [mode])
    return inputs, build_settings(inputs.assignments, mode=mode)


@pytest.mark.parametrize("mode", ["partition", "java", "broker", "librdkafka"])
def test_a_confluent_cloud_file_is_accepted_and_its_extras_listed_once(tmp_path, mode):
    path = tmp_path / "ccloud.properties"
    path.write_text(CONFLUENT_CLOUD.format(bootstrap="127.0.0.1:9092"))
    inputs, settings = _settings(path, mode)
    assert inputs.bootstrap == "127.0.0.1:9092"
    assert settings["acks"] == "all"
    unused = [w for w in settings.warnings if "not used by this mode" in w]
    assert len(unused) == 1
    for key in ("key.serializer", "value.serializer", "session.timeout.ms",
                "schema.registry.url", "basic.auth.user.info"):
        assert key in unused[0]
    assert "hush-hush" not in " ".join(settings.warnings)
    assert "hush-hush" not in str(settings.as_dict())
    if mode == "librdkafka":  # librdkafka has client.dns.lookup: it gets it
        assert ("client.dns.lookup", "use_all_dns_ips") in settings.librdkafka_properties
    else:
        assert "client.dns.lookup" in unused[0]


def test_the_java_producer_gets_the_properties_it_reads_and_nothing_else(tmp_path, tls):
    path = tmp_path / "msk.properties"
    path.write_text(MSK_SCRAM.format(bootstrap="b-1.example:9096", truststore=tls.ca))
    _, settings = _settings(path, "kafka-java", ["session.timeout.ms=45000"])
    assert settings.security.protocol == "SASL_SSL"
    assert settings["compression.type"] == "lz4"
    from producer_core.client_properties import java_producer_passthrough

    passed = java_producer_passthrough(settings.foreign_properties)
    assert passed == {"metadata.max.age.ms": "60000", "reconnect.backoff.ms": "50",
                      "send.buffer.bytes": "131072", "receive.buffer.bytes": "65536"}
    (line,) = [w for w in settings.warnings if "passed on to the Java producer" in w]
    assert line.endswith("not used by this mode (kafka-java): session.timeout.ms")


def test_an_msk_file_in_an_engine_mode_lists_the_socket_settings_as_not_used(tmp_path, tls):
    path = tmp_path / "msk.properties"
    path.write_text(MSK_SCRAM.format(bootstrap="b-1.example:9096", truststore=tls.ca))
    _, settings = _settings(path, "partition")
    (line,) = [w for w in settings.warnings if "not used" in w]
    assert line == ("not used by this mode (partition): metadata.max.age.ms, "
                    "receive.buffer.bytes, reconnect.backoff.ms, send.buffer.bytes")


@pytest.mark.parametrize(("key", "guess"), [
    ("lingr.ms", "linger.ms"), ("metadata.max.age", "metadata.max.age.ms"),
    ("key.serialiser", "key.serializer"), ("sesion.timeout.ms", "session.timeout.ms"),
])
def test_a_misspelt_name_is_refused_with_the_closest_known_one(key, guess):
    with pytest.raises(ConfigError) as error:
        build_settings({key: "5"}, mode="partition")
    message = str(error.value)
    assert f"Did you mean {guess!r}?" in message
    assert "\n" not in message and len(message) < 300  # one short paragraph, no list


def test_a_name_unlike_any_is_refused_without_a_guess():
    with pytest.raises(ConfigError) as error:
        build_settings({"zzz": "1"}, mode="java")
    assert "Unknown setting 'zzz'" in str(error.value) and "Did you mean" not in str(error.value)


def test_the_catalogues_come_from_the_clients_sources():
    assert {"key.serializer", "linger.ms", "client.dns.lookup"} <= JAVA_PRODUCER
    assert {"session.timeout.ms", "group.id", "auto.offset.reset"} <= JAVA_CONSUMER
    assert {"queue.buffering.max.ms", "socket.send.buffer.bytes"} <= LIBRDKAFKA_PRODUCER
    assert "session.timeout.ms" not in LIBRDKAFKA_PRODUCER  # a consumer property there
    assert is_foreign("basic.auth.user.info") and not is_foreign("lingr.ms")
    assert closest_name("lingerms", []) == "linger.ms"
