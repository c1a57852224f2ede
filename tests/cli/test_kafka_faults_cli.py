"""`--fault` on `--broker kafka` (JVM nodes): a paused node holds its requests for the
pause, and nothing acknowledged is lost."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.cli.test_produce_cli import KBATCH, ROOT
from tests.kafka_fixtures import skip_kafka_reason

pytestmark = [pytest.mark.skipif(skip_kafka_reason() is not None,
                                 reason=skip_kafka_reason() or ""), pytest.mark.timeout(900)]


def test_a_paused_kafka_node_delays_and_loses_nothing(tmp_path):
    out = tmp_path / "r.json"
    done = subprocess.run(
        [*KBATCH, "produce", "--broker", "kafka", "--partitions", "2", "--rate", "200",
         "--duration", "6", "--verify", "--no-progress", "-X", "acks=all",
         "--fault", "at=2s pause=node:1 for=2s", "--json", str(out)],
        capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr
    document = json.loads(out.read_text())
    (fault,) = document["faults"]
    assert fault["node"] == 1 and fault["error"] is None
    assert fault["ended_s"] - fault["began_s"] == pytest.approx(2, abs=0.8)
    assert document["latency"]["max_ms"] >= 1500  # messages waited out the pause
    assert document["verify"]["missing"] == 0 and document["verify"]["duplicated"] == 0


def test_isolate_is_refused_on_kafka_jvms():
    done = subprocess.run([*KBATCH, "produce", "--broker", "kafka", "--fault",
                           "isolate=node:1"], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert done.returncode == 2
    assert "isolate needs --broker docker" in done.stderr
