"""Mode librdkafka-broker's pure parts (issue 45): its settings are mode broker's names,
always passed to the patched library; what it refuses and ignores; the registry derives
its window; and the patched library's collector statistics become the results'
``collector`` section, the one mode broker writes."""

from __future__ import annotations

import pytest

from producer_core.config import build_settings
from producer_core.engine.drivers.librdkafka_collector import CollectorStats
from producer_core.engine.modes import MODES, mode
from producer_core.engine.modes.librdkafka import librdkafka_config
from producer_core.errors import ConfigError

NAME = "librdkafka-broker"


def test_the_collector_settings_are_always_passed_under_the_seeds_names() -> None:
    config, used = librdkafka_config(build_settings(mode=NAME), NAME)
    assert config["broker.linger.ms"] == "5"  # the seed's defaults, said explicitly
    assert config["broker.batch.max.partitions"] == "-1"
    assert config["broker.batch.max.bytes"] == "-1"
    assert config["acks"] == "all" and config["enable.idempotence"] == "true"
    assert "linger.ms" not in config and "produce.request.max.partitions" not in config
    assert used["broker.linger.ms"] == 5


def test_mode_brokers_settings_map_one_to_one() -> None:
    settings = build_settings({"broker.linger.ms": "500", "broker.batch.max.partitions": "100",
                               "broker.batch.max.bytes": "10485760",
                               "produce.request.max.partitions": "50",
                               "max.request.size": "2097152"}, mode=NAME)
    config, _ = librdkafka_config(settings, NAME)
    assert config["broker.linger.ms"] == "500"
    assert config["broker.batch.max.partitions"] == "100"
    assert config["broker.batch.max.bytes"] == "10485760"
    assert config["produce.request.max.partitions"] == "50"
    assert config["message.max.bytes"] == "2097152"  # mode librdkafka's mapping stays


def test_linger_ms_is_ignored_with_a_warning_as_in_mode_broker() -> None:
    settings = build_settings({"linger.ms": "20"}, mode=NAME)
    config, _ = librdkafka_config(settings, NAME)
    assert "linger.ms" not in config
    assert any("linger.ms is ignored in mode librdkafka-broker" in w for w in settings.warnings)


def test_settings_the_library_has_no_equivalent_of_are_refused() -> None:
    with pytest.raises(ConfigError, match="librdkafka-broker has no equivalent of "
                                          "adaptive.linger.max.ms"):
        build_settings({"adaptive.linger.max.ms": "100"}, mode=NAME)


def test_stock_librdkafka_still_refuses_the_collector_settings() -> None:
    with pytest.raises(ConfigError, match="no equivalent of broker.linger.ms"):
        build_settings({"broker.linger.ms": "100"}, mode="librdkafka")
    config, _ = librdkafka_config(build_settings(mode="librdkafka"))
    assert "broker.linger.ms" not in config


def test_the_registry_derives_its_window_and_place() -> None:
    spec = mode(NAME)
    assert NAME in MODES and MODES.index(NAME) == MODES.index("librdkafka") + 1
    assert spec.window == spec.sweep_window == "broker.linger.ms"
    assert spec.install and spec.driver and not spec.request_log and spec.versions is None


def test_compare_modes_linger_ms_sets_the_collectors_window() -> None:
    from producer_core.analysis.compare import parse_mode_configs

    runs = parse_mode_configs(["broker", NAME], [], (), 500)
    for run in runs:
        assert run.settings["broker.linger.ms"] == 500


def test_collector_statistics_become_mode_brokers_section() -> None:
    stats = CollectorStats()
    assert stats.section() is None and not stats.seen  # stock librdkafka: no section
    stats.update(1, {"enabled": True, "sends": 10, "requests": 20, "partitions": 3000,
                     "partitions_avg": 300.0, "wait_us": 5_000_000, "wait_us_avg": 500_000,
                     "trigger_flush": 1, "trigger_partitions": 0, "trigger_bytes": 2,
                     "trigger_linger": 7})
    stats.update(1, None)  # an emit without the object changes nothing
    stats.update(2, {"enabled": True, "sends": 30, "requests": 30, "partitions": 3000,
                     "partitions_avg": 100.0, "wait_us": 3_000_000, "wait_us_avg": 100_000,
                     "trigger_flush": 0, "trigger_partitions": 0, "trigger_bytes": 0,
                     "trigger_linger": 30})
    section = stats.section()
    assert section is not None
    assert section["sends"] == 40
    assert section["sends_by_reason"] == {"flush": 1, "max_partitions": 0, "max_bytes": 2,
                                          "broker_linger": 37}
    assert section["partitions_per_send"] == {"mean": 150.0}  # totals over sends
    assert section["requests_per_send"] == {"mean": 1.25}
    assert section["collecting_for"] == {"mean_ms": 200.0}
    assert set(stats.by_broker()) == {"1", "2"}


def test_a_collector_that_is_off_makes_no_section() -> None:
    stats = CollectorStats()
    stats.update(1, {"enabled": False, "sends": 0})  # broker.linger.ms=-1: linger.ms
    assert stats.section() is None


def test_no_bound_on_partitions_per_request_is_the_librarys_largest() -> None:
    settings = build_settings({"produce.request.max.partitions": "-1"}, mode=NAME)
    assert librdkafka_config(settings, NAME)[0]["produce.request.max.partitions"] == "100000"


def test_the_patched_librarys_statistics_make_the_runs_figures() -> None:
    """One statistics emit of the patched library, as LibrdkafkaRun reads it: Produce
    requests per broker, the partitions they carried, and each broker's collector."""
    import json

    from producer_core.engine.drivers.librdkafka import LibrdkafkaRun
    from producer_core.workload.workload import Workload

    run = LibrdkafkaRun(Workload(topic="t", partitions=6, rate=10, duration_s=1),
                        build_settings(mode=NAME), "127.0.0.1:1", mode=NAME)
    collector = {"enabled": True, "sends": 4, "requests": 4, "partitions": 12,
                 "partitions_avg": 3.0, "wait_us": 400_000, "wait_us_avg": 100_000,
                 "trigger_flush": 1, "trigger_partitions": 0, "trigger_bytes": 0,
                 "trigger_linger": 3}
    brokers = {f"b{n}": {"nodeid": n, "req": {"Produce": 4}, "produce_requests": 4,
                         "produce_partitions": 12, "batch_collector": collector}
               for n in (1, 2)}
    run._on_stats(json.dumps({"brokers": brokers, "topics": {
        "t": {"batchcnt": {"cnt": 24, "sum": 24}, "batchsize": {"cnt": 24, "sum": 2400,
                                                                 "p50": 100, "max": 100}}}}))
    doc = run._results(0.0).to_dict()
    assert doc["mode"] == NAME and doc["requests_sent"] == 8
    assert doc["partitions_per_request"]["mean"] == 3.0  # 24 partition sets in 8 requests
    assert doc["librdkafka"]["produce_partitions_by_broker"] == {"1": 12, "2": 12}
    assert doc["collector"]["sends"] == 8
    assert doc["collector"]["sends_by_reason"]["broker_linger"] == 6
    assert set(doc["librdkafka"]["batch_collector"]) == {"1", "2"}
    assert not any("partition batches in" in w for w in doc["warnings"])


def test_the_tables_name_the_collectors_sends_and_the_patched_build() -> None:
    from cli.render.tables import client_text, collector_text

    run = {"collector": {"sends": 167, "sends_by_reason": {
        "flush": 1, "max_partitions": 0, "max_bytes": 0, "broker_linger": 166},
        "partitions_per_send": {"mean": 333.25}},
        "librdkafka": {"version": "2.12.1", "confluent_kafka_version": "2.12.1",
                       "client_build": {"sha256": "44f012bad618" + "0" * 52},
                       "patches": ["0001-a.patch", "0002-b.patch"]}}
    assert collector_text(run) == ("167 sends (flush 1, broker_linger 166), 333.2 partitions "
                                   "per send")
    assert client_text(run) == ("librdkafka 2.12.1 (confluent-kafka 2.12.1), build sha256 "
                                "44f012bad618, patches 0001-a.patch, 0002-b.patch")
    assert collector_text({"mode": "partition"}) is None
