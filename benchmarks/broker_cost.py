"""What a batching policy costs the broker: the seed scenario and a grid with a fitted model.

Two parts (``--part seed``, ``--part grid`` or both):

* **seed**: the broker-level linger seed's scenario (1,000 partitions, 100-byte values,
  20,000 msg/s, a 500 ms window, ``--seconds`` measured after ``--warmup``) on 3 Apache
  Kafka nodes and on 3 Tansu brokers (kbatch's lab), modes librdkafka, kafka-java,
  partition, java, broker, adaptive. Per mode: requests, latency p99, broker CPU s per
  million messages, Kafka's request-handler idle % and Produce TotalTime p99.
* **grid**: partitions 10 / 100 / 1,000 x windows 0 / 5 / 50 / 500 ms x modes partition
  and broker on one Kafka node; then a least-squares fit of the broker's CPU seconds over
  the measured window, ``cpu = a*requests + b*partition_batches + c*MB``, with the
  coefficients' standard errors and the fit's relative error, and what it says about one
  1,000-partition request against 1,000 one-partition requests.

    python benchmarks/broker_cost.py [--part seed,grid] [--seconds 60] [--warmup 15]
        [--rate 20000] [--grid-seconds 20] [--grid-warmup 5] [--grid-rate 20000]
        [--json PATH]

Every figure comes from kbatch's own broker_cost section (docs/guides/broker-cost.md).
The machine is shared: print `uptime` beside the figures and prefer the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from producer_core import Workload, compare, parse_mode_configs, run
from producer_core.measure.cost_model import fit
from producer_core.measure.per_run import run_targets
from producer_core.results.results_io import RunRecorder

SEED_MODES = "librdkafka,kafka-java,partition,java,broker,adaptive"
GRID_MODES = ("partition", "broker")
GRID_PARTITIONS = (10, 100, 1000)
GRID_WINDOWS = (0, 5, 50, 500)
# broker mode's requests may carry the whole window (the seed's settings)
BIG_REQUESTS = ["broker:broker.batch.max.bytes=10485760", "broker:max.request.size=10485760"]


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _row(document: dict[str, Any], results: Any) -> dict[str, Any]:
    cost = document.get("broker_cost") or {}
    kafka = cost.get("kafka") or {}
    window = cost.get("window") or {}
    share = (window.get("seconds") or 0) / max(document["duration_s"], 1e-9)
    batches = sum(r.partitions for r in results.metrics.requests
                  if r.send_time_s >= window.get("start_s", 0.0))
    if not results.metrics.requests and results.metrics.client_counts is not None:
        batches = round(results.metrics.client_counts.batches * share)
    return {
        "mode": document["mode"],
        "requests": window.get("requests"), "requests_sent": document["requests_sent"],
        "partition_batches": batches, "mb": window.get("mb"),
        "messages": window.get("messages"),
        "p99_ms": document["latency"]["p99_ms"],
        "achieved_msgs_per_s": document["rate"]["achieved_msgs_per_s"],
        "broker_cpu_s": cost.get("broker", {}).get("cpu_s"),
        "broker_cpu_s_per_million_msgs": cost.get("broker", {}).get("cpu_s_per_million_msgs"),
        "broker_cpu_ms_per_1k_requests": cost.get("broker", {}).get("cpu_ms_per_1k_requests"),
        "client_cpu_s_per_million_msgs": cost.get("client", {}).get("cpu_s_per_million_msgs"),
        "handler_idle_pct": kafka.get("request_handler_idle_pct"),
        "produce_p99_ms": ((kafka.get("produce_time_ms") or {}).get("total") or {}).get("p99"),
        "kafka_produce_requests_run": kafka.get("produce_requests_run"),
    }


def run_modes(targets: tuple[Any, Any], modes: list[str], partitions: int, rate: float,
              window_ms: int, seconds: float, warmup: float) -> list[dict[str, Any]]:
    """Every mode once on a fresh topic (`targets`: what `run_targets` yields)."""
    workload = Workload(topic=f"cost-{partitions}p-{window_ms}ms", partitions=partitions,
                        rate=rate, duration_s=seconds + warmup, warmup_s=warmup,
                        message_size=100)
    mode_runs = parse_mode_configs(modes, [], BIG_REQUESTS if "broker" in modes else [],
                                   linger_ms=window_ms)
    target, on_its_broker = targets
    recorder = RunRecorder(on_its_broker(run))
    document = compare(workload, mode_runs, target.bootstrap, 1,
                       on_start=lambda mode, _: _say(f"  {mode}, {partitions} partitions, "
                                                     f"window {window_ms} ms..."),
                       run_one=recorder)
    return [_row(doc, res) for doc, res in zip(document["runs"], recorder.results,
                                               strict=True)]


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    return f"{value:,.{digits}f}" if isinstance(value, float) else f"{value:,}"


def print_table(title: str, rows: list[dict[str, Any]], keys: list[str]) -> None:
    print(f"\n{title}")
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for row in rows:
        print("| " + " | ".join(_fmt(row.get(k)) for k in keys) + " |")


def _save(path: Path | None, report: dict[str, Any]) -> None:
    """Keep what was measured so far (a long benchmark must not lose it to a late error)."""
    if path is not None:
        path.write_text(json.dumps(report, indent=2, default=str) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", default="seed,grid")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--warmup", type=float, default=15.0)
    parser.add_argument("--rate", type=float, default=20000.0)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--window-ms", type=int, default=500)
    parser.add_argument("--modes", default=SEED_MODES)
    parser.add_argument("--brokers", default="kafka,tansu")
    parser.add_argument("--grid-seconds", type=float, default=20.0)
    parser.add_argument("--grid-warmup", type=float, default=5.0)
    parser.add_argument("--grid-rate", type=float, default=20000.0)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    parts = args.part.split(",")
    report: dict[str, Any] = {"uptime_before": os.getloadavg(), "args": vars(args) | {
        "json": str(args.json)}}
    began = time.monotonic()
    if "seed" in parts:
        report["seed"] = {}
        for broker in args.brokers.split(","):
            shape = {"broker": broker, "brokers": 3}
            _say(f"seed scenario on 3 {broker} brokers...")
            with run_targets(None, shape) as targets:
                rows = run_modes(targets, args.modes.split(","), args.partitions, args.rate,
                                 args.window_ms, args.seconds, args.warmup)
            report["seed"][broker] = rows
            _save(args.json, report)
            print_table(f"seed scenario, 3 {broker} brokers ({args.partitions} partitions, "
                        f"{args.rate:,.0f} msg/s, window {args.window_ms} ms, "
                        f"{args.seconds:g} s after {args.warmup:g} s warm-up)", rows,
                        ["mode", "requests_sent", "kafka_produce_requests_run", "p99_ms",
                         "achieved_msgs_per_s", "broker_cpu_s",
                         "broker_cpu_s_per_million_msgs", "broker_cpu_ms_per_1k_requests",
                         "client_cpu_s_per_million_msgs", "handler_idle_pct",
                         "produce_p99_ms"])
    if "grid" in parts:
        rows = []
        for partitions in GRID_PARTITIONS:
            # a fresh node per partition count: the partitions an earlier row's topics left
            # on the node cost CPU too (idle partitions are not free), which the model lacks
            with run_targets(None, {"broker": "kafka", "brokers": 1}) as targets:
                for window in GRID_WINDOWS:
                    for row in run_modes(targets, list(GRID_MODES), partitions,
                                         args.grid_rate, window, args.grid_seconds,
                                         args.grid_warmup):
                        rows.append({"partitions": partitions, "window_ms": window, **row})
        report["grid"] = rows
        _save(args.json, report)
        print_table(f"grid on 1 Kafka node ({args.grid_rate:,.0f} msg/s, "
                    f"{args.grid_seconds:g} s after {args.grid_warmup:g} s warm-up)", rows,
                    ["partitions", "window_ms", "mode", "requests", "partition_batches", "mb",
                     "broker_cpu_s", "broker_cpu_ms_per_1k_requests", "handler_idle_pct",
                     "produce_p99_ms", "p99_ms"])
        model = fit(rows)
        report["fit"] = model
        print("\nfit: broker CPU = a*requests + b*partition_batches + c*MB "
              f"({model['points']} runs)")
        print(f"  a = {model['a_ms_per_request']:.4f} ms per request "
              f"(± {model['a_stderr_ms']:.4f})")
        print(f"  b = {model['b_ms_per_partition_batch']:.4f} ms per partition batch "
              f"(± {model['b_stderr_ms']:.4f})")
        print(f"  c = {model['c_s_per_mb']:.4f} s per MB (± {model['c_stderr_s']:.4f})")
        print(f"  RMS error {model['rms_error_s']:.3f} s, mean relative error "
              f"{model['mean_relative_error_pct']:.1f}%, R² {model['r2']:.3f}")
        print(f"  one 1,000-partition request ≈ {model['one_1000_partition_request_ms']:.2f} ms"
              f" of broker CPU; 1,000 one-partition requests ≈ "
              f"{model['thousand_1_partition_requests_ms']:.2f} ms"
              + (f" ({model['ratio']:.1f}x)" if model["ratio"] else ""))
    report["uptime_after"] = os.getloadavg()
    report["wall_s"] = round(time.monotonic() - began, 1)
    print(f"\nload average before {report['uptime_before']}, after {report['uptime_after']} "
          f"(a shared machine); {report['wall_s']} s")
    _save(args.json, report)


if __name__ == "__main__":
    main()
