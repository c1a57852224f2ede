"""`kbatch compare-modes --json` end to end on the embedded broker."""

from __future__ import annotations

import json

import pytest

from tests.cli.test_produce_cli import kbatch


@pytest.mark.broker
def test_compare_modes_json(tmp_path):
    out = tmp_path / "cmp.json"
    proc = kbatch("compare-modes", "--modes", "partition,none", "--partitions", "20",
                  "--rate", "2000", "--duration", "2", "--linger-ms", "100", "--repeat", "2",
                  "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["kind"] == "comparison" and doc["modes"] == ["partition", "none"]
    assert [r["mode"] for r in doc["runs"]] == ["partition", "none", "partition", "none"]
    assert len({r["workload"]["topic"] for r in doc["runs"]}) == 4
    for run in doc["runs"]:
        assert run["messages"]["acknowledged"] == 4000 and run["messages"]["failed"] == 0
    partition = doc["summary"]["partition"]
    none = doc["summary"]["none"]
    # linger 100 ms batches; linger 0 sends many more, smaller requests with lower latency
    assert none["requests_sent"]["median"] > 2 * partition["requests_sent"]["median"]
    assert none["p50_ms"]["median"] < partition["p50_ms"]["median"]
    assert "change vs partition" in proc.stdout


def test_compare_modes_refuses_unknown_mode():
    proc = kbatch("compare-modes", "--modes", "partition,warp", "--messages", "5")
    assert proc.returncode == 2
    assert "Allowed modes" in proc.stderr and "Traceback" not in proc.stderr
