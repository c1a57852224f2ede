"""Where the cluster address and settings come from: --bootstrap-servers, -X, the file."""

from __future__ import annotations

import pytest

from cli.options.client import client_inputs, finish_settings
from producer_core.config import build_settings
from producer_core.errors import ConfigError, UsageError


@pytest.fixture()
def props(tmp_path):
    path = tmp_path / "client.properties"
    path.write_text("bootstrap.servers=file:9092\nlinger.ms=30\n\nacks=all\n")
    return path


def test_bootstrap_precedence(props):
    assert client_inputs(props, [], None, ["partition"]).bootstrap == "file:9092"
    assert client_inputs(props, ["bootstrap.servers=x:1"], None, ["partition"]).bootstrap == (
        "x:1")
    assert client_inputs(props, ["bootstrap.servers=x:1"], "flag:2",
                         ["partition"]).bootstrap == "flag:2"
    assert client_inputs(None, [], None, ["partition"]).bootstrap is None


def test_x_comes_after_the_file_so_it_wins(props):
    inputs = client_inputs(props, ["linger.ms=5"], None, ["partition"])
    assert inputs.assignments == (("linger.ms", "30"), ("acks", "all"), ("linger.ms", "5"))
    assert build_settings(inputs.assignments)["linger.ms"] == 5


def test_file_keys_are_checked_for_every_mode_with_their_line(tmp_path):
    path = tmp_path / "c.properties"
    path.write_text("linger.ms=1\n# c\nplugin.custom.knob=5\n")
    assert client_inputs(path, [], None, ["librdkafka"]).assignments[-1] == (
        "plugin.custom.knob", "5")
    with pytest.raises(ConfigError, match=r"c.properties, line 3: Unknown setting"):
        client_inputs(path, [], None, ["partition"])


def test_security_without_a_cluster_and_topic_creation(props):
    inputs = client_inputs(None, ["security.protocol=SSL"], None, ["partition"], 2,
                           ["min.insync.replicas=2"])
    with pytest.raises(UsageError, match="needs a cluster"):
        finish_settings(build_settings(inputs.assignments), inputs)
    inputs = client_inputs(props, [], None, ["partition"], 2, ["min.insync.replicas=2"])
    settings = finish_settings(build_settings(inputs.assignments), inputs)
    assert settings.topic_creation.replication_factor == 2
    assert settings.topic_creation.configs == (("min.insync.replicas", "2"),)
