"""The broker-level linger seed's scenario on a real 3-node Apache Kafka cluster, with
Apache Kafka's own producer benchmark as a peer.

Starts a 3-node KRaft cluster (``producer_core.brokers.kafka``, the jars from KAFKA_HOME or
kbatch's Maven cache) and runs, each on a fresh 1,000-partition topic: kbatch's modes
librdkafka, partition, java, broker and adaptive (100-byte keyless values, 20,000 msg/s,
window 500 ms: linger.ms / broker.linger.ms = 500), then
``org.apache.kafka.tools.ProducerPerformance`` (what ``kafka-producer-perf-test.sh`` runs)
on the same cluster: same record size, ``--throughput 20000``, ``linger.ms=500``,
``acks=all``, its request count, records per request and time blocked on ``buffer.memory``
from its own producer metrics (``--print-metrics``). Prints one table.

``--perf-test-partitioners sticky,round-robin`` runs the peer once per partitioner: its
default (keyless records stick to one partition until a batch is full) and Kafka's
``RoundRobinPartitioner``, which spreads records over every partition as kbatch's keyless
modes do, so each of the 1,000 partitions holds an open batch.

    python benchmarks/kafka_seed.py [--seconds 60] [--rate 20000] [--partitions 1000]
        [--window-ms 500] [--modes librdkafka,partition,java,broker,adaptive]
        [--no-perf-test] [--perf-test-partitioners sticky,round-robin] [--json PATH]

Latency: kbatch measures from each message's intended send time (the rate schedule);
ProducerPerformance from its own ``send()`` call, so a stalled sender shows less there.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from producer_core import compare, parse_mode_configs
from producer_core.brokers.kafka import KafkaCluster
from producer_core.engine.transport.transport import Cluster

MODES = "librdkafka,partition,java,broker,adaptive"
BROKER_CONFIG = ["broker:broker.batch.max.bytes=10485760", "broker:max.request.size=10485760"]
SEED_FIGURES = {  # the seed's own numbers: 3 brokers, 60 s, 20,000 msg/s, window 500 ms
    "partition": "25,848 requests, 46.4 msgs/req, p50 360 ms",
    "broker": "167 requests, 7,185.6 msgs/req, p50 679 ms",
}
_SUMMARY = re.compile(
    r"(\d+) records sent, ([\d.]+) records/sec .*?([\d.]+) ms avg latency, ([\d.]+) ms max "
    r"latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99.9th")


def kbatch_modes(args: argparse.Namespace, cluster: KafkaCluster) -> dict[str, Any]:
    from producer_core import Workload

    modes = args.modes.split(",")
    workload = Workload(topic="kafka-seed", partitions=args.partitions, rate=args.rate,
                        duration_s=args.seconds, message_size=100)
    mode_runs = parse_mode_configs(modes, [], BROKER_CONFIG if "broker" in modes else [],
                                   linger_ms=args.window_ms)
    return compare(workload, mode_runs, cluster.bootstrap,
                   on_start=lambda mode, _: print(f"  {mode}...", file=sys.stderr))


async def _create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    cluster = Cluster(bootstrap)
    try:
        await cluster.connect()
        await cluster.ensure_topic(topic, partitions, timeout_s=60)
    finally:
        await cluster.close()


PARTITIONERS = {
    "sticky": [],
    "round-robin": ["partitioner.class=org.apache.kafka.clients.producer.RoundRobinPartitioner"],
}
"""The peer's partitioner choices: its default, and one that spreads as kbatch does."""


def perf_test(args: argparse.Namespace, cluster: KafkaCluster, partitioner: str = "sticky"
              ) -> dict[str, Any]:
    """ProducerPerformance on a fresh topic of the same shape; its summary and metrics."""
    topic = f"kafka-seed-perf-test-{partitioner}"
    asyncio.run(_create_topic(cluster.bootstrap, topic, args.partitions))
    dist = cluster._distribution()
    records = int(args.rate * args.seconds)
    cmd = [dist.java, "-Xmx512m", "-cp", dist.classpath,
           "org.apache.kafka.tools.ProducerPerformance", "--topic", topic,
           "--num-records", str(records), "--record-size", "100",
           "--throughput", str(args.rate), "--print-metrics", "--producer-props",
           f"bootstrap.servers={cluster.bootstrap}", f"linger.ms={args.window_ms}", "acks=all",
           *PARTITIONERS[partitioner]]
    print(f"  kafka-producer-perf-test ({partitioner})...", file=sys.stderr)
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False,
                          timeout=args.seconds * 3 + 120)
    out = proc.stdout
    summaries = list(_SUMMARY.finditer(out))  # the last line is the whole run's
    match = summaries[-1] if summaries else None
    if proc.returncode != 0 or match is None:
        raise SystemExit(f"ProducerPerformance failed ({proc.returncode}):\n{out[-3000:]}\n"
                         f"{proc.stderr[-3000:]}")
    metrics = {}
    for name in ("request-total", "records-per-request-avg", "request-latency-avg",
                 "record-error-total", "record-send-total", "bufferpool-wait-time-ns-total",
                 "bufferpool-wait-ratio"):
        found = re.search(rf"^producer-metrics:{name}:\{{[^}}]*\}}\s*:\s*([\d.E+-]+)", out,
                          re.MULTILINE)
        metrics[name] = float(found.group(1)) if found else None
    sent, per_s, avg, peak, p50, p95, p99, p999 = match.groups()
    return {"records": int(sent), "records_per_s": float(per_s), "avg_ms": float(avg),
            "max_ms": float(peak), "p50_ms": float(p50), "p95_ms": float(p95),
            "p99_ms": float(p99), "p999_ms": float(p999), "metrics": metrics,
            "partitioner": partitioner, "command": " ".join(cmd[3:])}


def print_table(args: argparse.Namespace, document: dict[str, Any] | None,
                peers: list[dict[str, Any]], description: str) -> None:
    print(f"\n## {args.rate:,} msg/s, {args.partitions:,} partitions, 100-byte values, "
          f"{args.seconds:g} s, window {args.window_ms} ms, on {description}\n")
    print("| producer | requests | msgs/req | p50 ms | p99 ms | max ms | failed "
          "| blocked on buffer.memory s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for run in (document or {}).get("runs", []):
        lat = run["latency"]
        blocked = run.get("generator_blocked", {}).get("total_ms", 0) / 1000
        print(f"| kbatch {run['mode']} | {run['requests_sent']:,} | {run['msgs_per_req']:,.1f} "
              f"| {lat['p50_ms']:,.1f} | {lat['p99_ms']:,.1f} | {lat['max_ms']:,.1f} "
              f"| {run['messages']['failed']:,} | {blocked:,.1f} |")
    for peer in peers:
        m = peer["metrics"]

        def figure(name: str, digits: int = 0, scale: float = 1.0, m: dict = m) -> str:
            return "?" if m.get(name) is None else f"{m[name] * scale:,.{digits}f}"

        print(f"| kafka-producer-perf-test (Java client, {peer['partitioner']}) "
              f"| {figure('request-total')} | {figure('records-per-request-avg', 1)} "
              f"| {peer['p50_ms']:,.0f} | {peer['p99_ms']:,.0f} | {peer['max_ms']:,.0f} "
              f"| {figure('record-error-total')} "
              f"| {figure('bufferpool-wait-time-ns-total', 1, 1e-9)} |")
    print("\nSeed 000 (3 brokers, 60 s, 20,000 msg/s, window 500 ms):")
    for mode, text in SEED_FIGURES.items():
        print(f"- {mode}: {text}")
    for run in (document or {}).get("runs", []):
        lag = run["generator_lag"]
        print(f"kbatch {run['mode']}: achieved {run['rate']['achieved_msgs_per_s']:,.0f} msg/s, "
              f"generator lag p99 {lag['p99_ms']:.1f} ms; requests per broker "
              f"{run['requests_by_broker']}")
    for peer in peers:
        print(f"kafka-producer-perf-test ({peer['partitioner']}): {peer['records']:,} records, "
              f"{peer['records_per_s']:,.0f} records/s; latency from send() (p95 "
              f"{peer['p95_ms']:,.0f} ms); {peer['command']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--rate", type=int, default=20_000)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--window-ms", type=int, default=500)
    parser.add_argument("--modes", default=MODES)
    parser.add_argument("--no-perf-test", action="store_true")
    parser.add_argument("--perf-test-partitioners", default="sticky",
                        help="comma-separated: " + ", ".join(PARTITIONERS))
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    with KafkaCluster(nodes=3, progress=lambda m: print(m, file=sys.stderr)) as cluster:
        description = cluster.description
        print(f"Started {description} in {cluster.start_time_s:.1f} s.", file=sys.stderr)
        document = kbatch_modes(args, cluster) if args.modes else None
        peers = [] if args.no_perf_test else [
            perf_test(args, cluster, name) for name in args.perf_test_partitioners.split(",")]
    print_table(args, document, peers, description.split(" at ")[0])
    if args.json:
        args.json.write_text(json.dumps({"kbatch": document, "perf_test": peers,
                                         "broker": description}, indent=2))


if __name__ == "__main__":
    main()
