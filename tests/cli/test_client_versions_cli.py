"""Issue 44 from the command line: kafka-java@VERSION (two releases in one comparison, at
their own defaults, named in the table), a release Maven lacks, closed-loop senders, and
kafka-clients 4.4.0 on the embedded broker."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.cli.test_produce_cli import kbatch

needs_java = pytest.mark.skipif(shutil.which("javac") is None or shutil.which("mvn") is None,
                                reason="needs a JDK and Maven")


def test_a_mode_that_takes_no_version_is_a_usage_error() -> None:
    proc = kbatch("produce", "--mode", "partition@1.0", "--messages", "5", "--no-progress")
    assert proc.returncode == 2
    assert "takes no @VERSION" in proc.stderr and "Traceback" not in proc.stderr


def test_closed_loop_flags_are_checked_before_anything_runs() -> None:
    proc = kbatch("produce", "--closed-loop", "4", "--rate", "100", "--duration", "1",
                  "--no-progress")
    assert proc.returncode == 2 and "--rate and --closed-loop" in proc.stderr
    proc = kbatch("produce", "--think-time-ms", "5", "--duration", "1", "--no-progress")
    assert proc.returncode == 2 and "applies only with --closed-loop" in proc.stderr


@needs_java
def test_a_release_maven_central_lacks_is_exit_2_before_any_broker() -> None:
    proc = kbatch("compare-modes", "--modes", "kafka-java@0.0.404,partition", "--duration",
                  "1", "--no-progress")
    assert proc.returncode == 2, proc.stderr
    assert "kafka-clients 0.0.404 is not a release" in proc.stderr
    assert "Tansu" not in proc.stderr + proc.stdout  # nothing was started


@pytest.mark.broker
def test_closed_loop_in_an_engine_mode(tmp_path) -> None:
    out = tmp_path / "run.json"
    proc = kbatch("produce", "--mode", "partition", "--closed-loop", "2", "--partitions", "4",
                  "--duration", "1", "--no-progress", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["workload"]["closed_loop"] == 2 and doc["rate"]["target_msgs_per_s"] is None
    acked = doc["messages"]["acknowledged"]
    assert acked > 0 and acked == doc["messages"]["sent"] == doc["latency"]["count"]
    assert "closed loop, 2 senders" in proc.stdout


@needs_java
@pytest.mark.broker
def test_two_releases_side_by_side_in_a_closed_loop(tmp_path) -> None:
    """The issue's "done when", shortened: each release at its own defaults, named with
    the version it reports and the linger.ms it used; 4.4.0 runs on the embedded broker."""
    out = tmp_path / "cmp.json"
    proc = kbatch("compare-modes", "--modes", "kafka-java@3.9.1,kafka-java@4.4.0",
                  "--closed-loop", "2", "--partitions", "4", "--duration", "2",
                  "--no-progress", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["modes"] == ["kafka-java@3.9.1", "kafka-java@4.4.0"]
    runs = {run["mode"]: run for run in doc["runs"]}
    for version, linger in (("3.9.1", 0), ("4.4.0", 5)):
        run = runs[f"kafka-java@{version}"]
        assert run["kafka_java"]["client_version"] == version
        assert run["kafka_java"]["client_config"]["linger.ms"] == linger
        assert run["settings"]["linger.ms"] == linger  # its default, not kbatch's
        assert run["messages"]["acknowledged"] > 0 and run["messages"]["failed"] == 0
        assert f"kafka-clients {version}; linger.ms {linger}" in proc.stdout
    assert any("metadata.cluster.check.enable=false" in w
               for w in runs["kafka-java@4.4.0"]["warnings"])


@pytest.mark.broker
def test_a_librdkafka_release_runs_out_of_process_beside_the_pinned_one(tmp_path) -> None:
    """librdkafka@2.12.0: that confluent-kafka wheel (fetched once with pip) in a child
    interpreter, beside kbatch's own; each names the librdkafka it reports."""
    out = tmp_path / "cmp.json"
    proc = kbatch("compare-modes", "--modes", "librdkafka@2.12.0,librdkafka", "--partitions",
                  "4", "--rate", "200", "--duration", "1", "--no-progress", "--json", str(out))
    if proc.returncode == 1 and "pip could not install" in proc.stderr:
        pytest.skip("PyPI is not reachable from this machine")
    assert proc.returncode == 0, proc.stderr
    runs = {run["mode"]: run for run in json.loads(out.read_text())["runs"]}
    assert runs["librdkafka@2.12.0"]["librdkafka"]["version"] == "2.12.0"
    assert runs["librdkafka"]["librdkafka"]["version"] != "2.12.0"
    for run in runs.values():
        assert run["messages"]["acknowledged"] == 200 and run["requests_sent"] > 0
    assert "librdkafka@2.12.0: librdkafka 2.12.0" in proc.stdout


@needs_java
@pytest.mark.broker
def test_your_own_kafka_clients_jar_runs_and_is_named(tmp_path) -> None:
    """--client-build kafka-java=JAR: a jar of your own (here a copy of a release's) runs
    as kafka-java@build-<hash>, with its path, hash and reported version in the results."""
    from producer_core.engine.drivers.kafka_java.driver import client_libs

    release = next(client_libs(lambda text: None, "3.9.1").glob("kafka-clients-*.jar"))
    jar = tmp_path / "kafka-clients-mine.jar"
    jar.write_bytes(release.read_bytes())
    out = tmp_path / "run.json"
    proc = kbatch("produce", "--mode", "kafka-java", "--client-build", f"kafka-java={jar}",
                  "--partitions", "2", "--rate", "100", "--duration", "1", "--no-progress",
                  "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["mode"].startswith("kafka-java@build-")
    build = doc["kafka_java"]["client_build"]
    assert build["path"] == str(jar.resolve()) and doc["mode"].endswith(build["sha256"][:12])
    assert doc["kafka_java"]["client_version"] == "3.9.1"
    assert doc["messages"]["acknowledged"] == 100
    assert f"sha256 {build['sha256'][:12]})" in proc.stdout  # the table names the build
