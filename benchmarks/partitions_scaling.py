"""kbatch's own cost as the partition count grows, beside the broker's (issue 34, target 1).

For each broker (one embedded Tansu broker, one Apache Kafka node), each partition count
(default 64, 1,000, 10,000, 100,000) and each mode (partition, broker), one run at a fixed
rate (default 20,000 msg/s, 100-byte values, window 100 ms) on a fresh topic. Each run is
its own Python process (so its peak RSS is its own): it creates the topic, runs the
engine, then deletes the topic; the figures cover the engine run only (metadata, producer
id, the run, the close):

- kbatch CPU µs/msg: the run process's user+system CPU (`resource.getrusage`, which
  excludes the broker: Tansu and Kafka are other processes) per message sent (acknowledged
  or not: a broker that cannot keep up fails messages kbatch still made and sent);
- kbatch RSS MB: the run process's peak resident set (`VmHWM`, /proc/self/status);
- broker CPU µs/msg: the broker process's utime+stime (/proc/<pid>/stat) over the same
  span, per message sent;
- requests, achieved msg/s, latency p50/p99/max, and the broker round trip p99;
- wall s: how long the engine run took, beside the time it was scheduled for (the
  duration, whose first `--warmup` seconds are sent but not measured). A run much longer
  than scheduled did not keep up (most often the broker: the round trip p99 says so); its
  per-second costs (the generator's paced passes, polls while waiting) are then spread
  over fewer messages per second than scheduled.

Prints one Markdown table per broker and the two ratios the issue targets: kbatch's CPU per
message at 10,000 partitions over its figure at 64 (target <= 2), and kbatch's RSS at
100,000 partitions (target < 400 MB). The machine may be shared: `uptime` is printed.

    python benchmarks/partitions_scaling.py [--partitions 64,1000,10000,100000]
        [--modes partition,broker] [--brokers tansu,kafka] [--rate 20000]
        [--duration 20] [--warmup 2] [--linger-ms 100] [--run-timeout 600] [--json PATH]

A run that has not finished `--run-timeout` seconds after its topic exists is stopped and
reported as such (with the peak RSS and CPU it had reached): a broker that stops answering
must not hang the whole curve.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import threading
import time
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid: int) -> float:
    """utime + stime of a process, from /proc/<pid>/stat (fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def proc_status_mb(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def own_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# ----------------------------------------------------------------------------- one run

def child(args: argparse.Namespace) -> None:
    """One run, in this process: create the topic, say READY, run, print the figures."""
    from producer_core import Workload, parse_mode_configs, run
    from producer_core.engine.transport.transport import Cluster

    topic = f"scaling-{args.mode}-{args.partitions}-{time.time_ns()}"

    async def create() -> None:
        cluster = Cluster(args.bootstrap)
        try:
            await cluster.connect()
            await cluster.ensure_topic(topic, args.partitions, timeout_s=600)
        finally:
            await cluster.close()

    created = time.monotonic()
    asyncio.run(create())
    created_s = time.monotonic() - created
    workload = Workload(topic=topic, partitions=args.partitions, rate=args.rate,
                        duration_s=args.duration, warmup_s=args.warmup, message_size=100)
    settings = parse_mode_configs([args.mode], [], [], linger_ms=args.linger_ms)[0].settings
    rss_before = peak_rss_mb()
    print("READY", flush=True)
    sys.stdin.readline()  # the parent has read the broker's CPU
    cpu = own_cpu_s()
    wall = time.monotonic()
    results = run(workload, settings, args.mode, args.bootstrap)
    cpu = own_cpu_s() - cpu
    wall = time.monotonic() - wall
    try:
        asyncio.run(delete_topic(args.bootstrap, topic))
    except Exception as exc:  # noqa: BLE001 - the run's figures stand without the cleanup
        print(f"  could not delete topic {topic}: {exc}", file=sys.stderr)
    document = results.to_dict()
    print("RESULT " + json.dumps({
        "cpu_s": cpu, "wall_s": wall, "rss_mb": peak_rss_mb(), "rss_before_run_mb": rss_before,
        "topic_created_s": created_s, "requests": document["requests_sent"],
        "sent": document["messages"]["sent"],
        "acknowledged": document["messages"]["acknowledged"],
        "failed": document["messages"]["failed"],
        "achieved": document["rate"]["achieved_msgs_per_s"],
        "latency": {k: document["latency"][k] for k in ("p50_ms", "p99_ms", "max_ms")},
        "rtt_p99_ms": (document.get("rtt") or {}).get("p99_ms"),
        "generator_lag_p99_ms": (document.get("generator_lag") or {}).get("p99_ms"),
    }), flush=True)


async def delete_topic(bootstrap: str, topic: str) -> None:
    """Delete a run's topic: a Kafka node holds one open file per partition at least, and
    two 10,000-partition topics took this machine's node past its 20,000-file limit."""
    from aiokafka.protocol.admin import DeleteTopicsRequest

    from producer_core.engine.transport.transport import Cluster

    cluster = Cluster(bootstrap)
    try:
        view = await cluster.connect()
        conn = await cluster.connection(view.controller_id) if view.controller_id in (
            view.brokers) else await cluster.connection(next(iter(view.brokers)))
        await conn.send(DeleteTopicsRequest([topic], 60_000))
    finally:
        await cluster.close()


def measure(args: argparse.Namespace, bootstrap: str, broker_pids: list[int], mode: str,
            partitions: int) -> dict[str, Any]:
    """One run in a child process; the broker's CPU read around the child's run."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--bootstrap", bootstrap,
           "--mode", mode, "--partitions", str(partitions), "--rate", str(args.rate),
           "--duration", str(args.duration), "--warmup", str(args.warmup),
           "--linger-ms", str(args.linger_ms)]
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env=env)
    assert proc.stdin is not None and proc.stdout is not None
    result: dict[str, Any] | None = None
    broker_cpu = 0.0
    stalled: dict[str, float] = {}

    def stop_if_stalled() -> None:
        """After the deadline, note how far the run got, then stop it."""
        stalled["rss_mb"] = proc_status_mb(proc.pid, "VmHWM")
        stalled["cpu_s"] = process_cpu_s(proc.pid)
        proc.kill()

    deadline: threading.Timer | None = None
    for line in proc.stdout:
        if line.startswith("READY"):
            broker_cpu = sum(process_cpu_s(pid) for pid in broker_pids)
            deadline = threading.Timer(args.run_timeout, stop_if_stalled)
            deadline.start()
            proc.stdin.write("go\n")
            proc.stdin.flush()
        elif line.startswith("RESULT "):
            broker_cpu = sum(process_cpu_s(pid) for pid in broker_pids) - broker_cpu
            result = json.loads(line[len("RESULT "):])
    code = proc.wait()
    if deadline is not None:
        deadline.cancel()
    if result is None:
        error = (f"stopped after {args.run_timeout:g} s without finishing (peak RSS "
                 f"{stalled['rss_mb']:,.0f} MB, CPU {stalled['cpu_s']:.1f} s)" if stalled
                 else f"run exited {code}")
        return {"mode": mode, "partitions": partitions, "error": error}
    sent = max(result["sent"], 1)
    return {"mode": mode, "partitions": partitions, **result, "broker_cpu_s": broker_cpu,
            "scheduled_s": args.duration,
            "kbatch_us_per_msg": result["cpu_s"] / sent * 1e6,
            "broker_us_per_msg": broker_cpu / sent * 1e6}


# ----------------------------------------------------------------------------- brokers

def start_broker(name: str) -> tuple[AbstractContextManager[Any], str, list[int], str]:
    """A started broker: (its context to stop it, bootstrap, pids, description)."""
    if name == "tansu":
        from producer_core import EmbeddedBroker

        broker = EmbeddedBroker().start()
        assert broker.pid is not None
        return broker, broker.bootstrap, [broker.pid], "one embedded Tansu broker"
    from producer_core.brokers.kafka import KafkaCluster

    cluster = KafkaCluster(nodes=1, progress=lambda m: print(m, file=sys.stderr)).start()
    return cluster, cluster.bootstrap, cluster.pids, cluster.description.split(" at ")[0]


def table_head(broker: str) -> None:
    print(f"\n## {broker}\n")
    print("| mode | partitions | kbatch CPU µs/msg | kbatch RSS MB | broker CPU µs/msg | "
          "requests | achieved msg/s | p50 ms | p99 ms | max ms | rtt p99 ms | failed | "
          "wall s (scheduled) | load |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|", flush=True)


def print_row(row: dict[str, Any]) -> None:
    load = f"{row['load']:.1f}" if "load" in row else "-"
    if "error" in row:
        print(f"| {row['mode']} | {row['partitions']:,} | {row['error']} | | | | | | | | | "
              f"| | {load} |", flush=True)
        return
    lat = row["latency"]
    rtt = f"{row['rtt_p99_ms']:,.1f}" if row.get("rtt_p99_ms") is not None else "-"
    print(f"| {row['mode']} | {row['partitions']:,} | {row['kbatch_us_per_msg']:.2f} | "
          f"{row['rss_mb']:,.0f} | {row['broker_us_per_msg']:.2f} | {row['requests']:,} | "
          f"{row['achieved']:,.0f} | {lat['p50_ms']:,.1f} | {lat['p99_ms']:,.1f} | "
          f"{lat['max_ms']:,.1f} | {rtt} | {row['failed']:,} | "
          f"{row['wall_s']:,.1f} ({row['scheduled_s']:g}) | {load} |", flush=True)


def print_ratios(rows: list[dict[str, Any]]) -> None:
    print()
    for mode in sorted({row["mode"] for row in rows}):
        by_count = {row["partitions"]: row for row in rows
                    if row["mode"] == mode and "error" not in row}
        if 64 in by_count and 10_000 in by_count:
            ratio = by_count[10_000]["kbatch_us_per_msg"] / by_count[64]["kbatch_us_per_msg"]
            print(f"- {mode}: kbatch CPU per message at 10,000 partitions / at 64: "
                  f"{ratio:.2f}x (target <= 2x: {'met' if ratio <= 2 else 'MISSED'})")
        if 100_000 in by_count:
            rss = by_count[100_000]["rss_mb"]
            print(f"- {mode}: kbatch RSS at 100,000 partitions: {rss:,.0f} MB "
                  f"(target < 400 MB: {'met' if rss < 400 else 'MISSED'})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", default="64,1000,10000,100000")
    parser.add_argument("--modes", default="partition,broker")
    parser.add_argument("--brokers", default="tansu,kafka")
    parser.add_argument("--rate", type=float, default=20_000.0)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--linger-ms", type=int, default=100)
    parser.add_argument("--run-timeout", type=float, default=600.0)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    parser.add_argument("--mode", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.partitions = int(args.partitions)
        child(args)
        return
    counts = [int(p) for p in args.partitions.split(",")]
    report: dict[str, Any] = {"load_before": os.getloadavg(), "runs": {}}
    for name in args.brokers.split(","):
        context, bootstrap, pids, description = start_broker(name)
        rows: list[dict[str, Any]] = []
        report["runs"][description] = rows
        table_head(f"{description}: {args.rate:,.0f} msg/s, {args.duration:g} s "
                   f"(the first {args.warmup:g} s a warm-up), window {args.linger_ms} ms")
        with context:
            for partitions in counts:
                for mode in args.modes.split(","):
                    print(f"  {name}: {mode}, {partitions:,} partitions...", file=sys.stderr)
                    row = measure(args, bootstrap, pids, mode, partitions)
                    row["load"] = os.getloadavg()[0]
                    rows.append(row)
                    print_row(row)
                    if args.json:
                        args.json.write_text(json.dumps(report, indent=2))
        print_ratios(rows)
    report["load_after"] = os.getloadavg()
    print(f"\nload average before {report['load_before'][0]:.1f}, after "
          f"{report['load_after'][0]:.1f} (1 min; the machine may be shared)")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
