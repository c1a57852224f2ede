"""End-to-end latency arithmetic on synthetic consumer records (no broker): intended
times from message ids, first copies, warm-up, timestamps for unthrottled topics, lag,
interval figures, the read-back, and merging the encoded histograms."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from cli.options.consume import consume_from_flags
from producer_core.analysis.compare import summarise, summary_rows
from producer_core.analysis.gate import MetricError, MetricSource
from producer_core.analysis.sweep import parse_slo, run_figures
from producer_core.errors import UsageError
from producer_core.measure import e2e
from producer_core.measure.consumers import Assignment, consumer_properties, spread
from producer_core.measure.intended import intended_offsets, split_ids
from producer_core.results.histogram import LatencyHistogram
from producer_core.workload.message_source import SHARE_ID_SHIFT, TOPIC_ID_SHIFT, make_schedule
from producer_core.workload.workload import RateSpec, TopicSpec, Workload
from tests.results_fakes import fake_results

START = 1000.0  # the run's start on the (synthetic) monotonic clock


def records(ids, consume_s, topic=0, partition=0, wall=None, ts=None) -> e2e.Consumed:
    n = len(ids)
    return e2e.Consumed(
        np.full(n, topic, np.int64), np.full(n, partition, np.int64),
        np.asarray(ids, np.uint64), np.asarray(consume_s, np.float64),
        np.asarray(wall if wall is not None else np.zeros(n), np.float64),
        np.asarray(ts if ts is not None else np.zeros(n), np.int64))


def test_latency_is_consume_time_minus_intended_send_time():
    workload = Workload(rate=1000.0, duration_s=1.0)
    seqs = np.arange(10)
    consumed = records(seqs, START + seqs / 1000.0 + 0.005 + seqs * 0.001)
    lat = e2e.latencies(workload, consumed, START)
    np.testing.assert_allclose(lat.seconds, 0.005 + seqs * 0.001, atol=1e-9)
    h = e2e.histogram(lat.seconds)
    assert h.count == 10
    assert h.percentile_ms(50) == pytest.approx(9.0, abs=0.01)
    assert h.max_ms == pytest.approx(14.0, abs=0.02)


def test_a_duplicate_counts_once_at_its_first_read():
    workload = Workload(rate=100.0, duration_s=1.0)
    consumed = records([0, 1, 1], [START + 0.010, START + 0.020, START + 0.500])
    lat = e2e.latencies(workload, consumed, START)
    np.testing.assert_allclose(sorted(lat.seconds), [0.010, 0.010], atol=1e-9)


def test_warm_up_messages_are_left_out():
    workload = Workload(rate=10.0, duration_s=2.0, warmup_s=0.5)
    seqs = np.arange(10)  # intended at 0.0 .. 0.9 s
    lat = e2e.latencies(workload, records(seqs, START + seqs / 10 + 0.002), START)
    assert len(lat.seconds) == 5  # 0.5 .. 0.9


def test_unthrottled_topics_use_the_record_timestamp():
    workload = Workload(rate=None, duration_s=1.0)
    wall = np.array([2000.050, 2000.100])
    ts = np.array([2000_000, 2000_080])
    lat = e2e.latencies(workload, records([0, 1], [START, START], wall=wall, ts=ts), START)
    np.testing.assert_allclose(lat.seconds, [0.050, 0.020], atol=1e-9)
    assert lat.from_timestamp == 2


@pytest.mark.parametrize("rate", [
    RateSpec("poisson", rate=500.0), RateSpec("ramp", rate_from=100.0, rate_to=900.0,
                                               over_s=2.0),
    RateSpec("step", steps=((200.0, 1.0), (800.0, 1.0)))])
def test_intended_offsets_are_the_generators(rate):
    spec = TopicSpec("t", partitions=1, rate=rate)
    workload = Workload(topics=(spec,), duration_s=3.0, seed=7)
    schedule = make_schedule(spec, 3.0, 7 * 7919)
    taken = []
    for elapsed in np.arange(0.05, 3.0, 0.05):  # the generator takes in passes
        taken.extend(schedule.take(float(elapsed), 37).tolist())
    ids = np.arange(len(taken), dtype=np.uint64)
    np.testing.assert_allclose(intended_offsets(workload, ids), taken, rtol=0, atol=1e-9)


def test_ids_of_topics_and_shares_are_split():
    ids = np.array([(3 << SHARE_ID_SHIFT) | (2 << TOPIC_ID_SHIFT) | 17], np.uint64)
    share, topic, seq = split_ids(ids)
    assert (share[0], topic[0], seq[0]) == (3, 2, 17)
    other_share = intended_offsets(Workload(rate=10.0), ids)
    assert math.isnan(other_share[0])


def test_lag_in_messages_and_seconds():
    lat = e2e.Latencies(seconds=np.array([0.1, 0.1, 1.5]),
                        consume_rel=np.array([0.1, 1.1, 3.0]),
                        intended_rel=np.array([0.0, 1.0, 1.5]),
                        topic_index=np.zeros(3, np.int64), from_timestamp=0)
    # at 2.0 s: 3 acknowledged, 2 read, message 2 due at 1.5 waiting -> 0.5 s
    assert e2e.lag_at([1.0, 2.0, 3.0], [1, 3, 3], lat) == [(0, 0.0), (1, 0.5), (0, 0.0)]


def test_interval_figures_cover_every_read_and_encode_run_rows():
    workload = Workload(rate=100.0, duration_s=2.0)
    seqs = np.arange(200)
    lat = e2e.latencies(workload, records(seqs, START + seqs / 100 + 0.02), START)
    rows = [{"start_s": 0.0, "end_s": 1.0, "acknowledged": 100},
            {"start_s": 1.0, "end_s": 2.0, "acknowledged": 100}]
    figures = e2e.interval_figures(rows, lat, encode=True)
    assert sum(f["consumed"] for f in figures) == 199  # the last read lands after 2.0 s
    assert figures[0]["e2e_p50_ms"] == pytest.approx(20.0, abs=0.05)
    assert figures[0]["lag_messages"] == 1  # read 99 (0..98) of 100 acknowledged by 1.0 s
    merged = LatencyHistogram.decode(figures[0]["e2e_latency_us"])
    merged.merge(LatencyHistogram.decode(figures[1]["e2e_latency_us"]))
    assert merged.count == 199


def test_read_back_reuses_verify_counts():
    workload = Workload(rate=100.0, duration_s=1.0, topic="t")
    consumed = e2e.Consumed.concat([
        records([0, 2, 1], [START] * 3, partition=0),
        records([3, 3], [START] * 2, partition=1)])
    checks = e2e.read_back(workload, consumed, {"t": [0, 1, 2, 3, 4]}, {})
    check = checks["t"]
    assert (check.present, check.missing, check.duplicated, check.out_of_order) == (4, 1, 1, 1)


def test_end_to_end_histograms_merge_from_their_encoded_form():
    rng = np.random.default_rng(3)
    a, b = rng.exponential(0.05, 5000), rng.exponential(0.2, 3000)
    merged = LatencyHistogram.decode(e2e.histogram(a).encode())
    merged.merge(LatencyHistogram.decode(e2e.histogram(b).encode()))
    whole = e2e.histogram(np.concatenate([a, b]))
    assert merged.count == whole.count == 8000
    assert merged.percentile_ms(99) == whole.percentile_ms(99)


def test_partitions_are_dealt_to_at_most_one_consumer_each():
    parts = [Assignment("t", 0, p, 0) for p in range(5)]
    groups = spread(parts, 2)
    assert [[a.partition for a in g] for g in groups] == [[0, 2, 4], [1, 3]]
    assert len(spread(parts, 8)) == 5


def test_consumer_properties_read_committed_and_user_wins():
    props = consumer_properties("h:1", {"security.protocol": "SSL"},
                                {"fetch.wait.max.ms": "10"}, read_committed=True)
    assert props["isolation.level"] == "read_committed"
    assert props["fetch.wait.max.ms"] == "10"
    assert props["security.protocol"] == "SSL"
    assert props["enable.auto.commit"] is False


def test_consume_flags():
    assert consume_from_flags(False, None, ()) is None
    options = consume_from_flags(True, 3, ("fetch.max.wait.ms=10",))
    assert options.consumers == 3 and options.config == (("fetch.wait.max.ms", "10"),)
    with pytest.raises(UsageError, match="applies only with --consume"):
        consume_from_flags(False, 2, ())
    with pytest.raises(UsageError, match="group.id"):
        consume_from_flags(True, None, ("group.id=x",))
    with pytest.raises(UsageError, match="KEY=VALUE"):
        consume_from_flags(True, None, ("fetch.min.bytes",))


def with_e2e(mode: str, p50: float, p99: float) -> dict:
    run = json.loads(json.dumps(fake_results(mode).to_dict()))
    run["e2e_latency"] = {**run["latency"], "p50_ms": p50, "p99_ms": p99}
    return run


def test_compare_gate_and_sweep_take_e2e_where_runs_have_it():
    runs = [{**with_e2e("partition", 60.0, 120.0), "round": 1},
            {**with_e2e("broker", 80.0, 150.0), "round": 1}]
    summary = summarise(runs, ["partition", "broker"])
    assert summary["broker"]["e2e_p99_ms"]["median"] == 150.0
    rows = [r for r in summary_rows({"summary": summary, "modes": ["partition", "broker"]})
            if r["metric"] == "e2e_p99_ms"]
    assert rows[1]["change"] == "+30.0 ms"
    document = {"kind": "comparison", "modes": ["partition", "broker"], "summary": summary,
                "runs": runs}
    assert MetricSource.from_documents([document]).value("broker.e2e_p99_ms") == 150.0
    old = json.loads(json.dumps(fake_results("broker").to_dict()))
    assert "e2e_p99_ms" not in summarise([old], ["broker"])["broker"]
    with pytest.raises(MetricError, match="only runs with --consume hold it"):
        MetricSource.from_documents([old]).value("e2e_p99_ms")
    slo = parse_slo("e2e_p99<=200ms")
    assert slo.end_to_end and slo.metric == "e2e_p99_ms"
    assert slo.holds(run_figures(runs[1])[slo.metric])


def test_shares_merge_e2e_exactly():
    from producer_core.distributed.merge import from_payload, merge_results, to_payload
    from producer_core.results.intervals import merge_intervals

    rng = np.random.default_rng(5)
    samples = [rng.exponential(0.1, 2000), rng.exponential(0.3, 1000)]
    shares = []
    for values in samples:
        results = fake_results("broker")
        results.e2e = e2e.histogram(values)
        results.consumers = {"consumers": 1, "records_read": len(values), "problems": []}
        shares.append(from_payload(json.loads(json.dumps(to_payload(results)))))
    merged = merge_results(shares)
    whole = e2e.histogram(np.concatenate(samples))
    assert merged.e2e.count == 3000
    assert merged.e2e.percentile_ms(99) == whole.percentile_ms(99)
    assert merged.consumers["records_read"] == 3000
    assert merged.to_dict()["e2e_latency"]["p99_ms"] == pytest.approx(
        whole.percentile_ms(99), abs=0.001)
    rows = [{"interval_s": 1.0, "topics": {}, "run": [{
        "start_s": 0.0, "end_s": 1.0, "acknowledged": 10, "failed": 0, "requests": 1,
        "records": 10, "wire_bytes": 1, "payload_bytes": 1, "generated": 10, "msgs_per_s": 10,
        "mb_per_s": 0.0, "requests_per_s": 1, "msgs_per_req": 10, "p50_ms": 1, "p99_ms": 1,
        "max_ms": 1, "latency_count": 10, "latency_us": LatencyHistogram().encode(),
        "consumed": len(values), "lag_messages": 2, "lag_s": lag,
        "e2e_latency_us": e2e.histogram(values).encode()}]}
        for values, lag in zip(samples, (0.2, 0.5), strict=True)]
    row = merge_intervals(rows)["run"][0]
    assert (row["consumed"], row["lag_messages"], row["lag_s"]) == (3000, 4, 0.5)
    assert row["e2e_p99_ms"] == whole.percentile_ms(99)


def test_live_interval_rows_get_the_consumers_counts():
    from producer_core.measure.consuming_run import LiveConsumers

    class Processes:
        count = 0

        def consumed(self) -> int:
            return self.count

    class Sink:
        report_interval_s = 1.0

        def __init__(self) -> None:
            self.rows: list[dict] = []
            self.progress: list = []

        def __call__(self, progress) -> None:
            self.progress.append(progress)

        def on_interval(self, row: dict) -> None:
            self.rows.append(dict(row))

    processes, sink = Processes(), Sink()
    live = LiveConsumers(sink, processes)
    assert live.report_interval_s == 1.0
    processes.count = 90
    live.on_interval({"acknowledged": 100})
    processes.count = 200
    live.on_interval({"acknowledged": 120})
    live("p")
    assert [(r["consumed"], r["lag_messages"]) for r in sink.rows] == [(90, 10), (110, 20)]
    assert sink.progress == ["p"]

    class Quiet:
        on_interval = None

        def __call__(self, progress) -> None:
            pass

    assert LiveConsumers(Quiet(), processes).on_interval is None


def test_interval_line_shows_consumers_lag_in_messages_and_seconds():
    from cli.render.consume import interval_suffix

    assert interval_suffix({"msgs_per_s": 100.0}) == ""
    live = interval_suffix({"consumed": 90, "lag_messages": 50, "msgs_per_s": 100.0})
    assert live == "  consumed 90  lag 50 msgs / ~0.50 s"
    exact = interval_suffix({"consumed": 90, "lag_messages": 50, "lag_s": 0.25,
                             "e2e_p99_ms": 12.5})
    assert exact == "  consumed 90  lag 50 msgs / 0.25 s  e2e p99 12.5 ms"
