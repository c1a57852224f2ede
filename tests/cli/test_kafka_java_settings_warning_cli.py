"""A librdkafka-only setting on mode kafka-java (issue 49, a regression): the run says it
is not used by this mode, as every other mode does, in the summary's warnings and in the
results; it was accepted silently."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.cli.test_produce_cli import kbatch

pytestmark = [pytest.mark.broker,
              pytest.mark.skipif(shutil.which("java") is None, reason="needs Java")]


def test_a_librdkafka_only_setting_on_kafka_java_is_warned_about(tmp_path):
    out = tmp_path / "run.json"
    proc = kbatch("produce", "--mode", "kafka-java", "--messages", "5", "--no-progress",
                  "-X", "queue.buffering.max.ms=5", "--json", str(out), timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "not used by this mode (kafka-java): queue.buffering.max.ms" in proc.stderr
    warnings = json.loads(out.read_text())["warnings"]
    assert any("not used by this mode (kafka-java)" in w for w in warnings)
