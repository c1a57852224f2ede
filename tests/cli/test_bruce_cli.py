"""`kbatch produce --mode bruce` end to end: rate-limit discards in the summary, per-topic
settings, and a clear error for a per-topic setting that names no topic of the workload."""

from __future__ import annotations

import json

from tests.cli.test_produce_cli import kbatch

WORKLOAD = """\
duration_s: 1
topics:
  - name: orders
    partitions: 2
    rate: {constant: 200}
    keys: {uniform: 10}
    batching: {max_delay_ms: 20}
  - name: clicks
    partitions: 2
    rate: {constant: 500}
    rate_limit: {interval_ms: 10000, max_messages: 100}
"""


def test_produce_bruce_reports_discards_and_takes_per_topic_settings(tmp_path):
    # the limit's window (10 s) outlasts the 1 s run, so a generator running late on a loaded
    # machine cannot open a second window: exactly 100 of clicks' 500 messages are admitted
    path = tmp_path / "w.yaml"
    path.write_text(WORKLOAD)
    out = tmp_path / "r.json"
    result = kbatch("produce", "--mode", "bruce", "--workload", str(path), "--no-progress",
                    "-X", "bruce.topic.orders.max.messages=50", "--json", str(out))
    assert result.returncode == 0, result.stderr
    assert "discarded (reasons)" in result.stdout and "rate_limit (clicks): 400" in result.stdout
    doc = json.loads(out.read_text())
    assert doc["settings"]["bruce.topic.orders.max.messages"] == 50
    assert doc["messages"]["discarded"] == 400
    assert doc["topics"]["clicks"]["messages"]["acknowledged"] == 100
    assert doc["topics"]["orders"]["messages"]["acknowledged"] == 200
    assert doc["policy"]["topic_batches"] > 0


def test_per_topic_setting_for_an_unknown_topic_is_a_usage_error(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text(WORKLOAD)
    result = kbatch("produce", "--mode", "bruce", "--workload", str(path), "--no-progress",
                    "-X", "bruce.topic.order.max.delay.ms=5")
    assert result.returncode == 2
    assert "names topic 'order', which is not a topic of this workload" in result.stderr
    assert "Traceback" not in result.stderr
