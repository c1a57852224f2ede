"""Fidelity of kbatch's emulations against the real clients they reproduce (issue #18).

For each broker (the embedded Tansu broker and a 3-node Apache Kafka cluster) and each
scenario, runs each pair of `producer_core.drivers.kafka_java.fidelity.PAIRS` on the same workload
(fresh topics, same seed), interleaved, and prints one table row per pair and figure with
the bounds' verdict:

- seed:  1,000 partitions, 20,000 msg/s, linger.ms=500, 100-byte keyless values
- low:   16 partitions, 100 msg/s, linger.ms=5

Both sides of a pair get the same settings explicitly (``-X acks=all`` and linger.ms), so
the table stays valid whatever kbatch's defaults become. Latency is from each message's
intended send time; ``--warmup`` seconds at the start are left out of latency on both
sides (the JVM compiles its hot paths there).

    python benchmarks/fidelity.py [--seconds 25] [--warmup 5] [--brokers tansu,kafka]
        [--scenarios seed,low] [--repeat 1] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import AbstractContextManager
from typing import Any

from producer_core import Workload, compare, parse_mode_configs
from producer_core import run as engine_run
from producer_core.drivers.kafka_java.fidelity import PAIRS, check
from producer_core.measure.per_run import on_own_broker

SCENARIOS = {
    "seed": {"partitions": 1000, "rate": 20000, "linger_ms": 500},
    "low": {"partitions": 16, "rate": 100, "linger_ms": 5},
}
COMMON = [("acks", "all")]


def _broker(name: str) -> AbstractContextManager[Any]:
    if name == "kafka":
        from producer_core.brokers.kafka import KafkaCluster

        return KafkaCluster(nodes=3, progress=lambda m: print(m, file=sys.stderr))
    from producer_core import EmbeddedBroker

    return EmbeddedBroker()


def run_pair(bootstrap: str, scenario: str, pair: tuple[str, tuple[str, ...], str],
             args: argparse.Namespace, own_brokers: bool = False) -> dict[str, Any]:
    """One pair on one scenario; `own_brokers`: each run on its own Tansu (see per_run)."""
    spec = SCENARIOS[scenario]
    emulation, extra, real = pair
    workload = Workload(topic=f"fidelity-{scenario}", partitions=spec["partitions"],
                        rate=spec["rate"], duration_s=args.seconds, message_size=100,
                        warmup_s=args.warmup)
    per_mode = [f"{emulation}:{item}" for item in extra]
    runs = parse_mode_configs([real, emulation], COMMON, per_mode,
                              linger_ms=spec["linger_ms"])
    run_one = on_own_broker(engine_run, {}) if own_brokers else engine_run  # compare's own
    document = compare(workload, runs, bootstrap, repeat=args.repeat, run_one=run_one,
                       on_start=lambda mode, _: print(f"  {mode}...", file=sys.stderr))
    by_mode: dict[str, list[dict[str, Any]]] = {}
    for run in document["runs"]:
        by_mode.setdefault(run["mode"], []).append(run)
    rows = []
    for real_run, emulated_run in zip(by_mode[real], by_mode[emulation], strict=True):
        for c in check(real_run, emulated_run):
            rows.append({"metric": c.metric, "real": c.real, "emulated": c.emulated,
                         "difference": c.difference, "ok": c.ok})
    label = emulation + "".join(f" -X {item}" for item in extra)
    return {"scenario": scenario, "real": real, "emulation": label, "rows": rows,
            "failed": {run["mode"]: run["messages"]["failed"] for run in document["runs"]},
            "generator_lag_p99_ms": {run["mode"]: run["generator_lag"]["p99_ms"]
                                     for run in document["runs"]}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=25.0)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--brokers", default="tansu,kafka")
    parser.add_argument("--scenarios", default="seed,low")
    parser.add_argument("--pairs", default="java,partition",
                        help="emulation modes whose pairs to run")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    pairs = [p for p in PAIRS if p[0] in args.pairs.split(",")]
    results = []
    for broker_name in args.brokers.split(","):
        with _broker(broker_name) as broker:
            for scenario in args.scenarios.split(","):
                for pair in pairs:
                    print(f"{broker_name} {scenario}: {pair[2]} vs {pair[0]}", file=sys.stderr)
                    item = run_pair(broker.bootstrap, scenario, pair, args,
                                    own_brokers=broker_name == "tansu")
                    item["broker"] = broker_name
                    results.append(item)
                    _print(item)
                    if args.json:
                        with open(args.json, "w") as handle:
                            json.dump(results, handle, indent=2)


def _print(item: dict[str, Any]) -> None:
    print(f"| {item['broker']} | {item['scenario']} | {item['real']} vs {item['emulation']} |")
    for row in item["rows"]:
        verdict = "ok" if row["ok"] else "OUT"
        print(f"|   | {row['metric']} | {row['real']:,.1f} | {row['emulated']:,.1f} | "
              f"{row['difference']} | {verdict} |")
    print(f"|   | failed {item['failed']}, generator lag p99 ms "
          f"{item['generator_lag_p99_ms']} |", flush=True)


if __name__ == "__main__":
    main()
