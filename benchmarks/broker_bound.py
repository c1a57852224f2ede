"""Mode broker at its bound on real Apache Kafka (issue 34, target 4).

Mode broker (broker-level linger, idempotence on: kbatch's default) in the seed scenario
(1,000 partitions, 100-byte keyless values, 20,000 msg/s, window 500 ms,
`max.request.size` 4 MB as in docs/findings/performance.md) on a KRaft
cluster of 1 and of 3 Apache Kafka nodes (`producer_core.brokers.kafka`), 3 runs per
cluster, each on a fresh topic, each after a warm-up (a new topic's first requests can
stall on Kafka; the measured figures exclude the warm-up). For each run it prints:

- max latency against its bound, window + 20 ms: a message waits at most one window, plus
  one round trip the send lead did not hide;
- requests against the floor: one request per broker per window of the measured time, plus
  the closing flush: nodes x (measured seconds / window + 1); the bound is 5% over it. The
  requests are counted over the same measured time, from the run's interval rows that start
  at or after the warm-up: the run's `requests_sent` counts the warm-up's requests too (it is
  the whole run's count, as Kafka's own Produce count is), so it is printed beside them but
  is not judged against a floor that leaves the warm-up out.

    python benchmarks/broker_bound.py [--nodes 1,3] [--runs 3] [--duration 60]
        [--warmup 30] [--window-ms 500] [--partitions 1000] [--rate 20000] [--json PATH]

`--duration` includes the warm-up (as kbatch's own --duration and --warmup). The machine
may be shared: the load average is printed beside the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from producer_core import Workload, compare, parse_mode_configs
from producer_core.brokers.kafka import KafkaCluster

LATENCY_SLACK_MS = 20.0
REQUEST_SLACK = 0.05
MODE_CONFIG = [  # one window of this scenario is ~1.2 MB: one request per broker, not two
    "broker:max.request.size=4194304"]


def request_floor(nodes: int, measured_s: float, window_ms: int) -> float:
    """One request per broker per window of the measured time, plus the closing flush."""
    return nodes * (measured_s / (window_ms / 1000) + 1)


def measured_requests(run: dict[str, Any], warmup_s: float) -> tuple[int, float]:
    """The requests sent after the warm-up, and the seconds they span, from the run's
    interval rows (each row counts what its interval alone sent). A row that starts
    inside the warm-up is left out whole, so the span starts at the first row after it."""
    rows = [row for row in run["intervals"]["run"] if row["start_s"] >= warmup_s - 1e-6]
    if not rows:
        raise SystemExit(f"no interval row starts after the {warmup_s:g} s warm-up: "
                         "choose a longer --duration")
    return sum(row["requests"] for row in rows), rows[-1]["end_s"] - rows[0]["start_s"]


def judge(run: dict[str, Any], nodes: int, warmup_s: float, window_ms: int) -> dict[str, Any]:
    """One run's figures against the two bounds."""
    max_ms = run["latency"]["max_ms"]
    requests, measured_s = measured_requests(run, warmup_s)
    floor = request_floor(nodes, measured_s, window_ms)
    return {
        "requests": requests, "requests_whole_run": run["requests_sent"],
        "measured_s": measured_s, "floor": floor, "requests_over_floor": requests / floor - 1,
        "requests_met": requests <= floor * (1 + REQUEST_SLACK),
        "max_ms": max_ms, "p99_ms": run["latency"]["p99_ms"],
        "latency_bound_ms": window_ms + LATENCY_SLACK_MS,
        "latency_met": max_ms <= window_ms + LATENCY_SLACK_MS,
        "rtt_p50_ms": (run.get("rtt") or {}).get("p50_ms"),
        "rtt_max_ms": (run.get("rtt") or {}).get("max_ms"),
        "lag_p99_ms": (run.get("generator_lag") or {}).get("p99_ms"),
        "achieved": run["rate"]["achieved_msgs_per_s"],
        "failed": run["messages"]["failed"],
    }


def one_cluster(args: argparse.Namespace, nodes: int) -> dict[str, Any]:
    workload = Workload(topic=f"bound-{nodes}", partitions=args.partitions, rate=args.rate,
                        duration_s=args.duration, warmup_s=args.warmup, message_size=100)
    mode_runs = parse_mode_configs(["broker"], [], MODE_CONFIG, linger_ms=args.window_ms)
    load_before = os.getloadavg()
    with KafkaCluster(nodes=nodes, progress=lambda m: print(m, file=sys.stderr)) as cluster:
        description = cluster.description.split(" at ")[0]
        print(f"Started {description} in {cluster.start_time_s:.1f} s.", file=sys.stderr)
        document = compare(workload, mode_runs, cluster.bootstrap, repeat=args.runs,
                           on_start=lambda mode, i: print(f"  {nodes} node(s): run {i + 1}...",
                                                          file=sys.stderr))
    return {"nodes": nodes, "description": description, "load_before": load_before,
            "load_after": os.getloadavg(),
            "runs": [judge(run, nodes, args.warmup, args.window_ms) for run in document["runs"]]}


def print_cluster(args: argparse.Namespace, result: dict[str, Any]) -> None:
    print(f"\n## mode broker on {result['description']}: {args.partitions:,} partitions, "
          f"{args.rate:,.0f} msg/s, window {args.window_ms} ms, {args.duration:g} s of which "
          f"{args.warmup:g} s warm-up, idempotent\n")
    print("| run | requests (whole run) | measured s | floor | over floor | max ms | bound ms "
          "| p99 ms | rtt p50 / max ms "
          "| lag p99 ms | achieved msg/s | failed | requests met | latency met |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---|---|")
    for index, run in enumerate(result["runs"], 1):
        rtt = (f"{run['rtt_p50_ms']:,.1f} / {run['rtt_max_ms']:,.1f}"
               if run["rtt_p50_ms"] is not None else "-")
        lag = f"{run['lag_p99_ms']:,.1f}" if run["lag_p99_ms"] is not None else "-"
        print(f"| {index} | {run['requests']:,} ({run['requests_whole_run']:,}) | "
              f"{run['measured_s']:,.1f} | {run['floor']:,.0f} | "
              f"{run['requests_over_floor']:+.1%} | {run['max_ms']:,.1f} | "
              f"{run['latency_bound_ms']:,.0f} | {run['p99_ms']:,.1f} | {rtt} | {lag} | "
              f"{run['achieved']:,.0f} | {run['failed']:,} | "
              f"{'yes' if run['requests_met'] else 'NO'} | "
              f"{'yes' if run['latency_met'] else 'NO'} |")
    print(f"\nload average (1 min) {result['load_before'][0]:.1f} before, "
          f"{result['load_after'][0]:.1f} after (the machine may be shared)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", default="1,3")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--warmup", type=float, default=30.0)
    parser.add_argument("--window-ms", type=int, default=500)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=20_000.0)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if not 0 <= args.warmup < args.duration:
        parser.error("--warmup must be shorter than --duration (which includes it)")
    results = []
    for nodes in (int(n) for n in args.nodes.split(",")):
        result = one_cluster(args, nodes)
        print_cluster(args, result)
        results.append(result)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
