"""`CLIENT@VERSION` mode labels (issue 44): parsing, the registry, cache keys, the Java
driver's per-release source, and Maven's "no such version" turned into a usage error."""

from __future__ import annotations

from pathlib import Path

import pytest

from producer_core import downloads
from producer_core.analysis.compare import parse_modes
from producer_core.analysis.sweep import Cell
from producer_core.config import MODES, build_settings
from producer_core.engine.drivers.kafka_java import driver
from producer_core.engine.modes import install_clients, mode, mode_problem, versioned_modes
from producer_core.engine.modes.versions import ModeLabel, base_mode, parse_label, topic_part
from producer_core.errors import ConfigError, UsageError


def test_labels_parse_into_mode_and_version() -> None:
    assert parse_label("kafka-java@3.9.1") == ModeLabel("kafka-java", "3.9.1")
    assert parse_label("partition") == ModeLabel("partition")
    assert parse_label(" kafka-java@4.0.0-rc1 ").label == "kafka-java@4.0.0-rc1"
    assert parse_label("franz-go@v1.17.0").version == "v1.17.0"  # Go's own spelling
    assert base_mode("kafka-java@3.9.1") == "kafka-java"


@pytest.mark.parametrize("text", ["kafka-java@", "kafka-java@../x", "kafka-java@a b",
                                  "kafka-java@3.9.1@4", "kafka-java@.1"])
def test_malformed_versions_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="release name"):
        parse_label(text)


def test_registry_resolves_a_label_under_its_own_name() -> None:
    spec = mode("kafka-java@3.9.1")
    assert spec.name == "kafka-java@3.9.1"
    assert spec.driver == mode("kafka-java").driver
    assert "kafka-java" in versioned_modes() and "partition" not in versioned_modes()
    assert mode_problem("kafka-java@4.4.0") is None
    assert "takes no @VERSION" in (mode_problem("partition@1") or "")
    assert "Unknown mode" in (mode_problem("nope@1") or "")
    with pytest.raises(ValueError, match="takes no @VERSION"):
        mode("java@1.0")


def test_settings_and_modes_accept_labels() -> None:
    settings = build_settings([("linger.ms", "0")], mode="kafka-java@3.9.1")
    assert settings["linger.ms"] == 0
    with pytest.raises(ConfigError, match="takes no @VERSION"):
        build_settings([], mode="partition@2")
    both = parse_modes("kafka-java@3.9.1,kafka-java@4.4.0", MODES)
    assert both == ["kafka-java@3.9.1", "kafka-java@4.4.0"]
    with pytest.raises(UsageError, match="names a mode twice"):
        parse_modes("kafka-java@3.9.1,kafka-java@3.9.1", MODES)
    with pytest.raises(UsageError, match="takes no @VERSION"):
        parse_modes("partition@1", MODES)


def test_a_label_becomes_a_legal_topic_part_and_a_sweep_word() -> None:
    assert topic_part("kafka-java@3.9.1") == "kafka-java-3.9.1"
    one = Cell(mode="kafka-java@3.9.1", window=5)
    other = Cell(mode="kafka-java@4.4.0", window=5)
    assert one.id == "kafka-java_v3p9p1_w5" and one.id != other.id


def test_each_release_is_its_own_cache_key(tmp_path: Path, monkeypatch) -> None:
    fetched: list[tuple[Path, list[str]]] = []

    def fake_fetch(target: Path, progress, deps, marker, label) -> None:
        fetched.append((target, deps))
        (target / "libs").mkdir(parents=True)

    monkeypatch.setattr(driver, "cache_root", lambda: tmp_path)
    monkeypatch.setattr(driver, "fetch_jars", fake_fetch)
    monkeypatch.setattr(driver.shutil, "which", lambda name: "/usr/bin/" + name)
    lines: list[str] = []
    assert driver.client_libs(lines.append, "3.9.1") == tmp_path / "kafka-clients-3.9.1" / "libs"
    driver.client_libs(lines.append, "3.9.1")  # cached: Maven is not asked again
    driver.client_libs(lines.append, None)  # the pinned release
    assert [t.name for t, _ in fetched] == ["kafka-clients-3.9.1",
                                           f"kafka-clients-{driver.KAFKA_CLIENTS_VERSION}"]
    assert fetched[0][1][0] == "org.apache.kafka:kafka-clients:3.9.1"


def test_a_release_maven_lacks_is_a_usage_error(tmp_path: Path, monkeypatch) -> None:
    def missing(*args, **kwargs) -> None:
        raise downloads.ArtifactMissing("no such artifact")

    monkeypatch.setattr(driver, "cache_root", lambda: tmp_path)
    monkeypatch.setattr(driver, "fetch_jars", missing)
    monkeypatch.setattr(driver.shutil, "which", lambda name: "/usr/bin/" + name)
    with pytest.raises(UsageError, match=r"kafka-clients 3\.99\.0 is not a release") as info:
        driver.client_libs(lambda text: None, "3.99.0")
    assert "Nothing was started" in str(info.value) and "\n" not in str(info.value)


def test_mavens_not_found_is_told_from_other_failures() -> None:
    assert downloads._not_found(
        "[ERROR] Failed to execute goal on project x: Could not resolve dependencies for "
        "project k:x:pom:1: org.apache.kafka:kafka-clients:jar:9.9.9 was not found in REPO")
    assert downloads._not_found("Could not find artifact org.apache.kafka:kafka-clients")
    assert not downloads._not_found("Could not transfer artifact ...: Connection refused")


def test_install_runs_each_clients_installer_once(monkeypatch) -> None:
    calls: list[str | None] = []
    monkeypatch.setattr(driver, "prepare", lambda progress, version: calls.append(version))
    install_clients(["partition", "kafka-java@3.9.1", "kafka-java@3.9.1", "kafka-java"],
                    lambda text: None)
    assert calls == ["3.9.1", None]


SOURCE = """import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.utils.AppInfoParser;
class X {}
"""


def test_the_driver_source_follows_each_releases_packages() -> None:
    release_3 = {"org.apache.kafka.common.record.MemoryRecords",
                 "org.apache.kafka.common.record.RecordBatch",
                 "org.apache.kafka.common.utils.AppInfoParser"}
    release_44 = {"org.apache.kafka.common.record.internal.MemoryRecords",
                  "org.apache.kafka.common.record.internal.RecordBatch",
                  "org.apache.kafka.common.utils.internals.AppInfoParser"}
    adapted = driver.adapt_source(SOURCE, release_3.__contains__)
    assert "import org.apache.kafka.common.record.MemoryRecords;" in adapted
    assert "import org.apache.kafka.common.record.RecordBatch;" in adapted
    assert "import org.apache.kafka.common.utils.AppInfoParser;" in adapted
    adapted = driver.adapt_source(SOURCE, release_44.__contains__)
    assert "import org.apache.kafka.common.record.internal.MemoryRecords;" in adapted
    assert "import org.apache.kafka.common.utils.internals.AppInfoParser;" in adapted
    assert driver.adapt_source(SOURCE, lambda name: True) == SOURCE  # no jar: as written


def test_the_real_driver_source_imports_only_classes_it_can_move() -> None:
    """Every import the table moves is in the source as written, so a renamed import in
    the driver (or a new one) shows here rather than as javac's error on one release."""
    source = driver.source_text()
    for one, _other in driver.PACKAGE_MOVES:
        assert f"import {one}" in source


def test_librdkafka_takes_a_version_and_installs_it_once(tmp_path: Path, monkeypatch) -> None:
    from producer_core.engine.drivers import librdkafka_versions as rdk

    assert "librdkafka" in versioned_modes()
    monkeypatch.setattr(rdk, "cache_root", lambda: tmp_path)
    calls: list[list[str]] = []

    def fake_pip(cmd, tmp, progress, timeout_s):
        calls.append(cmd)
        (Path(cmd[cmd.index("--target") + 1]) / "confluent_kafka").mkdir(parents=True)
        return 0, ""

    monkeypatch.setattr(rdk, "run_pip", fake_pip)
    lines: list[str] = []
    rdk.install("2.12.0", lines.append)
    rdk.install("2.12.0", lines.append)  # cached: pip is not asked again
    rdk.install(None, lines.append)  # the pinned release is kbatch's own
    assert len(calls) == 1 and calls[0][-1] == "confluent-kafka==2.12.0"
    assert "--only-binary" in calls[0] and "--no-deps" in calls[0]
    assert (tmp_path / "confluent-kafka-2.12.0" / "confluent_kafka").is_dir()
    assert lines[0].startswith("Fetching confluent-kafka 2.12.0")
    env = rdk.child_env("2.12.0")
    assert env["PYTHONPATH"].split(":")[0] == str(tmp_path / "confluent-kafka-2.12.0")


def test_a_confluent_kafka_release_pypi_lacks_is_a_usage_error(tmp_path: Path,
                                                                monkeypatch) -> None:
    from producer_core.engine.drivers import librdkafka_versions as rdk

    monkeypatch.setattr(rdk, "cache_root", lambda: tmp_path)

    missing = ("ERROR: Could not find a version that satisfies the requirement "
               "confluent-kafka==0.0.404\nERROR: No matching distribution found")
    monkeypatch.setattr(rdk, "run_pip", lambda cmd, tmp, progress, timeout_s: (1, missing))
    with pytest.raises(UsageError, match=r"confluent-kafka 0\.0\.404 is not a release"):
        rdk.install("0.0.404", lambda text: None)
    assert list(tmp_path.iterdir()) == []  # no half-filled cache left behind


def test_results_pickle_across_a_process_boundary() -> None:
    """A librdkafka@VERSION run's Results come back from its child pickled: histograms as
    their encoded form, the interval recorder without its live hooks."""
    import pickle

    from producer_core.results.histogram import LatencyHistogram
    from producer_core.results.intervals import IntervalRecorder
    from producer_core.results.metrics import RunMetrics

    histogram = LatencyHistogram()
    histogram.record_seconds([0.001, 0.002, 0.250])
    copy = pickle.loads(pickle.dumps(histogram))
    assert copy.count == 3 and copy.percentile_ms(100) == histogram.percentile_ms(100)
    recorder = IntervalRecorder(1.0, on_interval=lambda row: None)
    recorder.begin(0.0, RunMetrics(), lambda: None)  # type: ignore[arg-type]
    again = pickle.loads(pickle.dumps(recorder))
    assert again.on_interval is None and again.interval_s == 1.0


def _fake_clients_jar(path: Path, marker: str = "a") -> Path:
    import zipfile

    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("org/apache/kafka/clients/producer/KafkaProducer.class", marker)
    return path


def test_a_client_build_is_a_version_named_by_its_content(tmp_path: Path,
                                                          monkeypatch) -> None:
    pinned = tmp_path / "pinned"
    pinned.mkdir()
    for name in ("kafka-clients-4.3.1.jar", "lz4-java-1.8.0.jar", "HdrHistogram-2.2.2.jar"):
        (pinned / name).write_bytes(b"x")
    real_client_libs = driver.client_libs
    monkeypatch.setattr(driver, "cache_root", lambda: tmp_path / "cache")
    monkeypatch.setattr(driver, "client_libs", lambda progress, version=None: pinned)
    jar = _fake_clients_jar(tmp_path / "mine.jar")
    version = driver.register_build(str(jar), lambda text: None)
    assert version.startswith("build-") and len(version) == len("build-") + 12
    assert driver.register_build(str(jar), lambda text: None) == version  # same content
    libs = tmp_path / "cache" / f"kafka-clients-{version}" / "libs"
    assert sorted(p.name for p in libs.iterdir()) == [
        "HdrHistogram-2.2.2.jar", f"kafka-clients-{version}.jar", "lz4-java-1.8.0.jar"]
    source = driver.build_source(version)
    assert source is not None and source["path"] == str(jar.resolve())
    assert driver.build_source("3.9.1") is None
    other = driver.register_build(str(_fake_clients_jar(tmp_path / "edited.jar", "b")),
                                  lambda text: None)
    assert other != version
    with pytest.raises(UsageError, match="not a jar"):
        driver.register_build(str(tmp_path / "nothing.jar"), lambda text: None)
    with pytest.raises(UsageError, match="names a client build"):
        real_client_libs(lambda text: None, "build-000000000000")


def test_client_build_flags_map_plain_modes_to_the_builds_label(monkeypatch) -> None:
    from cli.options.client_build import apply_client_builds

    monkeypatch.setattr(driver, "register_build", lambda path, progress: "build-abc")
    modes = apply_client_builds(["kafka-java=x.jar"], ["kafka-java", "kafka-java@4.4.0"],
                                lambda text: None)
    assert modes == ["kafka-java@build-abc", "kafka-java@4.4.0"]
    with pytest.raises(UsageError, match="expected CLIENT=PATH"):
        apply_client_builds(["kafka-java"], ["kafka-java"], lambda text: None)
    with pytest.raises(UsageError, match="no run of mode 'kafka-java'"):
        apply_client_builds(["kafka-java=x.jar"], ["partition"], lambda text: None)
    with pytest.raises(UsageError, match="takes no build"):
        apply_client_builds(["partition=x"], ["partition"], lambda text: None)


def test_a_mode_config_for_a_built_client_follows_the_build() -> None:
    from cli.options.client_build import built_mode_configs

    items = built_mode_configs(("kafka-java:linger.ms=0", "partition:linger.ms=5"),
                               ["kafka-java", "partition"],
                               ["kafka-java@build-abc", "partition"])
    assert items == ("kafka-java@build-abc:linger.ms=0", "partition:linger.ms=5")
