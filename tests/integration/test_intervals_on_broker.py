"""Intervals on the embedded broker: rows add up to the run's totals, run-wide and per
topic, in kbatch's engine and in mode librdkafka."""

from __future__ import annotations

import pytest

from producer_core.config import build_settings
from producer_core.engine.drivers.engine import run
from producer_core.workload.workload import RateSpec, TopicSpec, Workload

pytestmark = pytest.mark.broker


class Sink:
    """A progress callback that asks for 0.5 s intervals and keeps the lines."""

    report_interval_s = 0.5

    def __init__(self) -> None:
        self.rows: list[dict] = []

    def __call__(self, progress) -> None:
        pass

    def on_interval(self, row: dict) -> None:
        self.rows.append(row)


@pytest.mark.parametrize("mode", ["partition", "librdkafka"])
def test_intervals_add_up_to_the_run(tansu_broker, mode: str) -> None:
    topics = (TopicSpec(f"iv-a-{mode}", 4, RateSpec("constant", 1500.0)),
              TopicSpec(f"iv-b-{mode}", 2, RateSpec("constant", 500.0)))
    workload = Workload(topics=topics, duration_s=2.2)
    sink = Sink()
    doc = run(workload, build_settings([], mode=mode), mode, tansu_broker.bootstrap,
              sink).to_dict()
    intervals = doc["intervals"]
    rows = intervals["run"]
    assert intervals["interval_s"] == 0.5 and 4 <= len(rows) <= 6
    assert sink.rows == rows[:len(sink.rows)] and len(sink.rows) >= 4
    acknowledged = doc["messages"]["acknowledged"]
    assert acknowledged == doc["messages"]["sent"] and abs(acknowledged - 4400) <= 2
    assert sum(r["acknowledged"] for r in rows) == acknowledged
    assert sum(r["requests"] for r in rows) == doc["requests_sent"]
    assert sum(r["records"] for r in rows) == doc["records_sent"]
    assert sum(r["latency_count"] for r in rows) == doc["latency"]["count"]
    assert max(r["p99_ms"] for r in rows) <= doc["latency"]["max_ms"] + 1
    full = [r for r in rows if r["end_s"] <= 2.0]  # whole intervals within the schedule
    for row in full:
        assert row["end_s"] - row["start_s"] == pytest.approx(0.5, abs=0.2)
        assert row["mb_per_s"] == pytest.approx(row["msgs_per_s"] * 100 / 1e6, rel=0.01)
    for topic in topics:
        per_topic = intervals["topics"][topic.name]
        assert len(per_topic) == len(rows)
        assert sum(r["acknowledged"] for r in per_topic) == (
            doc["topics"][topic.name]["messages"]["acknowledged"])
