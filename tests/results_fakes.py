"""Synthetic Results for tests of the results format, reports and gates (no broker)."""

from __future__ import annotations

import numpy as np

from producer_core.analysis.compare import compare, parse_mode_configs
from producer_core.results.metrics import RequestRecord, Results, RunMetrics, Section
from producer_core.results.results_io import RunRecorder, add_facts
from producer_core.workload.workload import Workload

WORKLOAD = {"topic": "t", "partitions": 8, "rate": 1000.0, "duration_s": 2.0,
            "messages": None, "message_size": 100, "keys": 0, "seed": 1, "warmup_s": 0.0}

# Per mode: (requests, records per request, latency scale in s)
SHAPES = {"partition": (400, 5, 0.050), "broker": (20, 100, 0.120), "none": (1000, 2, 0.004)}


def fake_results(mode: str, seed: int = 1, workload: dict | None = None) -> Results:
    """A plausible run: requests spread over 2 s, exponential latencies, all acked."""
    requests, per_request, scale = SHAPES.get(mode, SHAPES["partition"])  # a client: any
    rng = np.random.default_rng(seed)
    metrics = RunMetrics()
    times = np.sort(rng.uniform(0.0, 2.0, requests))
    for index, send_time in enumerate(times):
        metrics.record_request(RequestRecord(
            send_time_s=float(send_time), broker=1 + index % 2,
            partitions=min(8, per_request), records=per_request, bytes=per_request * 140,
            reason="linger" if index % 7 else "full", linger_ms=float(rng.uniform(0, 50)),
            attempt=1 if index % 50 else 2,
            rtt_ms=-1.0 if index == 3 else float(rng.uniform(1, 10)),
        ))
    messages = requests * per_request
    metrics.messages_generated = metrics.messages_acked = messages
    metrics.latency.record_seconds(rng.exponential(scale, messages))
    metrics.generator_lag.record_seconds(rng.exponential(0.001, messages))
    metrics.rtt.record_seconds(rng.uniform(0.001, 0.010, requests))
    policy = None
    if mode == "broker":
        policy = Section("collector", {
            "sends": requests, "sends_by_reason": {"broker_linger": requests, "flush": 0},
            "partitions_per_send": {"mean": 8.0, "p50": 8.0, "max": 8.0},
        })
    return Results(mode=mode, workload=dict(workload or WORKLOAD),
                   settings={"linger.ms": 5, "acks": "1"}, bootstrap="127.0.0.1:9092",
                   broker="test cluster", duration_s=2.0 + seed / 100, metrics=metrics,
                   messages_intended=messages, policy=policy)


def fake_comparison(modes: tuple[str, ...] = ("partition", "broker"), repeat: int = 1,
                    files: bool = False) -> tuple[dict, list[Results]]:
    """A compare-modes document built by the real compare(), over fake runs (``files``:
    for a results directory, each run naming its companion files)."""
    seeds = iter(range(1, 1000))

    def run_one(workload, settings, mode, bootstrap, progress):
        return fake_results(mode, seed=next(seeds))

    recorder = RunRecorder(run_one)
    mode_runs = parse_mode_configs(list(modes), [], [], linger_ms=100)
    document = compare(Workload(topic="t", partitions=8, rate=1000.0, duration_s=2.0),
                       mode_runs, "127.0.0.1:9092", repeat=repeat, run_one=recorder,
                       files=files)
    document["broker"] = "test cluster"
    add_facts(document, embedded=False, broker="test cluster")
    return document, recorder.results


def with_broker_cost(results: Results, broker_cpu_s: float = 2.0, produce: int = 100
                     ) -> Results:
    """`results` with a `broker_cost` section computed from synthetic snapshots: one Kafka
    node that used `broker_cpu_s` over the run and counted `produce` Produce requests."""
    from producer_core.measure.broker_cost import (
        RunWindow,
        Snapshot,
        Watched,
        WindowCounts,
        section,
    )
    from producer_core.measure.kafka_metrics import KafkaReading, TimeHistogram
    from producer_core.measure.process_cost import CpuReading

    end = results.duration_s
    snaps = []
    for t, share in ((0.0, 0.0), (end, 1.0)):
        kafka = KafkaReading(produce_requests=produce * share, handler_idle_ns=share * end * 8e8,
                             network_idle=0.9, messages_in=1000 * share, bytes_in=1e5 * share,
                             times={"total": TimeHistogram(produce * share, 2.0, 1.0, 9.0)})
        snaps.append(Snapshot(t, {"1": CpuReading(broker_cpu_s * share, 0.0, 0.0)},
                              CpuReading(share, 0.0, 0.0), {"1": kafka}))
    m = results.metrics
    results.broker_cost = section(
        snaps, Watched("kafka", {"1": 4242}, {"1": "http://127.0.0.1:1/metrics"}),
        RunWindow(0.0, end, 0.0), [],
        WindowCounts(end, results.requests_sent, m.messages_acked, m.bytes_sent),
        results.requests_sent)
    return results
