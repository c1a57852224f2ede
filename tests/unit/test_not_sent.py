"""Ctrl-C: messages never sent are "not sent", apart from "failed (not written)" (issue 49).
The results keep them as failed with reason `interrupted` (every message has exactly one
outcome); the summary and the warnings name them for what they are."""

from __future__ import annotations

from cli.render.tables import NOT_SENT, outcome_row
from producer_core.engine.drivers.run_checks import run_warnings
from producer_core.engine.drivers.run_types import INTERRUPTED
from producer_core.results.metrics import RunMetrics
from producer_core.workload.workload import Workload


def test_the_summary_row_splits_not_sent_from_failed():
    result = {"messages": {"acknowledged": 900, "failed": 130, "unknown": 2,
                           "failed_reasons": {INTERRUPTED: 100, "timeout": 30}},
              "settings": {"acks": "all"}}
    assert outcome_row(result) == ("acknowledged / failed / not sent (stopped) / unknown",
                                    "900 / 30 / 100 / 2")


def test_a_run_without_a_stop_keeps_its_row():
    result = {"messages": {"acknowledged": 9, "failed": 1, "unknown": 0,
                           "failed_reasons": {"timeout": 1}}, "settings": {"acks": "all"}}
    assert outcome_row(result) == ("acknowledged / failed / unknown", "9 / 1 / 0")


def test_the_warnings_say_not_sent_not_failed():
    metrics = RunMetrics()
    metrics.failed_reasons[INTERRUPTED] += 100
    metrics.messages_failed = 100
    warnings = run_warnings(metrics, Workload(topic="t"), "memory")
    assert not any("failed (not written)" in w for w in warnings)
    assert any(w.startswith("100 messages were not sent: the run was stopped") for w in warnings)


def test_render_spells_the_engines_reason():
    assert NOT_SENT == INTERRUPTED
