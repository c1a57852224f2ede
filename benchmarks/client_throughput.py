"""Unthrottled throughput of kbatch's engine beside the real clients' own producers (issue 48).

    python benchmarks/client_throughput.py [--messages 1000000] [--runs 3] [--acks 1,all]
        [--brokers tansu,kafka] [--rows ROW,...] [--partitions 64] [--size 100]
        [--go-fed] [--no-startup] [--run-timeout 300] [--json PATH]
    python benchmarks/client_throughput.py --render PATH   # the tables of a saved --json

In one invocation, first on one fresh embedded Tansu broker, then on one Apache Kafka node
(`--brokers`), every row sends `--messages` keyless values of `--size` bytes as fast as it
can to a fresh topic of `--partitions` partitions, with each acks of `--acks`. The runs
are interleaved: round after round (`--runs`), each round every acks and, within it, every
row once, the rows' order rotated by one each round so no row always runs first. Rows:

- `kbatch-none`, `kbatch-partition`: kbatch's own engine, modes none and partition, rate
  max (`run()` with `Workload(rate=None, messages=N)`, as `throughput.py` runs it);
- `rdkafka_performance`: librdkafka's C tool, `-P -c N -s SIZE -a ACKS`, built once from
  the librdkafka tree of the rdkafka-sys crate (`client_tools.py`), `-X linger.ms=5`
  (the tool sets 1000 itself; see `client_tools.RDKAFKA_SETTINGS`);
- `ProducerPerformance`: Kafka's own `kafka-producer-perf-test`, `--num-records N
  --record-size SIZE --throughput -1 --producer-props acks=ACKS`, from the cached Kafka
  4.4.0 jars;
- `franz-go`, `sarama`, `kafka-go` ("own generator"): the Go clients in kbatch's Go client
  driver generating their own messages (`kbatch.generate.*`,
  `producer_core.engine.drivers.go_clients.generate`): the Go program makes N keyless
  values of SIZE bytes (one shared value, as ProducerPerformance shares one payload array)
  and hands them to the client as fast as the client takes them, each client at its own
  defaults, its own default partitioner included (franz-go sticky, sarama random, kafka-go
  round-robin), counts only: the client's ceiling, like the C and Java tools. A small
  Python child starts the Go program and waits;
- `franz-go-fed`, `sarama-fed`, `kafka-go-fed` (`--go-fed` adds them beside the Go rows
  asked for, or name them in `--rows`): the same clients fed by kbatch (modes franz-go,
  sarama, kafka-go at rate max): kbatch's Python generator writes each message to the
  driver over a pipe as fast as the driver takes it, with kbatch's per-message accounting
  and its round-robin partitions. The producing process is then two: kbatch's Python
  process and the Go program; these rows measure the client plus that feeder.

Every row runs with `acks` as asked and idempotence on with acks=all, off with acks=1 (as
Java's default does; kafka-go has no idempotent producer: off). Everything else is each
client's default (partitioning: kbatch and the fed Go rows round-robin, librdkafka, Java
and franz-go sticky, sarama random, kafka-go round-robin: every row keyless).

Each run is one child process, started after its topic exists (every leader elected) and
measured from outside the same way for every row:

- msg/s (tool): acknowledged messages over the sending phase as the tool reports it
  (rdkafka_performance: first produce() to last delivery report; ProducerPerformance: its
  whole-run records/sec; the Go rows' own generator: first produce to last
  acknowledgement, as the driver's result reports them), and for kbatch's rows (and the
  fed Go rows) the same span: from the `run()` call to the last acknowledgement. Each
  clock includes the producer's setup (connections, metadata, producer id; librdkafka's
  idempotent producer takes about half a second to get its id), as the C and Java tools'
  clocks include theirs (franz-go and kafka-go connect lazily, so theirs do too; sarama
  fetches metadata, and its producer id with idempotence, when its producer is made,
  before its first produce: outside its clock, inside msg/s (wall)); kbatch's own rate, from its
  run's start after that setup, is kept in the JSON (`msgs_per_s_after_setup`, `setup_s`);
- msg/s (wall): acknowledged messages over the child's whole life, start to exit (process
  start, connecting, the JVM's start and Python's imports included);
- producer CPU µs/msg: user + system CPU of the child and every descendant it waited for
  (`getrusage(RUSAGE_CHILDREN)` before and after: the Go driver and its Python feeder
  together; for the own-generator rows, the Go program and its small Python starter), per
  acknowledged message, startup included. Unless `--no-startup`, each row
  is first run once per broker with one message: its CPU is the row's startup cost, shown
  beside the runs, and the net figure (CPU - startup) / messages is printed too;
- broker CPU µs/msg: the broker process's utime + stime (/proc/<pid>/stat) over the same
  span (child start to exit), per acknowledged message.

Per broker and acks, one Markdown table: each row's median and min-max over its runs; then
the fastest row by the tools' own msg/s and kbatch's engine's ratio to the fastest client
(issue 48, target 2: kbatch's engine at least as many msg/s as the fastest client). The
machine's load (`uptime`) is printed before and after and kept per run: on a shared
machine the figures are that machine's. Progress goes to stderr, the tables to stdout.
Topics are deleted after their run (Tansu keeps every message in memory).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(ROOT))

ROWS = ("kbatch-none", "kbatch-partition", "rdkafka_performance", "ProducerPerformance",
        "franz-go", "sarama", "kafka-go")
KBATCH_ROWS = ("kbatch-none", "kbatch-partition")
GO_ROWS = ("franz-go", "sarama", "kafka-go")
"""The Go clients generating their own messages (the client's own ceiling)."""
FED_SUFFIX = "-fed"
GO_FED_ROWS = tuple(row + FED_SUFFIX for row in GO_ROWS)
"""The same clients fed message by message by kbatch's generator (`--go-fed`)."""
ALL_ROWS = ROWS + GO_FED_ROWS
BROKERS = ("tansu", "kafka")
ACKS = ("1", "all")
EXIT_USAGE = 2


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def mode_of(row: str) -> str:
    """kbatch's mode of a row run through kbatch (its engine or its Go driver)."""
    return row.removeprefix("kbatch-").removesuffix(FED_SUFFIX)


def kbatch_settings(row: str, acks: str) -> list[tuple[str, str]]:
    """acks as asked; idempotence with acks=all only, where the client has it."""
    settings = [("acks", acks)]
    if mode_of(row) != "kafka-go":
        settings.append(("enable.idempotence", "true" if acks == "all" else "false"))
    return settings


# ----------------------------------------------------------------------- a kbatch child


def child(args: argparse.Namespace) -> None:
    """One kbatch run in this process (a row through kbatch's engine or its Go driver):
    prints RESULT and its figures as one JSON line."""
    if args.row in GO_ROWS:
        go_child(args)
        return
    from producer_core import Workload, build_settings, run

    workload = Workload(topic=args.topic, partitions=args.partitions, rate=None,
                        duration_s=None, messages=args.messages, message_size=args.size)
    mode = mode_of(args.row)
    settings = build_settings(kbatch_settings(args.row, args.acks), mode=mode)
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    called = time.monotonic()  # the run's clock (the event loop's, the pipe run's)
    results = run(workload, settings, mode, args.bootstrap)
    own_after = resource.getrusage(resource.RUSAGE_SELF)
    kids_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    m = results.metrics
    setup = results.run_start - called if results.run_start is not None else 0.0
    seconds = setup + results.duration_s  # run() called to the last acknowledgement
    print("RESULT " + json.dumps({
        "acked": m.messages_acked, "failed": m.messages_failed,
        "seconds": seconds, "msgs_per_s": m.messages_acked / seconds if seconds > 0 else 0.0,
        "setup_s": setup, "msgs_per_s_after_setup": results.achieved_rate,
        "requests": results.requests_sent,
        "run_cpu_s": _cpu(own_after) - _cpu(own),
        "driver_cpu_s": _cpu(kids_after) - _cpu(kids),
    }), flush=True)


def go_child(args: argparse.Namespace) -> None:
    """A Go row's own generator: the Go program makes and sends every message itself;
    prints RESULT with its span from first produce to last acknowledgement."""
    from producer_core.engine.drivers.go_clients.generate import generate

    properties = {**dict(kbatch_settings(args.row, args.acks)),
                  "bootstrap.servers": args.bootstrap}
    done = generate(args.row, args.topic, args.messages, args.size, properties)
    r = done.result
    print("RESULT " + json.dumps({
        "acked": r["acked"], "failed": r["failed"] + r["unknown"], "seconds": done.seconds,
        "msgs_per_s": done.msgs_per_s, "requests": r["requests"],
        "partitioner": r["generated"]["partitioner"],
        "idempotence": r["idempotence"].get("enabled"),
    }), flush=True)


def _cpu(usage: resource.struct_rusage) -> float:
    return usage.ru_utime + usage.ru_stime


# ------------------------------------------------------------------------------ brokers


@dataclass
class Broker:
    name: str
    description: str
    bootstrap: str
    pids: list[int]

    def cpu_s(self) -> float | None:
        from producer_core.measure.process_cost import read_cpu

        readings = [read_cpu(pid) for pid in self.pids]
        if any(r is None for r in readings):
            return None
        return sum(r.total_s for r in readings if r is not None)

    def rss_mb(self) -> float | None:
        from producer_core.measure.process_cost import read_memory

        memory = [read_memory(pid) for pid in self.pids]
        if any(m is None for m in memory):
            return None
        return sum(m.rss_bytes for m in memory if m is not None) / 2**20


@contextmanager
def started(name: str) -> Iterator[Broker]:
    """One fresh broker: the embedded Tansu, or one Apache Kafka node."""
    context: AbstractContextManager[Any]
    if name == "tansu":
        from producer_core import EmbeddedBroker

        tansu = EmbeddedBroker().start()
        context = tansu
        assert tansu.pid is not None
        broker = Broker(name, "one embedded Tansu broker", tansu.bootstrap, [tansu.pid])
    else:
        from producer_core.brokers.kafka import KafkaCluster

        cluster = KafkaCluster(nodes=1, progress=log).start()
        context = cluster
        broker = Broker(name, f"one Apache Kafka {cluster.version} node", cluster.bootstrap,
                        cluster.pids)
    with context:
        log(f"{broker.description} at {broker.bootstrap} (pid {broker.pids})")
        yield broker


async def _create(bootstrap: str, topic: str, partitions: int) -> None:
    from producer_core.engine.transport.transport import Cluster

    cluster = Cluster(bootstrap, client_id="kbatch-bench")
    try:
        await cluster.connect()
        await cluster.ensure_topic(topic, partitions, timeout_s=60)
    finally:
        await cluster.close()


async def _delete(bootstrap: str, topic: str) -> None:
    from aiokafka.protocol.admin import DeleteTopicsRequest

    from producer_core.engine.transport.transport import Cluster

    cluster = Cluster(bootstrap, client_id="kbatch-bench")
    try:
        view = await cluster.connect()
        node = view.controller_id if view.controller_id in view.brokers else next(
            iter(view.brokers))
        conn = await cluster.connection(node)
        await conn.send(DeleteTopicsRequest([topic], 60_000))
    finally:
        await cluster.close()


# ---------------------------------------------------------------------------- one run


@dataclass
class Tools:
    """What the rows other than kbatch's own need, prepared before any timing."""

    rdkafka: Path | None = None
    kafka_dist: Any = None  # producer_core.brokers.kafka_dist.KafkaDist


def prepare(rows: list[str]) -> Tools:
    """Build or fetch every tool once, before any run is timed (progress on stderr)."""
    tools = Tools()
    if "rdkafka_performance" in rows:
        from benchmarks.client_tools import rdkafka_performance

        tools.rdkafka = rdkafka_performance(log)
    if "ProducerPerformance" in rows:
        from producer_core.brokers.kafka_dist import resolve

        tools.kafka_dist = resolve(progress=log)
    for row in rows:
        if row in GO_ROWS + GO_FED_ROWS:
            from producer_core.engine.drivers.go_clients.driver import prepare as prepare_go

            prepare_go(mode_of(row), progress=log)
    return tools


def command(row: str, tools: Tools, broker: Broker, topic: str, messages: int,
            acks: str, args: argparse.Namespace) -> list[str]:
    from benchmarks.client_tools import perf_command, rdkafka_command

    if row == "rdkafka_performance":
        assert tools.rdkafka is not None
        return rdkafka_command(tools.rdkafka, broker.bootstrap, topic, messages, args.size,
                               acks)
    if row == "ProducerPerformance":
        from benchmarks.client_tools import TANSU_JAVA_PROPS

        return perf_command(tools.kafka_dist, broker.bootstrap, topic, messages, args.size,
                            acks, TANSU_JAVA_PROPS if broker.name == "tansu" else ())
    return [sys.executable, str(Path(__file__).resolve()), "--child", "--row", row,
            "--bootstrap", broker.bootstrap, "--topic", topic, "--messages", str(messages),
            "--partitions", str(args.partitions), "--size", str(args.size), "--acks", acks]


def parse_output(row: str, stdout: str, stderr: str, messages: int) -> dict[str, Any] | None:
    """The tool's own figures from what it printed (None: it printed no result)."""
    from benchmarks.client_tools import parse_perf, parse_rdkafka

    if row == "rdkafka_performance":
        return parse_rdkafka(stdout)
    if row == "ProducerPerformance":
        parsed = parse_perf(stdout)
        if parsed is not None:  # every failed send prints its exception (a stack trace)
            parsed["failed"] = sum(1 for line in stderr.splitlines()
                                   if "Exception" in line
                                   and not line.startswith(("\t", "Caused by")))
        return parsed
    for line in stdout.splitlines():
        if line.startswith("RESULT "):
            parsed = json.loads(line[len("RESULT "):])
            return dict(parsed)
    return None


def measure(row: str, acks: str, broker: Broker, tools: Tools, args: argparse.Namespace,
            messages: int, label: str) -> dict[str, Any]:
    """One run of one row on a fresh topic; its figures, or its error."""
    topic = f"ct-{row.lower().replace('_', '-')}-{acks}-{time.time_ns()}"
    asyncio.run(_create(broker.bootstrap, topic, args.partitions))
    cmd = command(row, tools, broker, topic, messages, acks, args)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    load = os.getloadavg()[0]
    broker_before = broker.cpu_s()
    kids_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    error = None
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False,
                              stdin=subprocess.DEVNULL, timeout=args.run_timeout)
        stdout, stderr, code = proc.stdout, proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as exc:  # subprocess.run killed and reaped it
        stdout = (exc.stdout or b"").decode(errors="replace") if isinstance(
            exc.stdout, bytes) else (exc.stdout or "")
        stderr, code = "", None
        error = f"did not finish within --run-timeout {args.run_timeout:g} s"
    wall = time.monotonic() - start
    cpu = _cpu(resource.getrusage(resource.RUSAGE_CHILDREN)) - _cpu(kids_before)
    broker_after = broker.cpu_s()
    rss = broker.rss_mb()
    try:
        asyncio.run(_delete(broker.bootstrap, topic))
    except Exception as exc:  # noqa: BLE001 - the run's figures stand without the cleanup
        log(f"    could not delete topic {topic}: {exc}")
    run: dict[str, Any] = {
        "broker": broker.name, "acks": acks, "row": row, "label": label,
        "messages": messages, "load_1min": load, "wall_s": wall, "producer_cpu_s": cpu,
        "broker_cpu_s": (broker_after - broker_before
                         if broker_before is not None and broker_after is not None else None),
        "broker_rss_mb": rss, "command": " ".join(
            cmd[1:] if row not in KBATCH_ROWS + GO_ROWS + GO_FED_ROWS else cmd[2:]),
    }
    parsed = None if error else parse_output(row, stdout, stderr, messages)
    if parsed is None:
        tail = "\n".join((stdout + "\n" + stderr).strip().splitlines()[-8:])
        run["error"] = error or f"exit {code}, no result printed: {tail}"
        log(f"    {label}: FAILED: {run['error']}")
        return run
    run.update(parsed)
    acked = run["acked"]
    log(f"    {label}: {acked:,} acked in {run['seconds'] or 0:.2f} s (tool: "
        f"{run['msgs_per_s']:,.0f} msg/s), wall {wall:.2f} s, CPU {cpu:.2f} s, "
        f"broker CPU {run['broker_cpu_s'] or 0:.2f} s, load {load:.1f}")
    return run


# -------------------------------------------------------------------------- the plan


def rotated(rows: list[str], by: int) -> list[str]:
    """The rows' order for round `by` (0-based): rotated so each row leads once in turn."""
    if not rows:
        return []
    by %= len(rows)
    return rows[by:] + rows[:by]


def plan(rows: list[str], acks: list[str], runs: int) -> list[tuple[int, str, str]]:
    """(round, acks, row) in the order they run on one broker."""
    return [(number, ack, row) for number in range(1, runs + 1) for ack in acks
            for row in rotated(rows, number - 1)]


def run_broker(name: str, args: argparse.Namespace, tools: Tools,
               document: dict[str, Any], save: Callable[[], None]) -> None:
    with started(name) as broker:
        document["brokers"][name] = broker.description
        if args.startup:
            for row in args.rows:
                log(f"[{name}] startup cost of {row} (one message, acks={args.acks[0]})")
                document["startup"].append(measure(row, args.acks[0], broker, tools, args,
                                                   1, f"{name} {row} startup"))
                save()
        steps = plan(args.rows, args.acks, args.runs)
        for index, (number, ack, row) in enumerate(steps, 1):
            label = f"{name} acks={ack} {row} round {number}"
            log(f"[{name} {index}/{len(steps)}] {label}")
            run = measure(row, ack, broker, tools, args, args.messages, label)
            run["round"] = number
            document["runs"].append(run)
            save()


# ------------------------------------------------------------------------ rendering


def spread(values: list[float], digits: int = 0) -> str:
    """`median (min-max)` of a row's runs; `-` without any."""
    if not values:
        return "-"
    fmt = f"{{:,.{digits}f}}"
    median = fmt.format(statistics.median(values))
    if len(values) == 1:
        return median
    return f"{median} ({fmt.format(min(values))}-{fmt.format(max(values))})"


def _per_msg(run: dict[str, Any], key: str, minus: float = 0.0) -> float | None:
    value = run.get(key)
    if value is None or not run.get("acked"):
        return None
    return (value - minus) / run["acked"] * 1e6


def row_summary(runs: list[dict[str, Any]], startup_cpu_s: float | None) -> dict[str, Any]:
    """One row's figures over its runs (failed runs counted apart)."""
    good = [r for r in runs if "error" not in r]

    def values(fn: Callable[[dict[str, Any]], float | None]) -> list[float]:
        return [v for v in (fn(r) for r in good) if v is not None]

    return {
        "runs": len(good), "errors": [r["error"] for r in runs if "error" in r],
        "tool": values(lambda r: r.get("msgs_per_s")),
        "wall": values(lambda r: r["acked"] / r["wall_s"] if r.get("wall_s") else None),
        "cpu": values(lambda r: _per_msg(r, "producer_cpu_s")),
        "net_cpu": values(lambda r: _per_msg(r, "producer_cpu_s", startup_cpu_s))
        if startup_cpu_s is not None else [],
        "broker_cpu": values(lambda r: _per_msg(r, "broker_cpu_s")),
        "failed": sum(int(r.get("failed") or 0) for r in good),
        "load": values(lambda r: r.get("load_1min")),
    }


ROW_NOTES = {
    "kbatch-none": "kbatch engine, mode none",
    "kbatch-partition": "kbatch engine, mode partition (linger 5 ms)",
    "rdkafka_performance": "librdkafka's C tool, linger.ms=5",
    "ProducerPerformance": "Kafka's Java tool",
    "franz-go": "own generator (the client's ceiling, counts only), sticky partitioner",
    "sarama": "own generator (the client's ceiling, counts only), random partitioner",
    "kafka-go": "own generator (the client's ceiling, counts only), round-robin; no "
                "idempotence; its default BatchTimeout (1 s) can hold a run's last batches "
                "up to a second",
    "franz-go-fed": "fed by kbatch's generator over the Go driver's pipe (Python feeder + Go)",
    "sarama-fed": "fed by kbatch's generator over the Go driver's pipe (Python feeder + Go)",
    "kafka-go-fed": "fed by kbatch's generator over the Go driver's pipe (Python feeder + Go); "
                    "no idempotence; its default BatchTimeout (1 s) can hold a run's last "
                    "batches up to a second",
}


def row_note(row: str, broker: str) -> str:
    note = ROW_NOTES.get(row, "")
    if row == "ProducerPerformance" and broker == "tansu":
        note += " (metadata.cluster.check.enable=false: Tansu cannot read ApiVersions v5)"
    return note


def render(document: dict[str, Any]) -> str:
    """The Markdown report of a run's document (also from a saved --json: pure)."""
    config = document["config"]
    out = [f"# Unthrottled producers: {config['messages']:,} messages of {config['size']} "
           f"bytes per run, {config['partitions']} partitions, {config['runs']} runs per row "
           "(median, min-max)", ""]
    out.append(f"Machine: {document['machine']['cpu_cores']} cores, Python "
               f"{document['machine']['python']}; producer and broker share them. "
               f"Load before: `{document['load']['before']}`; after: "
               f"`{document['load'].get('after', '-')}`.")
    for broker in config["brokers"]:
        if broker not in document["brokers"]:
            continue
        startup = {r["row"]: r.get("producer_cpu_s") for r in document["startup"]
                   if r["broker"] == broker and "error" not in r}
        for ack in config["acks"]:
            out += ["", f"## {document['brokers'][broker]}, acks={ack}", ""]
            out.append("| row | runs | msg/s (tool) | msg/s (wall) | producer CPU µs/msg "
                       "| net of startup | startup CPU s | broker CPU µs/msg | failed "
                       "| load | notes |")
            out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
            summaries: dict[str, dict[str, Any]] = {}
            for row in config["rows"]:
                runs = [r for r in document["runs"]
                        if r["broker"] == broker and r["acks"] == ack and r["row"] == row]
                if not runs:
                    continue
                s = summaries[row] = row_summary(runs, startup.get(row))
                notes = row_note(row, broker)
                if s["errors"]:
                    notes += f"; {len(s['errors'])} run(s) failed: {s['errors'][0][:120]}"
                up = startup.get(row)
                out.append(
                    f"| {row} | {s['runs']} | {spread(s['tool'])} | {spread(s['wall'])} "
                    f"| {spread(s['cpu'], 2)} | {spread(s['net_cpu'], 2)} "
                    f"| {'-' if up is None else f'{up:.2f}'} | {spread(s['broker_cpu'], 2)} "
                    f"| {s['failed']:,} | {spread(s['load'], 1)} | {notes} |")
            out += [""] + verdict(summaries)
    out += ["", "msg/s (tool): acknowledged / the sending phase as the tool reports it "
            "(kbatch's rows: from run() to the last acknowledgement; every clock includes the "
            "producer's setup: connections, metadata, producer id). msg/s (wall): "
            "acknowledged / child "
            "process start to exit. CPU: the child process tree's user+system, startup "
            "included; net of startup: less one run of one message. Broker CPU over the "
            "same span."]
    return "\n".join(out)


def verdict(summaries: dict[str, dict[str, Any]]) -> list[str]:
    """The fastest row, and kbatch's engine against the fastest client (target 2)."""
    def median(row: str, key: str) -> float | None:
        values = summaries.get(row, {}).get(key) or []
        return statistics.median(values) if values else None

    lines = []
    for key, what in (("tool", "the tools' own msg/s"), ("wall", "wall-time msg/s")):
        ranked = sorted(((m, row) for row in summaries if (m := median(row, key))),
                        reverse=True)
        if not ranked:
            continue
        lines.append(f"- By {what}: fastest row **{ranked[0][1]}** ({ranked[0][0]:,.0f}).")
        clients = [(m, row) for m, row in ranked  # each client's own ceiling
                   if row not in KBATCH_ROWS + GO_FED_ROWS]
        if not clients:
            continue
        best, name = clients[0]
        for ours in KBATCH_ROWS:
            m = median(ours, key)
            if m is not None:
                ratio = m / best
                lines.append(f"  - {ours} / fastest client ({name}): {ratio:.2f}x "
                             f"(target >= 1: {'met' if ratio >= 1 else 'not met'})")
    return lines


# ----------------------------------------------------------------------------- main


def _choices(text: str, allowed: tuple[str, ...], flag: str) -> list[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [t for t in items if t not in allowed]
    if unknown or not items:
        raise argparse.ArgumentTypeError(
            f"{flag} takes a comma-separated list of {', '.join(allowed)} (got {text!r})")
    return list(dict.fromkeys(items))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000, help="messages per run")
    parser.add_argument("--runs", type=int, default=3, help="runs (rounds) per row")
    parser.add_argument("--acks", default="1,all",
                        type=lambda t: _choices(t, ACKS, "--acks"))
    parser.add_argument("--brokers", default="tansu,kafka",
                        type=lambda t: _choices(t, BROKERS, "--brokers"))
    parser.add_argument("--rows", default=",".join(ROWS),
                        type=lambda t: _choices(t, ALL_ROWS, "--rows"))
    parser.add_argument("--go-fed", action="store_true",
                        help="add each Go row's pipe-fed twin (ROW-fed: the client fed by "
                             "kbatch's Python generator) for comparison")
    parser.add_argument("--partitions", type=int, default=64)
    parser.add_argument("--size", type=int, default=100, help="value bytes")
    parser.add_argument("--no-startup", dest="startup", action="store_false",
                        help="skip each row's one-message run (its startup CPU)")
    parser.add_argument("--run-timeout", type=float, default=300.0,
                        help="seconds before a run is stopped and reported as failed")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    parser.add_argument("--render", type=Path, default=None,
                        help="print the tables of a saved --json and exit")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--row", help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    parser.add_argument("--topic", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        args.acks = args.acks[0]
        return args
    if args.go_fed:
        asked = [row for row in GO_ROWS if row in args.rows]
        args.rows = list(dict.fromkeys(args.rows + [row + FED_SUFFIX for row in asked]))
        if not asked:
            parser.error("--go-fed adds the pipe-fed twin of each Go row in --rows, and "
                         "--rows names none of franz-go, sarama, kafka-go")
    if args.messages < 1 or args.runs < 1 or args.partitions < 1 or args.size < 1:
        parser.error("--messages, --runs, --partitions and --size must be at least 1")
    if args.run_timeout <= 0:
        parser.error("--run-timeout must be more than 0 seconds")
    if args.json is not None and not args.json.parent.is_dir():
        parser.error(f"--json: {args.json.parent} is not a directory")
    return args


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=False,
                              timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        load = os.getloadavg()
        return f"load average: {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f}"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        child(args)
        return 0
    if args.render is not None:
        try:
            saved = json.loads(args.render.read_text())
            print(render(saved))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(f"--render: {args.render} is not a document this script wrote with "
                  f"--json ({type(exc).__name__}: {exc}).", file=sys.stderr)
            return EXIT_USAGE
        return 0
    document: dict[str, Any] = {
        "config": {"messages": args.messages, "runs": args.runs, "acks": args.acks,
                   "brokers": args.brokers, "rows": args.rows, "partitions": args.partitions,
                   "size": args.size, "startup": args.startup},
        "machine": {"cpu_cores": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform()},
        "load": {"before": uptime()}, "brokers": {}, "startup": [], "runs": [],
    }

    def save() -> None:
        if args.json is not None:
            args.json.write_text(json.dumps(document, indent=2) + "\n")

    log(f"load before: {document['load']['before']}")
    from producer_core import KbatchError

    try:
        tools = prepare(args.rows)
    except KbatchError as exc:  # no Java, Maven or Go: its own paragraph says what to do
        print(f"{exc}\n(Or leave the rows that need it out with --rows.)", file=sys.stderr)
        return EXIT_USAGE
    code = 0
    try:
        for name in args.brokers:
            run_broker(name, args, tools, document, save)
    except KeyboardInterrupt:
        log("interrupted: the tables below hold the runs that finished")
        code = 130
    except KbatchError as exc:  # a broker that would not start
        print(f"{exc}\nThe tables below hold the runs that finished.", file=sys.stderr)
        code = 1
    document["load"]["after"] = uptime()
    log(f"load after: {document['load']['after']}")
    save()
    print(render(document))
    return code


if __name__ == "__main__":
    sys.exit(main())
