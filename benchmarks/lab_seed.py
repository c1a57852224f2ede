"""The broker-level linger seed's scenario on a multi-broker lab with a network round trip.

The seed measured on 3 brokers; kbatch's embedded broker is one Tansu node on loopback
(round trip ~0). This runs the same workload on `kbatch lab`'s N Tansu brokers behind the
facade, which presents them as an N-node cluster and delays every response by the round
trip: 1,000 partitions, 100-byte values, 20,000 msg/s, 30 s, window 500 ms, modes
`librdkafka`, `partition` and `broker` (those of them this kbatch has), printed as the
seed-style table next to the seed's own figures. The facade's own per-node count of
Produce requests is printed beside kbatch's, as the wire-level check.

    python benchmarks/lab_seed.py [--brokers 3] [--rtt-ms 1] [--jitter-ms 0] [--seconds 30]
        [--rate 20000] [--partitions 1000] [--window-ms 500] [--modes librdkafka,partition,broker]
        [--mode-config MODE:KEY=VALUE ...] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from producer_core import MODES, Workload, compare, parse_mode_configs, summary_rows
from producer_core.brokers.lab import Lab
from producer_core.brokers.lab.protocol import API_PRODUCE

WANTED_MODES = ("librdkafka", "partition", "broker")
SEED_FIGURES = {  # the seed's own numbers: 3 brokers, 60 s, 20,000 msg/s, window 500 ms
    "partition": "25,848 requests, 46.4 msgs/req, p50 360 ms",
    "broker": "167 requests, 7,185.6 msgs/req, p50 679 ms",
}
BROKER_CONFIG = ["broker:broker.batch.max.bytes=10485760", "broker:max.request.size=10485760"]


def run(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, dict[int, int]], str]:
    modes = args.modes.split(",") if args.modes else [m for m in WANTED_MODES if m in MODES]
    workload = Workload(topic="lab-seed", partitions=args.partitions, rate=args.rate,
                        duration_s=args.seconds, message_size=100)
    mode_runs = parse_mode_configs(
        modes, [], [*(BROKER_CONFIG if "broker" in modes else []), *args.mode_config],
        linger_ms=args.window_ms)
    facade_counts: dict[str, dict[int, int]] = {}
    with Lab(args.brokers, args.rtt_ms, args.jitter_ms, seed=1) as lab:
        print(f"{lab.description}: running {', '.join(modes)} for {args.seconds:g} s each...",
              file=sys.stderr)
        current: list[str] = []

        def on_start(mode: str, round_index: int) -> None:
            finish_mode()
            current.append(mode)
            print(f"  {mode}...", file=sys.stderr)

        def finish_mode() -> None:
            if current:
                facade_counts[current[-1]] = lab.request_counts(API_PRODUCE)
            lab.reset_counts()

        document = compare(workload, mode_runs, lab.bootstrap, on_start=on_start)
        finish_mode()
        if lab.errors():
            print(f"facade errors: {lab.errors()}", file=sys.stderr)
        description = lab.description
    return document, facade_counts, description


def print_table(args: argparse.Namespace, document: dict[str, Any],
                facade_counts: dict[str, dict[int, int]], description: str) -> None:
    modes = document["modes"]
    floor = args.brokers * args.seconds / (args.window_ms / 1000)
    print(f"\n## {args.rate:,} msg/s, {args.partitions:,} partitions, {args.brokers} brokers, "
          f"round trip {args.rtt_ms:g} ms"
          + (f" ± {args.jitter_ms:g} ms" if args.jitter_ms else "")
          + f", {args.seconds:g} s, window {args.window_ms} ms "
          f"(floor {args.brokers} × {args.seconds:g} s / {args.window_ms / 1000:g} s = "
          f"{floor:,.0f} requests)\n")
    print(f"On a {description}.\n")
    print("| Metric | " + " | ".join(modes) + " | Change vs " + modes[0] + " |")
    print("|---|" + "---|" * (len(modes) + 1))
    rows = summary_rows(document)
    for metric in dict.fromkeys(r["metric"] for r in rows):
        cells = [r for r in rows if r["metric"] == metric]
        values = " | ".join(f"{c['median']:,.1f}" for c in cells)
        changes = ", ".join(f"{c['mode']}: {c['change']}" for c in cells[1:])
        print(f"| {metric} | {values} | {changes} |")
    runs = {run["mode"]: run for run in document["runs"]}
    rtt = " | ".join(f"{runs[m]['rtt']['p50_ms']:,.2f}" for m in modes)
    print(f"| request round trip p50 ms | {rtt} | |")
    kbatch_counts = " | ".join(_per_node(Counter({int(k): v for k, v in
                                                  runs[m]["requests_by_broker"].items()}))
                               for m in modes)
    print(f"| requests per broker (kbatch) | {kbatch_counts} | |")
    wire = " | ".join(_per_node(Counter(facade_counts.get(m, {}))) for m in modes)
    print(f"| Produce requests per node (facade) | {wire} | |")
    print("\nSeed (3 brokers, 60 s, 20,000 msg/s, window 500 ms):")
    for mode, text in SEED_FIGURES.items():
        print(f"- {mode}: {text}")
    for mode in modes:
        run = runs[mode]
        lag = run["generator_lag"]
        print(f"{mode}: achieved {run['rate']['achieved_msgs_per_s']:,.0f} msg/s, generator lag "
              f"p99 {lag['p99_ms']:.1f} ms, max {lag['max_ms']:.1f} ms; failed "
              f"{run['messages']['failed']:,}")


def _per_node(counts: Counter[int]) -> str:
    return " / ".join(f"{node}: {counts[node]:,}" for node in sorted(counts)) or "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--rtt-ms", type=float, default=1.0)
    parser.add_argument("--jitter-ms", type=float, default=0.0)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--rate", type=int, default=20_000)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--window-ms", type=int, default=500)
    parser.add_argument("--modes", default=None,
                        help=f"comma-separated (default: those of {','.join(WANTED_MODES)} "
                             "this kbatch has)")
    parser.add_argument("--mode-config", action="append", default=[],
                        help="extra MODE:KEY=VALUE settings")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    document, facade_counts, description = run(args)
    document["facade_produce_requests"] = facade_counts
    document["broker"] = description
    print_table(args, document, facade_counts, description)
    if args.json:
        args.json.write_text(json.dumps(document, indent=2))


if __name__ == "__main__":
    main()
