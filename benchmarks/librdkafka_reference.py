"""Is librdkafka's lag in the seed scenario librdkafka's own, or kbatch's way of driving it?

Starts a 3-node Apache Kafka cluster (``producer_core.brokers.kafka``) and, each on a fresh
1,000-partition topic warmed up with ten unmeasured messages a partition, runs with the same
settings (100-byte keyless values, ``linger.ms`` 500, ``acks=all``, idempotence on),
``--repeat`` rounds back to back, the load average beside each run:

1. librdkafka's own C benchmark, ``rdkafka_performance -P``, paced at the seed's rate
   (``-r``); it leaves the partition to librdkafka's default partitioner, which for keyless
   messages is sticky (one partition for ``sticky.partitioning.linger.ms``, which
   librdkafka makes twice ``linger.ms`` when it is not set);
2. kbatch's mode ``librdkafka`` (the same C library, driven from Python), the seed's shape:
   round-robin over every partition, as kbatch's engine;
3. the same with ``-X partitioner=consistent_random``: librdkafka partitions, as in the C
   tool, so the two send the same requests and differ only in who drives the library;
4. kbatch's own engine (mode ``partition``): what generator lag this machine gives a
   Python thread at this moment (the yardstick for the driver's).

Every run is measured the same way: the first ``--warmup`` seconds are left out (kbatch's
``--warmup``; the C tool's first ``rate * warmup`` delivery reports), so a new producer's
and a new topic's start is charged to no one. Latency is from ``produce()`` for the C tool
and from the intended send time for kbatch (the generator lag apart).
With ``--unthrottled``, the C tool also runs once as fast as it can (the rate librdkafka
itself reaches on this cluster). With ``--c-spread``, the C tool also runs paced in the
seed's request shape (``C_SPREAD``: each message to a random partition, no stickiness), so
librdkafka's own figures stand beside kbatch's round-robin run.

``rdkafka_performance`` is librdkafka's ``examples/rdkafka_performance.c``. Build it from
librdkafka's sources (Debian: ``apt-get source librdkafka``; or a release tarball)::

    ./configure --disable-gssapi --disable-zstd --disable-lz4-ext --disable-curl \\
        --disable-sasl && make -C src && make -C examples rdkafka_performance

and pass its path with ``--rdkafka-performance``.

    python benchmarks/librdkafka_reference.py --rdkafka-performance PATH
        [--seconds 30] [--warmup 5] [--repeat 2] [--unthrottled] [--rate 20000]
        [--partitions 1000] [--linger-ms 500] [--c-spread] [--json PATH]

Pacing differs: ``rdkafka_performance -r R`` sleeps ``1e6/R`` microseconds after every
message, so the sleep's own overhead lowers the rate it reaches; kbatch paces against the
schedule. The unthrottled run shows what the library and cluster can take at all.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from producer_core import Workload, compare, parse_mode_configs
from producer_core.brokers.kafka import KafkaCluster
from producer_core.measure.process_cost import read_cpu

_SUMMARY = re.compile(
    r"% (\d+) messages produced \((\d+) bytes\), (\d+) delivered \(offset -?\d+, (\d+) failed\) "
    r"in (\d+)ms: (\d+) msgs/s and ([\d.]+) MB/s, (\d+) produce failures, (\d+) in queue")
LIBRDKAFKA_SETTINGS = {"linger.ms": None, "acks": "all", "enable.idempotence": "true",
                       "batch.num.messages": "10000", "queue.buffering.max.messages": "100000"}


def _topic(cluster: KafkaCluster, name: str, partitions: int) -> None:
    """A fresh topic of the scenario's shape, created through kbatch's own transport."""
    import asyncio

    from producer_core.engine.transport.transport import Cluster

    async def create() -> None:
        client = Cluster(cluster.bootstrap)
        try:
            await client.connect()
            await client.ensure_topic(name, partitions, timeout_s=60)
        finally:
            await client.close()

    asyncio.run(create())


C_SPREAD = {"partitioner": "random", "sticky.partitioning.linger.ms": "0"}
"""The C tool in the seed's request shape: every message to a random partition (stickiness
off), so each window holds a batch for every partition, as kbatch's round-robin does."""


def rdkafka_performance(tool: Path, cluster: KafkaCluster, args: argparse.Namespace,
                        rate: int | None, label: str,
                        extra: dict[str, str] | None = None) -> dict[str, Any]:
    """One run of the C tool; its final summary line parsed. Paced, it sends the warm-up's
    messages first and leaves their latencies out, as kbatch's --warmup does."""
    topic = f"librdkafka-ref-{label}"
    _topic(cluster, topic, args.partitions)
    warmup = int(args.rate * args.warmup) if rate is not None else 0
    count = int(args.rate * args.seconds) + warmup
    settings = {**LIBRDKAFKA_SETTINGS, "linger.ms": str(args.linger_ms), **(extra or {})}
    latencies = Path(tempfile.mkdtemp()) / "latency.txt"
    cmd = [str(tool), "-P", "-t", topic, "-b", cluster.bootstrap, "-s", "100", "-c", str(count),
           "-a", "-1", "-i", "5000", "-l", "-A", str(latencies)]
    if rate is not None:
        cmd += ["-r", str(rate)]
    for key, value in settings.items():
        cmd += ["-X", f"{key}={value}"]
    print(f"  rdkafka_performance {label}...", file=sys.stderr)
    _warm_up(tool, cluster, topic, args.partitions)
    load = os.getloadavg()[0]
    started = time.monotonic()
    cpu_before = _children_cpu()
    brokers_before = _brokers_cpu(cluster)
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False,
                          timeout=(args.seconds + args.warmup) * 6 + 120)
    wall = time.monotonic() - started
    cpu = _children_cpu() - cpu_before
    brokers_cpu = _brokers_cpu(cluster) - brokers_before
    summaries = list(_SUMMARY.finditer(proc.stdout))
    if not summaries:
        raise SystemExit(f"rdkafka_performance printed no summary ({proc.returncode}):\n"
                         f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    produced, _bytes, delivered, failed, ms, per_s, _mb, backpressure, _queued = (
        int(float(x)) for x in summaries[-1].groups())
    latency_ms = _percentiles(latencies, skip=warmup)
    return {"label": label, "load": load, "target_rate": rate, "produced": produced,
            "delivered": delivered, "warmup_messages": warmup,
            "failed": failed, "elapsed_s": ms / 1000, "delivered_per_s": per_s,
            "queue_full_retries": backpressure, "wall_s": wall, "cpu_s": cpu,
            "brokers_cpu_s": brokers_cpu,
            "latency_ms": latency_ms,
            "command": " ".join(cmd[1:])}


def _warm_up(tool: Path, cluster: KafkaCluster, topic: str, partitions: int) -> None:
    """A new topic's first requests can stall for seconds on Kafka (every partition's
    replicas start fetching): ten unmeasured messages a partition first, for every run."""
    subprocess.run([str(tool), "-P", "-t", topic, "-b", cluster.bootstrap, "-s", "100", "-c",
                    str(partitions * 10), "-a", "-1", "-q"], capture_output=True,
                   check=False, timeout=300)


def _percentiles(path: Path, skip: int = 0) -> dict[str, float] | None:
    """p50 / p99 / max of the per-message latencies the tool wrote (microseconds a line,
    in delivery order), the first `skip` left out."""
    import numpy as np

    if not path.is_file():
        return None
    values = np.loadtxt(path, dtype=np.float64, ndmin=1)[skip:]
    if values.size == 0:
        return None
    return {"p50": float(np.percentile(values, 50)) / 1000,
            "p99": float(np.percentile(values, 99)) / 1000, "max": float(values.max()) / 1000}


def _brokers_cpu(cluster: KafkaCluster) -> float:
    """CPU seconds the Kafka nodes have used so far: on 2 cores the brokers' cost of a
    request shape is CPU the generator does not get."""
    readings = (read_cpu(pid) for pid in cluster.pids)
    return sum(r.total_s for r in readings if r is not None)


def _children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def kbatch_run(tool: Path, cluster: KafkaCluster, args: argparse.Namespace, label: str,
               mode: str, settings: list[tuple[str, str]]) -> dict[str, Any]:
    """One kbatch mode on its own fresh topic, warmed up as the C tool's are, its first
    --warmup seconds left out."""
    topic = f"librdkafka-ref-{label}"
    _topic(cluster, topic, args.partitions)
    _warm_up(tool, cluster, topic, args.partitions)
    workload = Workload(topic=topic, partitions=args.partitions, rate=args.rate,
                        duration_s=args.seconds + args.warmup, warmup_s=args.warmup,
                        message_size=100)
    runs = parse_mode_configs([mode], settings, [], linger_ms=args.linger_ms)
    print(f"  kbatch {label}...", file=sys.stderr)
    load = os.getloadavg()[0]
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    brokers_before = _brokers_cpu(cluster)
    document = compare(workload, runs, cluster.bootstrap)
    after = resource.getrusage(resource.RUSAGE_SELF)
    run = document["runs"][0]
    return {"label": label, "mode": mode, "settings": dict(settings), "load": load,
            "cpu_s": (after.ru_utime + after.ru_stime) - (cpu.ru_utime + cpu.ru_stime),
            "brokers_cpu_s": _brokers_cpu(cluster) - brokers_before,
            "achieved_per_s": run["rate"]["achieved_msgs_per_s"],
            "acknowledged": run["messages"]["acknowledged"],
            "failed": run["messages"]["failed"], "requests": run["requests_sent"],
            "lag_p99_ms": run["generator_lag"]["p99_ms"],
            "lag_max_ms": run["generator_lag"]["max_ms"],
            "blocked_ms": run["generator_blocked"]["total_ms"],
            "p50_ms": run["latency"]["p50_ms"],
            "p99_ms": run["latency"]["p99_ms"], "max_ms": run["latency"]["max_ms"]}


def kbatch_runs(linger_ms: int) -> tuple[tuple[str, str, list[tuple[str, str]], str], ...]:
    """kbatch's runs of a round. The sticky one uses librdkafka's own partitioner exactly
    as the C tool gets it: librdkafka's default `sticky.partitioning.linger.ms` is twice
    `linger.ms` when not set (rdkafka_conf.c; its documented 10 ms is kbatch's default,
    which kbatch passes on), so it is given here."""
    sticky = str(2 * linger_ms)
    return (
        ("kbatch-rr", "librdkafka", [], "kbatch --mode librdkafka (round-robin)"),
        ("kbatch-sticky", "librdkafka",
         [("partitioner", "consistent_random"), ("sticky.partitioning.linger.ms", sticky)],
         f"kbatch --mode librdkafka -X partitioner=consistent_random "
         f"-X sticky.partitioning.linger.ms={sticky}"),
        ("kbatch-engine", "partition", [], "kbatch --mode partition (engine)"),
    )


def print_table(args: argparse.Namespace, rounds: list[list[dict[str, Any]]]) -> None:
    print(f"\n## librdkafka on 3 Apache Kafka nodes: {args.partitions:,} partitions, "
          f"100-byte values, linger.ms {args.linger_ms}, acks=all, idempotent, "
          f"{args.seconds:g} s measured after {args.warmup:g} s of warm-up\n")
    print("| round | producer | load | delivered msg/s | requests | latency p50 / p99 / max ms "
          "| generator lag p99 / max ms | CPU s | brokers' CPU s |")
    print("|---:|---|---:|---:|---:|---|---|---:|---:|")
    for number, runs in enumerate(rounds, 1):
        for run in runs:
            if "command" in run:  # the C tool
                asked = (f"-r {run['target_rate']:,}" if run["target_rate"]
                         else "unthrottled")
                if "partitioner=random" in run["command"]:
                    asked += ", a random partition per message"
                ms = run["latency_ms"]
                lat = (f"{ms['p50']:,.0f} / {ms['p99']:,.0f} / {ms['max']:,.0f} "
                       "(from produce())" if ms else "-")
                print(f"| {number} | rdkafka_performance (C) {asked} | {run['load']:.1f} "
                      f"| {run['delivered_per_s']:,} | - | {lat} | - | {run['cpu_s']:.1f} "
                      f"| {run['brokers_cpu_s']:.1f} |")
                continue
            print(f"| {number} | {run['title']} | {run['load']:.1f} "
                  f"| {run['achieved_per_s']:,.0f} | {run['requests']:,} "
                  f"| {run['p50_ms']:,.0f} / {run['p99_ms']:,.0f} / {run['max_ms']:,.0f} "
                  f"| {run['lag_p99_ms']:,.1f} / {run['lag_max_ms']:,.1f} "
                  f"| {run['cpu_s']:.1f} | {run['brokers_cpu_s']:.1f} |")
    for runs in rounds[:1]:
        for run in runs:
            if "command" in run:
                print(f"\n`rdkafka_performance {run['command']}`: wall {run['wall_s']:.1f} s, "
                      f"failed {run['failed']}, queue-full retries {run['queue_full_retries']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rdkafka-performance", type=Path, required=True)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--unthrottled", action="store_true")
    parser.add_argument("--rate", type=int, default=20_000)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--linger-ms", type=int, default=500)
    parser.add_argument("--no-kbatch", action="store_true")
    parser.add_argument("--c-spread", action="store_true",
                        help="also run the C tool in the seed's request shape (C_SPREAD)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if not args.rdkafka_performance.is_file():
        raise SystemExit(f"{args.rdkafka_performance} is not a file: build rdkafka_performance "
                         "first (see this script's docstring).")
    with KafkaCluster(nodes=3, progress=lambda m: print(m, file=sys.stderr)) as cluster:
        print(f"Started {cluster.description} in {cluster.start_time_s:.1f} s.",
              file=sys.stderr)
        rounds = [one_round(args, cluster, number) for number in range(1, args.repeat + 1)]
        if args.unthrottled:
            rounds[-1].append(rdkafka_performance(args.rdkafka_performance, cluster, args,
                                                  None, "unthrottled"))
    print_table(args, rounds)
    if args.json:
        args.json.write_text(json.dumps({"rounds": rounds}, indent=2))


def one_round(args: argparse.Namespace, cluster: KafkaCluster,
              number: int) -> list[dict[str, Any]]:
    """The C tool and kbatch's runs back to back, each on its own fresh topic."""
    tool = args.rdkafka_performance
    runs = [rdkafka_performance(tool, cluster, args, args.rate, f"paced-{number}")]
    if args.c_spread:
        runs.append(rdkafka_performance(tool, cluster, args, args.rate,
                                        f"paced-spread-{number}", C_SPREAD))
    if not args.no_kbatch:
        for label, mode, settings, title in kbatch_runs(args.linger_ms):
            run = kbatch_run(tool, cluster, args, f"{label}-{number}", mode, settings)
            runs.append({**run, "title": title})
    return runs


if __name__ == "__main__":
    main()
