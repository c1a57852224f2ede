"""Is librdkafka's lag in the seed scenario librdkafka's own, or kbatch's way of driving it?

Starts a 3-node Apache Kafka cluster (``producer_core.brokers.kafka``) and, each on a fresh
1,000-partition topic, runs with the same settings (100-byte keyless values, ``linger.ms``
500, ``acks=all``, idempotence on):

1. librdkafka's own C benchmark, ``rdkafka_performance -P``, paced at the seed's rate
   (``-r``), then unthrottled (the rate librdkafka itself can reach on this cluster);
2. kbatch's mode ``librdkafka`` (the same C library, driven from Python) at the seed's rate.

``rdkafka_performance`` is librdkafka's ``examples/rdkafka_performance.c``. Build it from
librdkafka's sources (Debian: ``apt-get source librdkafka``; or a release tarball)::

    ./configure --disable-gssapi --disable-zstd --disable-lz4-ext --disable-curl \\
        --disable-sasl && make -C src && make -C examples rdkafka_performance

and pass its path with ``--rdkafka-performance``.

    python benchmarks/librdkafka_reference.py --rdkafka-performance PATH
        [--seconds 30] [--rate 20000] [--partitions 1000] [--linger-ms 500] [--json PATH]

Pacing differs: ``rdkafka_performance -r R`` sleeps ``1e6/R`` microseconds after every
message, so the sleep's own overhead lowers the rate it reaches; kbatch paces against the
schedule. The unthrottled run shows what the library and cluster can take at all.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from producer_core.analysis.compare import compare, parse_mode_configs
from producer_core.brokers.kafka import KafkaCluster
from producer_core.workload.workload import Workload

_SUMMARY = re.compile(
    r"% (\d+) messages produced \((\d+) bytes\), (\d+) delivered \(offset -?\d+, (\d+) failed\) "
    r"in (\d+)ms: (\d+) msgs/s and ([\d.]+) MB/s, (\d+) produce failures, (\d+) in queue")
LIBRDKAFKA_SETTINGS = {"linger.ms": None, "acks": "all", "enable.idempotence": "true",
                       "batch.num.messages": "10000", "queue.buffering.max.messages": "100000"}


def _topic(cluster: KafkaCluster, name: str, partitions: int) -> None:
    """A fresh topic of the scenario's shape, created through kbatch's own transport."""
    import asyncio

    from producer_core.transport.transport import Cluster

    async def create() -> None:
        client = Cluster(cluster.bootstrap)
        try:
            await client.connect()
            await client.ensure_topic(name, partitions, timeout_s=60)
        finally:
            await client.close()

    asyncio.run(create())


def rdkafka_performance(tool: Path, cluster: KafkaCluster, args: argparse.Namespace,
                        rate: int | None, label: str) -> dict[str, Any]:
    """One run of the C tool; its final summary line parsed."""
    topic = f"librdkafka-ref-{label}"
    _topic(cluster, topic, args.partitions)
    count = int(args.rate * args.seconds)
    settings = {**LIBRDKAFKA_SETTINGS, "linger.ms": str(args.linger_ms)}
    latencies = Path(tempfile.mkdtemp()) / "latency.txt"
    cmd = [str(tool), "-P", "-t", topic, "-b", cluster.bootstrap, "-s", "100", "-c", str(count),
           "-a", "-1", "-i", "5000", "-l", "-A", str(latencies)]
    if rate is not None:
        cmd += ["-r", str(rate)]
    for key, value in settings.items():
        cmd += ["-X", f"{key}={value}"]
    print(f"  rdkafka_performance {label}...", file=sys.stderr)
    _warm_up(tool, cluster, topic, args.partitions)
    started = time.monotonic()
    cpu_before = _children_cpu()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False,
                          timeout=args.seconds * 6 + 120)
    wall = time.monotonic() - started
    cpu = _children_cpu() - cpu_before
    summaries = list(_SUMMARY.finditer(proc.stdout))
    if not summaries:
        raise SystemExit(f"rdkafka_performance printed no summary ({proc.returncode}):\n"
                         f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    produced, _bytes, delivered, failed, ms, per_s, _mb, backpressure, _queued = (
        int(float(x)) for x in summaries[-1].groups())
    latency_ms = _percentiles(latencies)
    return {"label": label, "target_rate": rate, "produced": produced, "delivered": delivered,
            "failed": failed, "elapsed_s": ms / 1000, "delivered_per_s": per_s,
            "queue_full_retries": backpressure, "wall_s": wall, "cpu_s": cpu,
            "latency_ms": latency_ms,
            "command": " ".join(cmd[1:])}


def _warm_up(tool: Path, cluster: KafkaCluster, topic: str, partitions: int) -> None:
    """A new topic's first requests can stall for seconds on Kafka (every partition's
    replicas start fetching): ten unmeasured messages a partition first, for every run."""
    subprocess.run([str(tool), "-P", "-t", topic, "-b", cluster.bootstrap, "-s", "100", "-c",
                    str(partitions * 10), "-a", "-1", "-q"], capture_output=True,
                   check=False, timeout=300)


def _percentiles(path: Path) -> dict[str, float] | None:
    """p50 / p99 / max of the per-message latencies the tool wrote (microseconds a line)."""
    import numpy as np

    if not path.is_file():
        return None
    values = np.loadtxt(path, dtype=np.float64, ndmin=1)
    if values.size == 0:
        return None
    return {"p50": float(np.percentile(values, 50)) / 1000,
            "p99": float(np.percentile(values, 99)) / 1000, "max": float(values.max()) / 1000}


def _children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def kbatch_librdkafka(tool: Path, cluster: KafkaCluster,
                      args: argparse.Namespace) -> dict[str, Any]:
    """kbatch's mode on its own fresh topic, warmed up as the C tool's are."""
    topic = "librdkafka-ref-kbatch"
    _topic(cluster, topic, args.partitions)
    _warm_up(tool, cluster, topic, args.partitions)
    workload = Workload(topic=topic, partitions=args.partitions,
                        rate=args.rate, duration_s=args.seconds, message_size=100)
    runs = parse_mode_configs(["librdkafka"], [], [], linger_ms=args.linger_ms)
    print("  kbatch librdkafka...", file=sys.stderr)
    document = compare(workload, runs, cluster.bootstrap)
    run = document["runs"][0]
    return {"achieved_per_s": run["rate"]["achieved_msgs_per_s"],
            "acknowledged": run["messages"]["acknowledged"],
            "failed": run["messages"]["failed"], "requests": run["requests_sent"],
            "lag_p99_ms": run["generator_lag"]["p99_ms"],
            "lag_max_ms": run["generator_lag"]["max_ms"],
            "blocked_ms": run["generator_blocked"]["total_ms"],
            "p50_ms": run["latency"]["p50_ms"],
            "p99_ms": run["latency"]["p99_ms"], "max_ms": run["latency"]["max_ms"]}


def print_table(args: argparse.Namespace, c_runs: list[dict[str, Any]],
                kbatch: dict[str, Any] | None) -> None:
    print(f"\n## librdkafka on 3 Apache Kafka nodes: {args.partitions:,} partitions, "
          f"100-byte values, linger.ms {args.linger_ms}, acks=all, idempotent\n")
    print("| producer | asked msg/s | delivered msg/s | delivered | failed | queue-full retries "
          "| latency ms |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for run in c_runs:
        asked = f"{run['target_rate']:,}" if run["target_rate"] else "unthrottled"
        ms = run["latency_ms"]
        lat = (f"p50 {ms['p50']:,.0f}, p99 {ms['p99']:,.0f}, max {ms['max']:,.0f}"
               if ms else "-")
        print(f"| rdkafka_performance (C) | {asked} | {run['delivered_per_s']:,} "
              f"| {run['delivered']:,} | {run['failed']:,} | {run['queue_full_retries']:,} "
              f"| {lat} (from produce()) |")
    if kbatch is not None:
        print(f"| kbatch --mode librdkafka | {args.rate:,} | {kbatch['achieved_per_s']:,.0f} "
              f"| {kbatch['acknowledged']:,} | {kbatch['failed']:,} | - "
              f"| p50 {kbatch['p50_ms']:,.0f}, p99 {kbatch['p99_ms']:,.0f}, max "
              f"{kbatch['max_ms']:,.0f} (from the intended time); generator lag p99 "
              f"{kbatch['lag_p99_ms']:,.1f}, max {kbatch['lag_max_ms']:,.1f}, blocked on "
              f"the full queue {kbatch['blocked_ms']:,.0f} |")
    for run in c_runs:
        print(f"\n`rdkafka_performance {run['command']}`: wall {run['wall_s']:.1f} s, "
              f"CPU {run['cpu_s']:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rdkafka-performance", type=Path, required=True)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--rate", type=int, default=20_000)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--linger-ms", type=int, default=500)
    parser.add_argument("--no-kbatch", action="store_true")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if not args.rdkafka_performance.is_file():
        raise SystemExit(f"{args.rdkafka_performance} is not a file: build rdkafka_performance "
                         "first (see this script's docstring).")
    with KafkaCluster(nodes=3, progress=lambda m: print(m, file=sys.stderr)) as cluster:
        print(f"Started {cluster.description} in {cluster.start_time_s:.1f} s.",
              file=sys.stderr)
        c_runs = [rdkafka_performance(args.rdkafka_performance, cluster, args, args.rate,
                                      "paced"),
                  rdkafka_performance(args.rdkafka_performance, cluster, args, None,
                                      "unthrottled")]
        kbatch = (None if args.no_kbatch
                  else kbatch_librdkafka(args.rdkafka_performance, cluster, args))
    print_table(args, c_runs, kbatch)
    if args.json:
        args.json.write_text(json.dumps({"rdkafka_performance": c_runs, "kbatch": kbatch},
                                        indent=2))


if __name__ == "__main__":
    main()
