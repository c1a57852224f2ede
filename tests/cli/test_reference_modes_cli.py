"""compare-modes' default: librdkafka beside partition, java and broker, one linger value."""

from __future__ import annotations

import json

import pytest

from tests.cli.test_produce_cli import kbatch


@pytest.mark.broker
def test_compare_modes_runs_librdkafka_partition_java_broker_by_default(tmp_path):
    out = tmp_path / "cmp.json"
    proc = kbatch("compare-modes", "--partitions", "10", "--rate", "2000", "--duration", "1",
                  "--linger-ms", "100", "--no-progress", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["modes"] == ["librdkafka", "partition", "java", "broker"]
    runs = {run["mode"]: run for run in doc["runs"]}
    for run in runs.values():
        assert run["messages"]["acknowledged"] == 2000 and run["messages"]["failed"] == 0
    assert runs["librdkafka"]["librdkafka"]["config"]["linger.ms"] == "100"
    assert runs["partition"]["settings"]["linger.ms"] == 100
    assert runs["java"]["settings"]["linger.ms"] == 100
    assert runs["broker"]["settings"]["broker.linger.ms"] == 100
    # one partition per request against whole-broker requests
    assert runs["librdkafka"]["partitions_per_request"]["max"] == 1
    assert runs["librdkafka"]["requests_sent"] > 5 * runs["java"]["requests_sent"]
    assert "change vs librdkafka" in proc.stdout


def test_librdkafka_refuses_a_setting_it_does_not_have():
    proc = kbatch("produce", "--mode", "librdkafka", "--messages", "5",
                  "-X", "broker.linger.ms=500")
    assert proc.returncode == 2
    assert "no equivalent of broker.linger.ms" in proc.stderr
    assert "Traceback" not in proc.stderr
