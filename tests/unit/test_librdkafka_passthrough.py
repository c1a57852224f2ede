"""Mode librdkafka passes librdkafka's own properties on; librdkafka judges them; kbatch's
names keep their meaning; secrets are redacted in what results show."""

from __future__ import annotations

import pytest

from producer_core.config import build_settings
from producer_core.engine.drivers.librdkafka import librdkafka_config, shown_config
from producer_core.errors import ConfigError, UsageError
from producer_core.security import REDACTED
from producer_core.topic_creation import TopicCreation, parse_topic_creation


def test_unknown_names_are_librdkafka_properties():
    settings = build_settings({"queue.buffering.max.ms": "5", "linger.ms": "20",
                               "socket.nagle.disable": "true"}, mode="librdkafka")
    config, used = librdkafka_config(settings)
    assert config["queue.buffering.max.ms"] == "5" and config["linger.ms"] == "20"
    assert config["socket.nagle.disable"] == "true"
    assert used["queue.buffering.max.ms"] == "5"


def test_librdkafkas_own_error_for_an_unknown_property_is_a_usage_error():
    with pytest.raises(ConfigError, match='No such configuration property: "no.such.thing"'):
        build_settings({"no.such.thing": "1"}, mode="librdkafka")
    with pytest.raises(ConfigError, match='Invalid value .*"queue.buffering.max.ms"'):
        build_settings({"queue.buffering.max.ms": "soon"}, mode="librdkafka")


def test_other_modes_accept_librdkafka_names_as_not_used_and_refuse_typos():
    settings = build_settings({"queue.buffering.max.ms": "5"}, mode="partition")
    assert settings.foreign_properties == (("queue.buffering.max.ms", "5"),)
    assert "not used by this mode (partition): queue.buffering.max.ms" in settings.warnings
    with pytest.raises(ConfigError, match="Did you mean 'queue.buffering.max.ms'"):
        build_settings({"queue.buffering.max.mss": "5"}, mode="partition")


def test_kbatch_names_keep_their_meaning_and_clashes_are_refused():
    config, _ = librdkafka_config(build_settings({"buffer.memory": "2048"}, mode="librdkafka"))
    assert config["queue.buffering.max.kbytes"] == "2"
    with pytest.raises(ConfigError, match="message.max.bytes .set through max.request.size"):
        build_settings({"max.request.size": "2000000", "message.max.bytes": "3000000"},
                       mode="librdkafka")
    with pytest.raises(ConfigError, match="no equivalent of broker.linger.ms"):
        build_settings({"broker.linger.ms": "5"}, mode="librdkafka")


@pytest.mark.parametrize("key", ["bootstrap.servers", "statistics.interval.ms"])
def test_properties_kbatch_sets_itself_are_refused(key):
    with pytest.raises(ConfigError, match=f"Unknown setting '{key}'"):
        build_settings({key: "1"}, mode="librdkafka")


def test_secret_passthrough_values_are_redacted():
    settings = build_settings({"sasl.oauthbearer.client.secret": "hush-hush"},
                              mode="librdkafka")
    config, used = librdkafka_config(settings)
    assert config["sasl.oauthbearer.client.secret"] == "hush-hush"
    assert used["sasl.oauthbearer.client.secret"] == REDACTED
    assert shown_config(config)["sasl.oauthbearer.client.secret"] == REDACTED
    assert settings.as_dict()["sasl.oauthbearer.client.secret"] == REDACTED


def test_security_goes_to_librdkafka_under_its_names():
    settings = build_settings({"security.protocol": "SASL_PLAINTEXT",
                               "sasl.mechanism": "PLAIN", "sasl.username": "u",
                               "sasl.password": "pw-123"}, mode="librdkafka")
    config, used = librdkafka_config(settings)
    assert config["security.protocol"] == "sasl_plaintext"
    assert config["sasl.password"] == "pw-123"
    assert used["sasl.password"] == REDACTED and used["sasl.username"] == "u"


def test_topic_creation_options():
    assert parse_topic_creation(None, []) == TopicCreation()
    creation = parse_topic_creation(3, ["min.insync.replicas=2", "retention.ms=1",
                                        "min.insync.replicas=3"])
    assert creation.replication_factor == 3
    assert creation.configs == (("min.insync.replicas", "3"), ("retention.ms", "1"))
    assert creation.as_dict() == {"topic.replication.factor": 3,
                                  "topic.config.min.insync.replicas": "3",
                                  "topic.config.retention.ms": "1"}
    with pytest.raises(UsageError, match="Malformed --topic-config"):
        parse_topic_creation(None, ["min.insync.replicas"])
    with pytest.raises(UsageError, match="--replication-factor must be"):
        parse_topic_creation(0, [])
