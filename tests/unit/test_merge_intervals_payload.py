"""Spark shares: payload bytes, MB/s, targets and intervals survive the payload round trip
and merge."""

from __future__ import annotations

import pickle

import numpy as np

from producer_core.distributed.merge import from_payload, merge_results, to_payload
from producer_core.results.intervals import IntervalRecorder, engine_live
from producer_core.results.metrics import TopicMetrics
from tests.results_fakes import fake_results


def _share(seed: int, latency_s: float):
    results = fake_results("partition", seed=seed)
    m = results.metrics
    m.payload_bytes = m.messages_generated * 100
    m.topics = {"t": TopicMetrics(generated=m.messages_generated,
                                  acknowledged=m.messages_acked,
                                  payload_bytes=m.payload_bytes)}
    acked = m.messages_acked
    m.messages_acked = 0
    m.latency = type(m.latency)()
    recorder = IntervalRecorder(1.0)
    recorder.begin(0.0, m, engine_live(m))
    m.messages_acked = acked
    m.latency.record_seconds(np.full(acked, latency_s))
    recorder.finish(1.0)
    results.target_msgs_per_s = 1000.0
    return results


def test_shares_round_trip_and_merge() -> None:
    shares = [from_payload(pickle.loads(pickle.dumps(to_payload(_share(i, lat)))))
              for i, lat in ((1, 0.010), (2, 0.500))]
    assert shares[0].metrics.payload_bytes == shares[0].metrics.messages_generated * 100
    assert shares[0].metrics.topics["t"].payload_bytes > 0
    merged = merge_results(shares).to_dict()
    assert merged["compression"]["payload_bytes"] == sum(
        s.metrics.payload_bytes for s in shares)
    assert merged["rate"]["target_msgs_per_s"] == 2000.0
    assert merged["rate"]["mb_per_s"] > 0
    [row] = merged["intervals"]["run"]
    assert row["acknowledged"] == merged["messages"]["acknowledged"]
    assert row["p50_ms"] < 20 and row["p99_ms"] > 400  # exact over both shares
    assert merged["topics"]["t"]["payload_bytes"] == merged["compression"]["payload_bytes"]
