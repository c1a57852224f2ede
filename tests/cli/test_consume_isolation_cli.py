"""A transactional run read by consumers told to read_uncommitted (issue 49): they count
aborted records too, which the run now says (on screen and in the consumers' problems)."""

from __future__ import annotations

import json

import pytest

from tests.cli.sweep_support import run_kbatch

pytestmark = pytest.mark.broker


def test_read_uncommitted_on_a_transactional_run_is_said(tmp_path):
    out = tmp_path / "run.json"
    outcome = run_kbatch(["produce", "--no-progress", "--transactional-id", "t49", "--consume",
                          "--consumer-config", "isolation.level=read_uncommitted",
                          "--messages", "200", "--rate", "200", "--json", str(out)],
                         seconds=120)
    assert outcome.exit_code == 0, outcome.describe()
    assert "read aborted records too" in " ".join(outcome.output.split())
    consumers = json.loads(out.read_text())["consumers"]
    assert consumers["isolation_level"] == "read_uncommitted"
    assert any("read_uncommitted on a transactional run" in p for p in consumers["problems"])
