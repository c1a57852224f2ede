"""Modes franz-go, sarama and kafka-go: which settings reach each Go client and as what,
the refusal of a setting a client lacks, and the Go toolchain checked before any broker."""

from __future__ import annotations

import pytest

from producer_core.config import build_settings
from producer_core.engine.drivers.go_clients import driver
from producer_core.engine.modes import MODES, mode
from producer_core.engine.modes.go_client_settings import OPTIONS, client_properties
from producer_core.engine.modes.go_toolchain import GO_ENV
from producer_core.errors import ConfigError, UsageError

GO_MODES = ("franz-go", "sarama", "kafka-go")


def test_the_three_go_clients_are_modes_with_a_driver():
    for name in GO_MODES:
        assert name in MODES
        spec = mode(name)
        assert spec.driver == "producer_core.engine.drivers.go_clients.run:run_async"
        assert spec.window == "linger.ms" and not spec.transactions


@pytest.mark.parametrize("name", GO_MODES)
def test_batching_settings_pass_only_when_given_so_each_client_keeps_its_defaults(name):
    settings = build_settings(mode=name)
    properties = client_properties(name, settings.explicit, settings.values)
    assert "linger.ms" not in properties and "batch.size" not in properties
    assert properties["acks"] == "all"  # kbatch's default, passed as librdkafka's is
    if name == "kafka-go":
        assert "enable.idempotence" not in properties  # it has no idempotent producer
    else:
        assert properties["enable.idempotence"] == "true"
    given = build_settings({"linger.ms": "25", "compression.type": "lz4"}.items(), mode=name)
    properties = client_properties(name, given.explicit, given.values)
    assert properties["linger.ms"] == "25" and properties["compression.type"] == "lz4"


def test_linger_maps_to_each_clients_own_option():
    assert OPTIONS["franz-go"]["linger.ms"] == "ProducerLinger"
    assert OPTIONS["sarama"]["linger.ms"] == "Producer.Flush.Frequency"
    assert OPTIONS["kafka-go"]["linger.ms"] == "Writer.BatchTimeout"


@pytest.mark.parametrize("name,key,value", [
    ("sarama", "buffer.memory", "2000000"), ("sarama", "delivery.timeout.ms", "60000"),
    ("kafka-go", "max.in.flight.requests.per.connection", "1"),
    ("kafka-go", "max.request.size", "2000000"),
    ("franz-go", "broker.linger.ms", "10"), ("franz-go", "max.block.ms", "1000"),
])
def test_a_setting_the_client_lacks_is_refused_by_name(name, key, value):
    with pytest.raises(ConfigError, match=f"Mode {name} has no equivalent of {key}") as info:
        build_settings({key: value}.items(), mode=name)
    assert "linger.ms" in str(info.value)  # the accepted list


def test_kafka_go_refuses_idempotence_asked_for():
    with pytest.raises(ConfigError, match="kafka-go has no idempotent producer"):
        build_settings({"enable.idempotence": "true"}.items(), mode="kafka-go")
    settings = build_settings({"enable.idempotence": "false", "acks": "1"}.items(),
                              mode="kafka-go")
    assert client_properties("kafka-go", settings.explicit, settings.values) == {
        "acks": "1", "enable.idempotence": "false"}


def test_no_go_is_a_usage_error_when_the_driver_is_not_built(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv(GO_ENV, str(tmp_path / "no-go"))
    with pytest.raises(UsageError, match="needs the Go toolchain"):
        build_settings(mode="sarama")
    with pytest.raises(UsageError, match="needs the Go toolchain"):
        driver.prepare("sarama", progress=lambda _: None)


def test_a_built_driver_starts_without_go(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv(GO_ENV, str(tmp_path / "no-go"))
    built = driver.build_dir() / driver.BINARY
    built.parent.mkdir(parents=True)
    built.write_bytes(b"")
    assert driver.prepare("franz-go").command() == [str(built), "franz-go"]


def test_the_sources_are_package_data_with_a_go_sum():
    sources = driver.sources()
    assert {"go.mod", "go.sum", "main.go", "wire.go"} <= set(sources)
    assert b"github.com/twmb/franz-go" in sources["go.sum"]


def test_the_protocol_page_lists_every_option_of_every_go_client():
    from pathlib import Path

    page = (Path(__file__).parents[2] / "docs/architecture/client-drivers.md").read_text()
    rows = {line.split("|")[1].strip(" `"): line for line in page.splitlines()
            if line.startswith("| `")}
    for client, options in OPTIONS.items():
        for setting, option in options.items():
            assert option.split()[0] in rows[setting], (client, setting, option)


def test_tls_or_sasl_is_refused_when_the_settings_are_built():
    with pytest.raises(ConfigError, match="PLAINTEXT only"):
        build_settings({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                        "sasl.username": "a", "sasl.password": "b"}.items(), mode="franz-go")
