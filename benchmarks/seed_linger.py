"""Reproduce the broker-level linger seed's benchmark on one embedded broker.

1,000 partitions, 100-byte values, 30 s, at 20,000 and then 50,000 msg/s: `librdkafka`
(the real client, linger.ms=500), `partition` and `java` (linger.ms=500) against `broker`
(broker.linger.ms=500, broker.batch.max.bytes=10MB), printed as the seed's "Improvement
Summary" table, each mode's change against the first. The broker collector also gets
max.request.size=10MB, matching its byte cap: one window of 1,000 partitions is about
1.2 MB at 20k msg/s, which the 1 MB default would split into two requests. Each rate gets
a fresh broker (Tansu keeps every message in memory).

    python benchmarks/seed_linger.py [--seconds 30] [--rates 20000,50000] [--json PATH]
        [--modes librdkafka,partition,java,broker] [--mode-config MODE:KEY=VALUE ...]
        [--reference-check]

`--reference-check` also runs `partition` with produce.request.max.partitions=1 (kbatch's
model of stock librdkafka, one partition per request) and sets its requests_sent and
latency percentiles against the `librdkafka` run's: the model should land within ±25%.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from producer_core import (
    ModeRun,
    Workload,
    build_settings,
    compare,
    parse_mode_configs,
    summary_rows,
)
from producer_core import run as engine_run
from producer_core.measure.per_run import on_own_broker

SEED_FIGURES = {  # the seed's own numbers: 3 brokers, 60 s
    20000: {"partition": "25,848 req, 46.4 msgs/req, p50 360 ms",
            "broker": "167 req, 7,185.6 msgs/req, p50 679 ms"},
    50000: {"broker": "349 req, 8,596 msgs/req, p50 315 ms, p95 554, p99 1,004 ms"},
}


BROKER_CONFIG = ["broker:broker.batch.max.bytes=10485760", "broker:max.request.size=10485760"]
REFERENCE_METRICS = ("requests_sent", "msgs_per_req", "p50_ms", "p95_ms", "p99_ms", "max_ms")
TOLERANCE = 0.25


def run_rate(rate: int, seconds: float, partitions: int, modes: list[str],
             extra: list[str], reference_check: bool = False) -> dict[str, Any]:
    workload = Workload(topic=f"seed-{rate}", partitions=partitions, rate=rate,
                        duration_s=seconds, message_size=100)
    mode_runs = parse_mode_configs(
        modes, [], [*(BROKER_CONFIG if "broker" in modes else []), *extra], linger_ms=500)
    own_broker = on_own_broker(engine_run, {})  # each run on its own Tansu (per_run's docstring)
    print(f"rate {rate:,}/s: running {', '.join(modes)} for {seconds:.0f} s each...",
          file=sys.stderr)
    document = compare(workload, mode_runs, "", run_one=own_broker)
    if reference_check:
        # kbatch's per-partition model of stock librdkafka (one partition per request)
        runs = [ModeRun("partition", build_settings(
            {"linger.ms": "500", "produce.request.max.partitions": "1"}, mode="partition"))]
        if "librdkafka" not in modes:
            runs.insert(0, ModeRun("librdkafka", build_settings(
                {"linger.ms": "500"}, mode="librdkafka")))
        print(f"rate {rate:,}/s: reference check, running "
              f"{', '.join(r.mode for r in runs)} (1 partition per request)...",
              file=sys.stderr)
        reference = compare(Workload(topic=f"seed-{rate}-ref", partitions=partitions,
                                     rate=rate, duration_s=seconds, message_size=100),
                            runs, "", run_one=own_broker)
        if "librdkafka" in modes:
            reference["summary"]["librdkafka"] = document["summary"]["librdkafka"]
        document["reference_check"] = reference
    return document


def print_table(rate: int, seconds: float, document: dict[str, Any]) -> None:
    modes = document["modes"]
    floor = seconds / 0.5
    print(f"\n## {rate:,} msg/s, 1 broker, {seconds:.0f} s, window 500 ms "
          f"(floor ≈ {floor:.0f} requests)\n")
    print("| Metric | " + " | ".join(
        modes[:1] + [f"{m} (change vs {modes[0]})" for m in modes[1:]]) + " |")
    print("|---|" + "---|" * len(modes))
    rows = summary_rows(document)
    for metric in dict.fromkeys(r["metric"] for r in rows):
        cells = [r for r in rows if r["metric"] == metric]
        values = " | ".join(f"{c['median']:,.1f}" + (f" ({c['change']})" if c["change"] else "")
                            for c in cells)
        print(f"| {metric} | {values} |")
    for run in document["runs"]:
        for key in ("collector", "policy"):
            if key in run:
                print(f"\n{run['mode']} {key}: {json.dumps(run[key], sort_keys=True)}")
        lag = run["generator_lag"]
        print(f"{run['mode']}: achieved {run['rate']['achieved_msgs_per_s']:,.0f} msg/s, "
              f"generator lag p99 {lag['p99_ms']:.1f} ms, max {lag['max_ms']:.1f} ms, "
              f"latency max {run['latency']['max_ms']:.1f} ms")
    for mode, text in SEED_FIGURES.get(rate, {}).items():
        print(f"seed ({mode}, 3 brokers, 60 s): {text}")
    if "reference_check" in document:
        print_reference(document["reference_check"])


def print_reference(reference: dict[str, Any]) -> None:
    """partition with 1 partition per request against the real librdkafka, ±25%."""
    real = reference["summary"]["librdkafka"]
    model = reference["summary"]["partition"]
    print("\n### Reference check: `partition` with produce.request.max.partitions=1 "
          "against `librdkafka` (linger.ms=500)\n")
    print("| Metric | librdkafka | partition, 1 partition/request | difference | "
          f"within ±{TOLERANCE:.0%} |")
    print("|---|---|---|---|---|")
    for metric in REFERENCE_METRICS:
        base, value = real[metric]["median"], model[metric]["median"]
        diff = (value - base) / base if base else float("inf")
        verdict = "yes" if abs(diff) <= TOLERANCE else "NO"
        print(f"| {metric} | {base:,.1f} | {value:,.1f} | {diff:+.1%} | {verdict} |")
    for run in reference["runs"]:
        lag = run["generator_lag"]
        print(f"{run['mode']} (reference): achieved {run['rate']['achieved_msgs_per_s']:,.0f} "
              f"msg/s, generator lag p99 {lag['p99_ms']:.1f} ms, failed "
              f"{run['messages']['failed']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--rates", default="20000,50000")
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--modes", default="librdkafka,partition,java,broker")
    parser.add_argument("--mode-config", action="append", default=[],
                        help="extra MODE:KEY=VALUE settings, e.g. "
                             "partition:produce.request.max.partitions=1")
    parser.add_argument("--reference-check", action="store_true",
                        help="also run partition with produce.request.max.partitions=1 and "
                             "set it against librdkafka (±25%%)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    documents = {}
    for rate in (int(r) for r in args.rates.split(",")):
        document = run_rate(rate, args.seconds, args.partitions, args.modes.split(","),
                            args.mode_config, args.reference_check)
        documents[str(rate)] = document
        print_table(rate, args.seconds, document)
    if args.json:
        args.json.write_text(json.dumps(documents, indent=2))


if __name__ == "__main__":
    main()
