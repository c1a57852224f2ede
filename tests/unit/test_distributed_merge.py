"""Merging the shares of a distributed run, without Spark: exact counters and histograms."""

from __future__ import annotations

import pickle
from collections import Counter

import numpy as np
import pytest

from producer_core.distributed.merge import (
    from_payload,
    merge_payloads,
    merge_results,
    merge_stats,
    merge_warnings,
    to_payload,
)
from producer_core.results.histogram import LatencyHistogram
from producer_core.results.metrics import ClientCounts, TopicMetrics
from producer_core.results.request_log import request_table
from tests.results_fakes import fake_results


def share(seed: int, mode: str = "broker"):
    results = fake_results(mode, seed=seed)
    m = results.metrics
    m.messages_failed = seed
    m.failed_reasons["request_timeout"] = seed
    m.blocked_s, m.blocked_max_s, m.blocked_episodes = 0.1 * seed, 0.01 * seed, seed
    rng = np.random.default_rng(seed + 100)
    for name, count in (("orders", 300), ("clicks", 200)):
        topic = TopicMetrics(requests=10 * seed, records_sent=count, bytes_sent=count * 100,
                             generated=count, acknowledged=count - seed, failed=seed)
        topic.latency.record_seconds(rng.exponential(0.02, count))
        m.topics[name] = topic
    results.started_at = f"2025-01-01T00:00:0{seed}.000Z"
    return results


def test_a_payload_is_picklable_and_turns_back_into_the_same_results():
    results = share(1)
    payload = pickle.loads(pickle.dumps(to_payload(results)))
    back = from_payload(payload)
    assert back.to_dict() == results.to_dict()
    assert request_table(back).equals(request_table(results))


def test_counters_add_and_histograms_merge_exactly():
    shares = [share(1), share(2), share(3)]
    merged = merge_payloads([to_payload(s) for s in shares], workload={"rate": 3000.0})
    m = merged.metrics
    assert merged.requests_sent == sum(s.requests_sent for s in shares)
    for name in ("records_sent", "bytes_sent", "messages_generated", "messages_acked",
                 "messages_failed", "retried_requests", "blocked_episodes"):
        assert getattr(m, name) == sum(getattr(s.metrics, name) for s in shares), name
    assert m.blocked_s == pytest.approx(0.6) and m.blocked_max_s == pytest.approx(0.03)
    assert m.failed_reasons == Counter({"request_timeout": 6})
    assert m.requests_by_broker == sum((s.metrics.requests_by_broker for s in shares),
                                       Counter())
    for name in ("latency", "generator_lag", "linger", "rtt", "batch_linger"):
        expected = LatencyHistogram()
        for s in shares:
            expected.merge(LatencyHistogram.decode(getattr(s.metrics, name).encode()))
        got = getattr(m, name)
        assert got.count == expected.count == sum(getattr(s.metrics, name).count
                                                  for s in shares)
        assert np.array_equal(got._counts, expected._counts), name
        assert got.encode() == expected.encode()
    # the union's percentiles, not an average of the shares' percentiles
    union = LatencyHistogram()
    for s in shares:
        union.merge(s.metrics.latency)
    assert m.latency.percentile_us(99) == union.percentile_us(99)


def test_the_run_lasts_as_long_as_its_longest_share_and_rates_are_recomputed():
    shares = [share(1), share(4)]
    merged = merge_results(shares, workload={"rate": 2000.0})
    assert merged.duration_s == max(s.duration_s for s in shares)
    document = merged.to_dict()
    acked = sum(s.metrics.messages_acked for s in shares)
    assert document["rate"]["achieved_msgs_per_s"] == round(acked / merged.duration_s, 1)
    assert document["rate"]["target_msgs_per_s"] == 2000.0
    assert document["msgs_per_req"] == round(
        sum(s.metrics.records_sent for s in shares) / merged.requests_sent, 3)
    assert document["messages"]["intended"] == sum(
        s.messages_intended for s in shares)
    assert merged.started_at == "2025-01-01T00:00:01.000Z"


def test_request_logs_concatenate_in_send_order():
    shares = [share(1), share(2)]
    merged = merge_results(shares)
    times = [r.send_time_s for r in merged.metrics.requests]
    assert times == sorted(times)
    assert len(times) == sum(len(s.metrics.requests) for s in shares)
    assert request_table(merged).num_rows == merged.requests_sent


def test_per_topic_figures_add_and_their_latencies_merge():
    shares = [share(1), share(2)]
    merged = merge_results(shares).metrics.topics
    assert list(merged) == ["orders", "clicks"]
    orders = merged["orders"]
    assert orders.requests == 30 and orders.records_sent == 600
    assert orders.acknowledged == 597 and orders.failed == 3
    assert orders.latency.count == 600


def test_policy_statistics_add_counts_and_weigh_means_by_sends():
    a = {"collector": {"sends": 10, "sends_by_reason": {"broker_linger": 9, "flush": 1},
                       "partitions_per_send": {"mean": 2.0, "p50": 2.0, "max": 5.0},
                       "collecting_for": {"p50_ms": 4.0, "p99_ms": 9.0, "max_ms": 12.0}}}
    b = {"collector": {"sends": 30, "sends_by_reason": {"broker_linger": 30, "flush": 0},
                       "partitions_per_send": {"mean": 4.0, "p50": 3.0, "max": 4.0},
                       "collecting_for": {"p50_ms": 5.0, "p99_ms": 8.0, "max_ms": 10.0}}}
    merged = merge_stats([a, b])["collector"]
    assert merged["sends"] == 40
    assert merged["sends_by_reason"] == {"broker_linger": 39, "flush": 1}
    assert merged["partitions_per_send"] == {"mean": 3.5, "p50": 3.0, "max": 5.0}
    assert merged["collecting_for"] == {"p50_ms": 5.0, "p99_ms": 9.0, "max_ms": 12.0}
    java = merge_stats([{"policy": {"requests_by_reason": {"linger": 3}, "partitions_drained": 7}},
                        {"policy": {"requests_by_reason": {"linger": 2, "memory": 1},
                                    "partitions_drained": 1}}])
    assert java == {"policy": {"requests_by_reason": {"linger": 5, "memory": 1},
                               "partitions_drained": 8}}
    rdkafka = merge_stats([{"librdkafka": {"version": "2.16.0", "config": {"linger.ms": "5"},
                                           "statistics_interval_ms": 100, "batches": 4}}] * 2)
    assert rdkafka == {"librdkafka": {"version": "2.16.0", "config": {"linger.ms": "5"},
                                      "statistics_interval_ms": 100, "batches": 8}}


def test_reasons_named_like_summaries_still_add_and_gauges_keep_each_share():
    a = {"collector": {"sends": 1, "sends_by_reason": {"max_partitions": 2, "max_bytes": 1},
                       "requests_per_send": {"mean": 1, "max": 2},
                       "aimd": {"bounds_ms": [1.0, 500.0], "brokers": {"1": {
                           "window_ms": {"initial": 5.0, "final": 20.0, "mean": 10.0,
                                         "min": 5.0, "max": 20.0},
                           "increases": 3, "rtt_ema_ms": 1.5}}},
                       "window_over_time": [[0.0, 1, 5.0], [1.0, 1, 20.0]]}}
    b = {"collector": {"sends": 3, "sends_by_reason": {"max_partitions": 1, "max_bytes": 0},
                       "requests_per_send": {"mean": 2, "max": 3},
                       "aimd": {"bounds_ms": [1.0, 500.0], "brokers": {"1": {
                           "window_ms": {"initial": 5.0, "final": 40.0, "mean": 30.0,
                                         "min": 5.0, "max": 40.0},
                           "increases": 4, "rtt_ema_ms": 2.5}}},
                       "window_over_time": [[0.0, 1, 5.0]]}}
    merged = merge_stats([a, b])["collector"]
    assert merged["sends_by_reason"] == {"max_partitions": 3, "max_bytes": 1}
    assert merged["requests_per_send"] == {"mean": 1.75, "max": 3}
    broker = merged["aimd"]["brokers"]["1"]
    assert merged["aimd"]["bounds_ms"] == [1.0, 500.0]
    assert broker["window_ms"] == {"initial": 5.0, "final": [20.0, 40.0], "mean": 25.0,
                                   "min": 5.0, "max": 40.0}
    assert broker["increases"] == 7 and broker["rtt_ema_ms"] == [1.5, 2.5]
    assert merged["window_over_time"] == [[0.0, 1, 5.0], [1.0, 1, 20.0], [0.0, 1, 5.0]]


def test_librdkafka_totals_add():
    shares = [share(1, "partition"), share(2, "partition")]
    shares[0].metrics.client_counts = ClientCounts(100, 100, 500.0, 900.0)
    shares[1].metrics.client_counts = ClientCounts(300, 300, 700.0, 800.0)
    counts = merge_results(shares).metrics.client_counts
    assert (counts.requests, counts.batches, counts.batch_bytes_max) == (400, 400, 900.0)
    assert counts.batch_bytes_p50 == pytest.approx(650.0)


def test_warnings_common_to_every_share_appear_once_the_rest_name_their_share():
    merged = merge_warnings([["setting x is ignored", "lag"], ["setting x is ignored"]])
    assert merged == ["setting x is ignored", "Share 0 of 2: lag"]
    assert merge_warnings([["only one"]]) == ["only one"]


def test_nothing_to_merge_is_a_bug():
    with pytest.raises(ValueError):
        merge_results([])


def _answered_every(results, start_s: float, end_s: float, step_s: float, rtt_ms: float):
    """The share's request log: one request every `step_s`, each answered in `rtt_ms`."""
    from producer_core.results.metrics import RequestRecord

    count = int(round((end_s - start_s) / step_s))
    results.metrics.requests = [RequestRecord(
        send_time_s=start_s + i * step_s, broker=1, partitions=1, records=1, bytes=100,
        reason="linger", linger_ms=0.0, attempt=1, rtt_ms=rtt_ms) for i in range(count)]
    results.duration_s = end_s
    return results


def test_a_stall_of_one_share_while_another_is_answered_is_not_the_runs():
    from producer_core.results.stalls import Stall, stall_warning

    silent = _answered_every(share(1), 0.0, 3.0, 0.1, 2000.0)  # each answer 2 s late
    silent.warnings = [str(stall_warning([Stall(0.1, 2.0, 5)]))]
    answered = _answered_every(share(2), 0.0, 3.0, 0.05, 5.0)
    merged = merge_results([silent, answered])
    assert merged.stalls == []
    assert not any("stall" in w for w in merged.warnings)


def test_a_span_no_share_was_answered_in_is_the_merged_runs_stall():
    first = _answered_every(share(1), 0.0, 4.0, 0.1, 5.0)
    second = _answered_every(share(2), 0.0, 4.0, 0.1, 5.0)
    for results in (first, second):  # every request sent 1.0-2.5 s answered at 2.5 s
        for r in results.metrics.requests:
            if 1.0 <= r.send_time_s < 2.5:
                r.rtt_ms = (2.5 - r.send_time_s) * 1000.0
    merged = merge_results([first, second])
    assert len(merged.stalls) == 1
    stall = merged.stalls[0]
    assert stall.start_s == pytest.approx(1.005, abs=0.01)
    assert stall.end_s == pytest.approx(2.5, abs=0.01)
    assert sum("stall: " in w for w in merged.warnings) == 1
