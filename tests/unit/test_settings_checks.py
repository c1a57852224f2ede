"""CLI-side checks of `-X`: a setting of another mode is named as ignored (issue 17: only
some were), and a client.id a broker would choke on is refused as input."""

from __future__ import annotations

import pytest

from cli.options.settings_checks import check_setting_texts, other_mode_warnings
from producer_core.config import build_settings
from producer_core.errors import UsageError


def test_a_setting_of_another_mode_is_named_as_ignored():
    settings = other_mode_warnings(build_settings([("broker.linger.ms", "5")], "partition"),
                                   "partition")
    assert settings.warnings == (
        "broker.linger.ms applies to modes broker, librdkafka-broker only; ignored in mode "
        "partition",)
    collector = other_mode_warnings(build_settings([("broker.batch.max.partitions", "4")],
                                                   "java"), "java")
    assert collector.warnings == ("broker.batch.max.partitions applies to modes broker, "
                                  "librdkafka-broker, adaptive, aimd only; ignored in mode "
                                  "java",)


def test_a_setting_a_reference_client_passes_on_is_not_called_ignored():
    # kafka-java hands linger.ms to the Java producer; mode none really ignores it
    java = build_settings([("linger.ms", "5")], "kafka-java")
    assert other_mode_warnings(java, "kafka-java").warnings == ()
    none = other_mode_warnings(build_settings([("linger.ms", "5")], "none"), "none")
    assert none.warnings == ("linger.ms applies to modes partition, java, librdkafka, "
                             "kafka-java, franz-go, sarama, kafka-go only; ignored in mode "
                             "none",)


def test_no_double_warning_and_none_for_own_settings():
    already = build_settings([("linger.ms", "5")], "broker")  # config.py warns already
    assert other_mode_warnings(already, "broker").warnings == already.warnings
    own = build_settings([("broker.linger.ms", "5"), ("acks", "all")], "broker")
    assert other_mode_warnings(own, "broker").warnings == ()


@pytest.mark.parametrize(("text", "fragment"), [
    ("client.id=" + "c" * 40_000, "40,000 characters; at most 1,000"),
    ("client.id=a\x07b", "control characters"),
    ("partition:client.id=" + "c" * 2000, "2,000 characters"),
])
def test_client_id_is_refused_as_input(text, fragment):
    with pytest.raises(UsageError, match=fragment):
        check_setting_texts([text])


def test_reasonable_client_ids_pass():
    check_setting_texts(["client.id=kbatch-ci-42", "linger.ms=5", "broker:client.id=x"])
