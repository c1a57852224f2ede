"""Mode librdkafka: kbatch settings under librdkafka's names, and what is refused."""

from __future__ import annotations

import pytest

from producer_core.config import MODES, build_settings
from producer_core.engine.drivers.librdkafka import librdkafka_config
from producer_core.errors import ConfigError


def test_librdkafka_and_java_are_modes():
    assert "librdkafka" in MODES and "java" in MODES


def test_explicit_settings_are_passed_under_librdkafka_names():
    settings = build_settings({
        "linger.ms": "500", "batch.size": "65536", "batch.num.messages": "500",
        "acks": "all", "max.in.flight.requests.per.connection": "3",
        "compression.type": "lz4", "max.request.size": "2000000",
        "buffer.memory": "1048577", "max.block.ms": "10",
    }, mode="librdkafka")
    config, used = librdkafka_config(settings)
    assert config == {
        "acks": "all", "client.id": "kbatch", "linger.ms": "500", "batch.size": "65536",
        "enable.idempotence": "true",
        "batch.num.messages": "500", "max.in.flight.requests.per.connection": "3",
        "compression.type": "lz4", "message.max.bytes": "2000000",
        "queue.buffering.max.kbytes": "1025",
    }
    assert used["max.request.size"] == 2000000 and used["max.block.ms"] == 10


def test_defaults_stay_librdkafkas_except_delivery_and_client_id():
    config, used = librdkafka_config(build_settings(mode="librdkafka"))
    expected = {"acks": "all", "client.id": "kbatch", "enable.idempotence": "true"}
    assert config == expected and used == expected


def test_idempotence_off_is_passed_on():
    config, _ = librdkafka_config(build_settings(
        [("enable.idempotence", "false"), ("acks", "1")], mode="librdkafka"))
    assert config["enable.idempotence"] == "false" and config["acks"] == "1"


@pytest.mark.parametrize("key", ["broker.linger.ms", "broker.batch.max.partitions",
                                 "broker.batch.max.bytes", "produce.request.max.partitions"])
def test_settings_librdkafka_does_not_have_are_refused(key):
    with pytest.raises(ConfigError, match=f"no equivalent of {key}") as info:
        build_settings({key: "5"}, mode="librdkafka")
    assert "#1700" in str(info.value) and "linger.ms" in str(info.value)


def test_batch_num_messages_outside_librdkafka_is_a_warning():
    settings = build_settings({"batch.num.messages": "5"}, mode="partition")
    assert any("librdkafka only" in w for w in settings.warnings)
