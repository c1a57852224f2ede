"""Seed 000's open question: how do sticky partitioners interact with linger?

round_robin (kbatch's default: keyless messages one at a time), sticky (KIP-480) and
uniform_sticky (KIP-794, Java's default since 3.3, adaptive on) under modes partition and
java (linger.ms = window), broker (broker.linger.ms = window, broker.batch.max.bytes and
max.request.size 10 MB, as `seed_linger.py`) and adaptive (its own window), at the seed
scenario (1,000 partitions, 20,000 msg/s, 100-byte keyless values, window 500 ms) and at
100 msg/s. Per run: requests, msgs/req, partitions/req, latency p50/p99, and how evenly the
partitions were loaded: partitions touched, and the coefficient of variation (std / mean)
of records per partition over all partitions (0 = perfectly even), from the delivery
reports. One fresh embedded Tansu broker per rate and partitioner.

    python benchmarks/sticky.py [--seconds 15] [--rates 20000,100] [--json PATH]
        [--modes partition,java,broker,adaptive]
        [--partitioners round_robin,sticky,uniform_sticky]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(ROOT))

from producer_core import Delivery, EmbeddedBroker, Workload, build_settings, run  # noqa: E402

WINDOW_MS = 500
PARTITIONS = 1000
MODE_SETTINGS = {
    "partition": {"linger.ms": str(WINDOW_MS)},
    "java": {"linger.ms": str(WINDOW_MS)},
    "broker": {"broker.linger.ms": str(WINDOW_MS), "broker.batch.max.bytes": "10485760",
               "max.request.size": "10485760"},
    "adaptive": {},
}


def load_spread(deliveries: list[Delivery], partitions: int) -> tuple[int, float]:
    """(partitions touched, coefficient of variation of records per partition)."""
    counts: Counter[int] = Counter()
    for delivery in deliveries:
        counts[delivery.partition] += len(delivery.message_ids)
    per = np.zeros(partitions)
    for partition, count in counts.items():
        per[partition] = count
    mean = per.mean()
    return len(counts), float(per.std() / mean) if mean else 0.0


def one_run(bootstrap: str, rate: int, seconds: float, mode: str, partitioner: str,
            ) -> dict[str, Any]:
    workload = Workload(topic=f"sticky-{rate}-{mode}-{partitioner}", partitions=PARTITIONS,
                        rate=rate, duration_s=seconds, message_size=100)
    settings = build_settings({**MODE_SETTINGS[mode], "partitioner": partitioner}, mode=mode)
    deliveries: list[Delivery] = []
    doc = run(workload, settings, mode, bootstrap, deliveries=deliveries).to_dict()
    touched, cv = load_spread(deliveries, PARTITIONS)
    latency = doc["latency"]
    return {
        "rate": rate, "mode": mode, "partitioner": partitioner,
        "requests": doc["requests_sent"], "msgs_per_req": doc["msgs_per_req"],
        "partitions_per_req": doc["partitions_per_request"]["mean"],
        "p50_ms": latency["p50_ms"], "p99_ms": latency["p99_ms"],
        "touched": touched, "cv": round(cv, 3),
        "acknowledged": doc["messages"]["acknowledged"],
        "intended": doc["messages"]["intended"],
    }


def print_table(rows: list[dict[str, Any]]) -> None:
    print("| rate | mode | partitioner | requests | msgs/req | partitions/req | p50 ms | p99 ms "
          "| partitions touched | CV records/partition |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['rate']:,} | {r['mode']} | {r['partitioner']} | {r['requests']:,} | "
              f"{r['msgs_per_req']:,.1f} | {r['partitions_per_req']:,.1f} | {r['p50_ms']:.1f} | "
              f"{r['p99_ms']:.1f} | {r['touched']:,} | {r['cv']:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--rates", default="20000,100")
    parser.add_argument("--modes", default="partition,java,broker,adaptive")
    parser.add_argument("--partitioners", default="round_robin,sticky,uniform_sticky")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = []
    for rate in (int(r) for r in args.rates.split(",")):
        for partitioner in args.partitioners.split(","):
            with EmbeddedBroker() as broker:
                for mode in args.modes.split(","):
                    print(f"rate {rate:,}/s, {partitioner}, mode {mode}: {args.seconds:.0f} s",
                          file=sys.stderr)
                    rows.append(one_run(broker.bootstrap, rate, args.seconds, mode,
                                        partitioner))
                    if args.json:
                        args.json.write_text(json.dumps(rows, indent=1))
    print_table(rows)


if __name__ == "__main__":
    main()
