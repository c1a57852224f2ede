"""Ack latency beside end-to-end latency, per linger mode, with consumers in the run.

Two scenarios, each mode on a fresh embedded Tansu broker (or `--broker kafka`, one
Apache Kafka cluster for all runs), 100-byte keyless values, kbatch's defaults otherwise:

1. seed: the broker-level linger seed's scenario, 1,000 partitions at 20,000 msg/s, every
   mode's window 500 ms (`--linger-ms 500`);
2. low: 100 partitions at 1,000 msg/s, window 500 ms.

Modes librdkafka, partition, broker, adaptive, aimd (adaptive and aimd choose their own
window). Each scenario runs twice: the consumers with `fetch.wait.max.ms` 500 (the Java
consumer's default `fetch.max.wait.ms`, and librdkafka's) and with 10. Each run is one
`kbatch compare-modes --consume` (docs/guides/end-to-end-latency.md).

    python benchmarks/end_to_end.py [--seed-seconds 20] [--low-seconds 20]
        [--scenarios seed,low] [--fetch-waits 500,10] [--modes ...] [--broker kafka]
        [--json PATH]

The machine is shared: the table prints the load average before and after each scenario;
compare modes within one scenario and one fetch wait (they ran back to back), not across.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MODES = "librdkafka,partition,broker,adaptive,aimd"
SCENARIOS = {"seed": {"partitions": 1000, "rate": 20000},
             "low": {"partitions": 100, "rate": 1000}}
WINDOW_MS = 500


def load_average() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def compare(scenario: str, seconds: float, fetch_wait: int, modes: str,
            broker: str | None) -> dict[str, Any]:
    shape = SCENARIOS[scenario]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        command = [sys.executable, "-m", "cli.main", "compare-modes", "--modes", modes,
                   "--partitions", str(shape["partitions"]), "--rate", str(shape["rate"]),
                   "--duration", str(seconds), "--linger-ms", str(WINDOW_MS), "--consume",
                   "--consumer-config", f"fetch.wait.max.ms={fetch_wait}", "--no-progress",
                   "--json", str(out), *(("--broker", broker) if broker else ())]
        print(f"{scenario}, fetch.wait.max.ms={fetch_wait}: {' '.join(command[2:])}",
              file=sys.stderr)
        done = subprocess.run(command, cwd=ROOT, text=True, capture_output=True)
        if not out.exists():
            raise SystemExit(f"compare-modes failed ({done.returncode}):\n{done.stderr}")
        return json.loads(out.read_text())


def rows(document: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for run in document["runs"]:
        ack, e2e = run["latency"], run.get("e2e_latency") or {}
        consumers = run.get("consumers") or {}
        readback = consumers.get("readback") or {}
        found.append({
            "mode": run["mode"], "requests": run["requests_sent"],
            "ack_p50": ack["p50_ms"], "ack_p99": ack["p99_ms"],
            "e2e_p50": e2e.get("p50_ms"), "e2e_p99": e2e.get("p99_ms"),
            "achieved": run["rate"]["achieved_msgs_per_s"],
            "missing": readback.get("missing"),
            "lag_max_s": (consumers.get("lag") or {}).get("max_s"),
            "problems": consumers.get("problems", []),
        })
    return found


def number(value: Any, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def table(results: list[dict[str, Any]]) -> str:
    lines = ["| scenario | fetch wait ms | mode | requests | msg/s | ack p50 | ack p99 | "
             "e2e p50 | e2e p99 | e2e - ack p50 | missing | max lag s |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for result in results:
        for r in result["rows"]:
            gap = (r["e2e_p50"] - r["ack_p50"]) if r["e2e_p50"] is not None else None
            lines.append(
                f"| {result['scenario']} | {result['fetch_wait_ms']} | {r['mode']} | "
                f"{r['requests']:,} | {r['achieved']:,.0f} | {number(r['ack_p50'])} | "
                f"{number(r['ack_p99'])} | {number(r['e2e_p50'])} | {number(r['e2e_p99'])} | "
                f"{number(gap)} | {r['missing'] if r['missing'] is not None else '-'} | "
                f"{number(r['lag_max_s'], 2)} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed-seconds", type=float, default=20.0)
    parser.add_argument("--low-seconds", type=float, default=20.0)
    parser.add_argument("--scenarios", default="seed,low")
    parser.add_argument("--fetch-waits", default="500,10")
    parser.add_argument("--modes", default=MODES)
    parser.add_argument("--broker", default=None, help="kafka: one Apache Kafka cluster")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    results = []
    for scenario in args.scenarios.split(","):
        seconds = args.seed_seconds if scenario == "seed" else args.low_seconds
        for wait in (int(w) for w in args.fetch_waits.split(",")):
            before = load_average()
            document = compare(scenario, seconds, wait, args.modes, args.broker)
            result = {"scenario": scenario, "fetch_wait_ms": wait, "seconds": seconds,
                      "load_before": before, "load_after": load_average(),
                      "broker": document.get("broker"), "rows": rows(document)}
            results.append(result)
            print(table([result]).splitlines()[-1] if result["rows"] else "", file=sys.stderr)
    print(table(results))
    print()
    for result in results:
        print(f"- {result['scenario']}, fetch wait {result['fetch_wait_ms']} ms, "
              f"{result['seconds']:.0f} s per mode on {result['broker']}: load average "
              f"(1/5/15 min) {result['load_before']} before, {result['load_after']} after")
        for r in result["rows"]:
            for problem in r["problems"]:
                print(f"  - {r['mode']}: {problem}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
