"""The many-topics example under `partition`, `broker` and `bruce` on one embedded broker.

`workloads/many-topics.yaml`: 50 topics × 20 partitions (1,000 partitions), skewed rates
summing to 20,000 msg/s, zipf keys (hot-clicks is keyless), mostly small values with a
tail. Two hot topics have Bruce's per-topic thresholds in the file (hot-orders: 20 ms or
256 KiB; hot-clicks: 100 ms or 2,000 messages); the 48 others share Bruce's combined batch.
One window for every mode (`--linger-ms`, default 100): `linger.ms` for partition,
`broker.linger.ms` for broker, `bruce.combined.max.delay.ms` for bruce. Each mode runs on
its own fresh topics (compare-modes' suffixes) on one fresh broker.

    python benchmarks/many_topics.py [--duration 30] [--linger-ms 100]
        [--modes partition,broker,bruce] [--mode-config MODE:KEY=VALUE ...] [--json PATH]

Prints requests, msgs/req, partitions/request and latency (p50, p99, max) per mode, the
hot topics' own figures, and mode bruce's batch counts.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from producer_core import EmbeddedBroker, compare, load_workload, parse_mode_configs

WORKLOAD = Path(__file__).resolve().parent.parent / "workloads" / "many-topics.yaml"
HOT_TOPICS = ("hot-orders", "hot-clicks")


def run(duration: float | None, modes: list[str], linger_ms: int,
        extra: list[str]) -> dict[str, Any]:
    workload = load_workload(WORKLOAD)
    if duration is not None:
        workload = replace(workload, duration_s=duration,
                           warmup_s=min(workload.warmup_s, duration / 4))
    mode_runs = parse_mode_configs(modes, [], extra, linger_ms=linger_ms)
    with EmbeddedBroker() as broker:
        print(f"many-topics: {len(workload.topics)} topics, running {', '.join(modes)} for "
              f"{workload.duration_s:.0f} s each, window {linger_ms} ms...", file=sys.stderr)
        return compare(workload, mode_runs, broker.bootstrap)


def print_table(document: dict[str, Any], linger_ms: int) -> None:
    runs = document["runs"]
    workload = document["workload"]
    print(f"\n## many-topics.yaml: {len(workload['topics'])} topics, 1 broker, "
          f"{workload['duration_s']:.0f} s, window {linger_ms} ms\n")
    print("| mode | requests | msgs/req | partitions/req | p50 ms | p99 ms | max ms | "
          "achieved msg/s | failed |")
    print("|---|---|---|---|---|---|---|---|---|")
    for run in runs:
        latency = run["latency"]
        print(f"| {run['mode']} | {run['requests_sent']:,} | {run['msgs_per_req']:,.1f} | "
              f"{run['partitions_per_request']['mean']:,.1f} | {latency['p50_ms']:,.1f} | "
              f"{latency['p99_ms']:,.1f} | {latency['max_ms']:,.1f} | "
              f"{run['rate']['achieved_msgs_per_s']:,.0f} | {run['messages']['failed']} |")
    print("\nHot topics (a request carrying several topics counts once for each):\n")
    print("| mode | topic | requests | msgs/req | p99 ms |")
    print("|---|---|---|---|---|")
    for run in runs:
        for name, topic in run.get("topics", {}).items():
            if name.rsplit("-", 2)[0] in HOT_TOPICS:
                print(f"| {run['mode']} | {name.rsplit('-', 2)[0]} | {topic['requests']:,} | "
                      f"{topic['msgs_per_req']:,.1f} | {topic['latency']['p99_ms']:,.1f} |")
    for run in runs:
        lag = run["generator_lag"]
        print(f"\n{run['mode']}: generator lag p99 {lag['p99_ms']:.1f} ms, "
              f"max {lag['max_ms']:.1f} ms")
        policy = run.get("policy")
        if run["mode"] == "bruce" and policy:
            keys = ("batches", "topic_batches", "combined_batches", "batches_by_reason",
                    "requests_combining_batches", "requests_with_carry_over",
                    "batches_per_request", "batch_age")
            print("bruce: " + json.dumps({k: policy[k] for k in keys if k in policy}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=None,
                        help="seconds per mode (default: the file's 30)")
    parser.add_argument("--linger-ms", type=int, default=100)
    parser.add_argument("--modes", default="partition,broker,bruce")
    parser.add_argument("--mode-config", action="append", default=[],
                        help="extra MODE:KEY=VALUE settings, e.g. "
                             "bruce:bruce.combined.max.bytes=524288")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    document = run(args.duration, args.modes.split(","), args.linger_ms, args.mode_config)
    print_table(document, args.linger_ms)
    if args.json:
        args.json.write_text(json.dumps(document, indent=2))


if __name__ == "__main__":
    main()
