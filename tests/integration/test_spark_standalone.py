"""`--runner spark` through a real Spark standalone cluster on this machine: a master and
a worker on 127.0.0.1 (pyspark's spark-class), a loopback broker, a 2-worker produce
that is read back from the topic, and both daemons stopped by pid."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.readback import read_all
from tests.spark_standalone import standalone_cluster
from tests.spark_support import needs_spark

pytestmark = [pytest.mark.broker, *needs_spark]

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(240)
def test_two_worker_produce_through_a_loopback_standalone_master(tansu_broker, tmp_path):
    with standalone_cluster(tmp_path, cores=2, python_path=str(ROOT)) as cluster:
        out = tmp_path / "run.json"
        proc = subprocess.run(
            [sys.executable, "-m", "cli.main", "produce", "--no-progress", "--runner", "spark",
             "--workers", "2", "--spark-master", cluster.master_url,
             "--bootstrap-servers", tansu_broker.bootstrap, "--topic", "standalone-shares",
             "--partitions", "4", "--rate", "2000", "--messages", "3000", "--json", str(out)],
            capture_output=True, text=True, timeout=180, cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert f"2 Spark workers on {cluster.master_url}" in proc.stdout + proc.stderr
        result = json.loads(out.read_text())
        assert cluster.master_url in json.dumps(result)
        assert result["messages"]["acknowledged"] == 3000
        assert result["messages"]["failed"] == 0
    for pid in cluster.pids:  # both daemons stopped, with what they forked
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(
            f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    found = asyncio.run(read_all(tansu_broker.bootstrap, "standalone-shares", 4, 3000))
    ids = [message_id for records in found.values() for _, message_id, _ in records]
    assert len(ids) == 3000 and len(set(ids)) == 3000
    assert Counter(message_id >> 56 for message_id in ids) == {0: 1500, 1: 1500}
