"""docker-compose.yml, started with the Compose tool, serves kbatch: `kbatch produce
--bootstrap-servers` against its three brokers reads every message back (--verify)."""

from __future__ import annotations

import json
import subprocess

import pytest

from producer_core.results_io import validate_document
from tests.cli.test_produce_cli import KBATCH, ROOT

pytestmark = [pytest.mark.docker, pytest.mark.timeout(900)]


def test_kbatch_on_the_compose_cluster_reads_every_message_back(docker_kafka, tmp_path):
    out = tmp_path / "r.json"
    done = subprocess.run(
        [*KBATCH, "produce", "--bootstrap-servers", docker_kafka, "--partitions", "6",
         "--replication-factor", "3", "--rate", "1000", "--duration", "3", "--verify",
         "-X", "acks=all", "--no-progress", "--json", str(out)],
        capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr
    document = json.loads(out.read_text())
    validate_document(document)
    assert document["broker_implementation"] == "external"
    assert document["messages"]["acknowledged"] == 3000
    verify = document["verify"]
    assert verify["present"] == 3000 and verify["missing"] == 0 and verify["duplicated"] == 0
    assert set(document["requests_by_broker"]) == {"1", "2", "3"}
