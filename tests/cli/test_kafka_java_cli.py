"""Mode kafka-java from the command line: compare-modes runs it beside the emulation, and
a machine without Java gets one clear paragraph and exit code 2."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.cli.test_produce_cli import KBATCH, ROOT, kbatch


@pytest.mark.broker
def test_compare_modes_runs_kafka_java_beside_java(tmp_path):
    out = tmp_path / "cmp.json"
    proc = kbatch("compare-modes", "--modes", "kafka-java,java", "--partitions", "8",
                  "--rate", "1000", "--duration", "1", "--linger-ms", "50", "--no-progress",
                  "--json", str(out), "-X", "acks=all")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["modes"] == ["kafka-java", "java"]
    runs = {run["mode"]: run for run in doc["runs"]}
    for run in runs.values():
        assert run["messages"]["acknowledged"] == 1000 and run["messages"]["failed"] == 0
        assert run["requests_sent"] > 0 and run["latency"]["count"] == 1000
    assert runs["kafka-java"]["kafka_java"]["properties"]["linger.ms"] == "50"
    assert runs["kafka-java"]["kafka_java"]["properties"]["acks"] == "all"
    assert "change vs kafka-java" in proc.stdout


def test_no_java_is_one_paragraph_and_exit_code_2():
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = "/nonexistent"
    proc = subprocess.run([*KBATCH, "produce", "--mode", "kafka-java", "--messages", "5",
                           "--bootstrap-servers", "127.0.0.1:9", "--no-progress"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT, env=env)
    assert proc.returncode == 2
    assert "needs a Java runtime" in proc.stderr and "JDK 17" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.broker
def test_a_workload_file_with_two_topics_runs_through_kafka_java(tmp_path):
    workload = tmp_path / "two.yaml"
    workload.write_text(
        "duration_s: 2\n"
        "topics:\n"
        "  - {name: kj-a, partitions: 4, rate: {constant: 500}, value_size: 50,\n"
        "     keys: {uniform: 16}, headers: {source: kbatch}}\n"
        "  - {name: kj-b, partitions: 2, rate: {constant: 250}, value_size: 200}\n"
    )
    out = tmp_path / "run.json"
    proc = kbatch("produce", "--mode", "kafka-java", "--workload", str(workload),
                  "--no-progress", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    topics = doc["topics"]
    assert topics["kj-a"]["messages"]["acknowledged"] == 1000
    assert topics["kj-b"]["messages"]["acknowledged"] == 500
    assert topics["kj-a"]["records_sent"] == 1000 and topics["kj-b"]["records_sent"] == 500
    assert topics["kj-a"]["latency"]["count"] == 1000
    # one request may carry both topics: it counts once overall and once for each topic
    assert max(t["requests"] for t in topics.values()) <= doc["requests_sent"]
    assert sum(t["requests"] for t in topics.values()) >= doc["requests_sent"]
    assert topics["kj-b"]["bytes_sent"] > 500 * 200


@pytest.mark.broker
def test_settings_the_java_producer_refuses_are_a_usage_error():
    # Java refuses an explicit delivery.timeout.ms below linger.ms + request.timeout.ms
    proc = kbatch("produce", "--mode", "kafka-java", "--messages", "5", "--no-progress",
                  "-X", "delivery.timeout.ms=1000", "-X", "request.timeout.ms=5000")
    assert proc.returncode == 2, proc.stderr
    assert "The Java producer refused the settings" in proc.stderr
    assert "delivery.timeout.ms" in proc.stderr and "Traceback" not in proc.stderr


def test_no_go_is_one_paragraph_and_exit_code_2_before_any_broker_starts(tmp_path):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), "KBATCH_GO": str(tmp_path / "go")}
    proc = subprocess.run([*KBATCH, "produce", "--mode", "franz-go", "--messages", "5",
                           "--no-progress"],  # no --bootstrap-servers: Tansu would start
                          capture_output=True, text=True, timeout=60, cwd=ROOT, env=env)
    assert proc.returncode == 2, proc.stderr
    assert "needs the Go toolchain" in proc.stderr and "Traceback" not in proc.stderr
    assert "Producing to" not in proc.stdout + proc.stderr
