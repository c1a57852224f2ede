"""Interval rows from cumulative metrics, with synthetic time; merging shares' intervals."""

from __future__ import annotations

import numpy as np
import pytest

from producer_core.results.intervals import IntervalRecorder, engine_live, merge_intervals
from producer_core.results.metrics import RequestRecord, RunMetrics, TopicMetrics


def _metrics() -> RunMetrics:
    m = RunMetrics()
    m.topics["a"] = TopicMetrics()
    return m


def _traffic(m: RunMetrics, acked: int, latency_s: float, requests: int) -> None:
    """`acked` 100-byte messages generated and acknowledged in `requests` requests."""
    m.messages_generated += acked
    m.payload_bytes += acked * 100
    m.messages_acked += acked
    m.latency.record_seconds(np.full(acked, latency_s))
    topic = m.topics["a"]
    topic.generated += acked
    topic.acknowledged += acked
    topic.payload_bytes += acked * 100
    topic.latency.record_seconds(np.full(acked, latency_s))
    topic.requests += requests
    for _ in range(requests):
        m.record_request(RequestRecord(0.0, 1, 1, acked // requests, 1000, "linger", 0.0, 1))
        topic.records_sent += acked // requests


def test_each_row_holds_only_its_interval() -> None:
    m = _metrics()
    rows: list[dict] = []
    recorder = IntervalRecorder(1.0, rows.append)
    recorder.begin(100.0, m, engine_live(m))
    _traffic(m, 1000, 0.010, 10)
    recorder.poll(100.5)  # not yet an interval
    assert rows == []
    recorder.poll(101.0)
    _traffic(m, 3000, 0.200, 20)
    m.fail(7, "x")
    recorder.poll(102.0)
    first, second = rows
    assert (first["start_s"], first["end_s"]) == (0.0, 1.0)
    assert first["acknowledged"] == 1000 and first["msgs_per_s"] == 1000.0
    assert first["requests"] == 10 and first["msgs_per_req"] == 100.0
    assert first["mb_per_s"] == pytest.approx(0.1)
    assert first["p99_ms"] == pytest.approx(10.0, rel=0.01)
    # the second interval's latency is its own, not mixed with the first's
    assert second["p50_ms"] == pytest.approx(200.0, rel=0.01)
    assert second["acknowledged"] == 3000 and second["failed"] == 7
    assert second["requests_per_s"] == 20.0
    assert recorder.to_dict()["topics"]["a"][1]["acknowledged"] == 3000


def test_a_short_tail_joins_the_last_row_and_nothing_is_lost() -> None:
    m = _metrics()
    recorder = IntervalRecorder(1.0)
    recorder.begin(0.0, m, engine_live(m))
    _traffic(m, 1000, 0.01, 10)
    recorder.poll(1.0)
    _traffic(m, 500, 0.01, 5)
    recorder.finish(1.02)
    rows = recorder.to_dict()["run"]
    assert len(rows) == 1 and rows[0]["end_s"] == 1.02
    assert rows[0]["acknowledged"] == 1500 and rows[0]["latency_count"] == 1500
    assert recorder.to_dict()["topics"]["a"][0]["acknowledged"] == 1500
    other = IntervalRecorder(1.0)
    m2 = _metrics()
    other.begin(0.0, m2, engine_live(m2))
    _traffic(m2, 10, 0.01, 1)
    other.finish(0.4)  # a run shorter than one interval still has its row
    assert [r["acknowledged"] for r in other.to_dict()["run"]] == [10]


def test_shares_merge_index_by_index_with_exact_percentiles() -> None:
    parts = []
    for latency in (0.010, 0.300):
        m = _metrics()
        recorder = IntervalRecorder(1.0)
        recorder.begin(0.0, m, engine_live(m))
        _traffic(m, 1000, latency, 10)
        recorder.poll(1.0)
        _traffic(m, 100, latency, 1)
        recorder.finish(2.0)
        parts.append(recorder.to_dict())
    merged = merge_intervals(parts)
    assert merged is not None
    first = merged["run"][0]
    assert first["acknowledged"] == 2000 and first["requests"] == 20
    assert first["msgs_per_s"] == 2000.0 and first["mb_per_s"] == pytest.approx(0.2)
    assert first["p50_ms"] == pytest.approx(10.0, rel=0.01)  # exact: half the samples
    assert first["p99_ms"] == pytest.approx(300.0, rel=0.01)
    assert merged["topics"]["a"][1]["acknowledged"] == 200
    assert merge_intervals([]) is None
