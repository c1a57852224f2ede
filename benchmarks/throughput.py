"""Unthrottled producer throughput: kbatch's engine against two reference Python producers.

    python benchmarks/throughput.py [--seconds 10] [--partitions 64] [--size 100] [--json PATH]
                                    [--only NAME ...]

Four measurements, each on a FRESH embedded Tansu broker (Tansu keeps every message in
memory, ~1.1 GB RSS per 8M 100-byte messages) and a fresh topic, all in one run:

1. kbatch engine, mode `none`      (rate=max, linger 0)
2. kbatch engine, mode `partition` (rate=max, default linger.ms=5)
3. confluent-kafka `Producer`: keyless produce() loop, a per-message delivery callback that
   records latency, linger.ms=5, acks=1, BufferError -> poll(0.001), final flush()
4. aiokafka batch API: create_batch() filled until append() returns None, send_batch() to
   partitions round-robin, up to N batch futures outstanding; no per-message accounting

msgs/s is acknowledged messages / elapsed time until the last acknowledgement. Each row also
says how the CPU was shared: CPU time per message of the producer process and of the broker
(/proc/<pid>/stat), so a ratio can be read against what the two cores could give. Progress
goes to stderr, the table to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import sys
import time
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(ROOT))

from producer_core import EmbeddedBroker, Progress, Workload, build_settings, run  # noqa: E402
from producer_core.engine.transport.transport import Cluster  # noqa: E402

POLL_EVERY = 100
"""confluent-kafka: messages produced between two poll(0) calls (serves delivery callbacks)."""
AIOKAFKA_OUTSTANDING_PER_PARTITION = 2
"""aiokafka: batch futures awaiting acknowledgement at most, per partition. aiokafka itself
holds one unsent batch per partition (send_batch waits for the previous one to drain) and
one request in flight per broker, so 2 per partition is as many as can be outstanding."""
PROGRESS_EVERY_S = 2.0
FLUSH_TIMEOUT_S = 60.0
BUSY_WARNING_CORES = 0.1
"""Other processes using more CPU than this (in cores) during a measurement get a note."""


@dataclass
class Measurement:
    name: str
    messages: int
    seconds: float
    p99_ms: float | None
    failed: int = 0
    broker_rss_mb: float | None = None
    other_cpu_cores: float | None = None
    producer_cpu_s: float | None = None
    """CPU (user + system, all threads) of this process during the measurement."""
    broker_cpu_s: float | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.messages / self.seconds if self.seconds > 0 else 0.0


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def rss_mb(pid: int | None) -> float | None:
    """Resident set size of a process in MiB (Linux /proc), or None."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _cpu_seconds(path: str) -> float:
    """utime + stime of a process (all its threads) from /proc/<pid>/stat, in seconds."""
    with open(path) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def _busy_seconds() -> float:
    """CPU seconds the whole machine (all cores) spent in processes since boot, plus time
    the hypervisor stole. Interrupt time is left out: loopback traffic between producer and
    broker is processed there without being charged to either process."""
    with open("/proc/stat") as f:
        user, nice, system, _idle, _iowait, _irq, _softirq, steal = map(
            int, f.readline().split()[1:9])
    return (user + nice + system + steal) / _TICKS


class OtherLoad:
    """CPU used by processes other than this one and the broker, over one measurement.

    The producer and the broker share few cores, so anything else running (a test suite,
    another benchmark) moves the figures; this says how much of it there was.
    """

    def __init__(self, broker_pid: int | None) -> None:
        self.paths = ["/proc/self/stat"] + ([f"/proc/{broker_pid}/stat"] if broker_pid else [])
        self.start = self._sample()
        self.split_start = self._split()

    def _split(self) -> list[float] | None:
        try:
            return [_cpu_seconds(path) for path in self.paths]
        except (OSError, ValueError, IndexError):
            return None

    def split(self) -> tuple[float | None, float | None]:
        """CPU seconds of (this process, the broker) since the start: how the cores were
        shared between producer and broker (the broker must be read before it stops)."""
        end = self._split()
        if self.split_start is None or end is None:
            return None, None
        used = [b - a for a, b in zip(self.split_start, end, strict=True)]
        return used[0], (used[1] if len(used) > 1 else None)

    def _sample(self) -> tuple[float, float, float] | None:
        try:
            ours = sum(_cpu_seconds(path) for path in self.paths)
            return time.monotonic(), _busy_seconds(), ours
        except (OSError, ValueError, IndexError):
            return None

    def cores(self) -> float | None:
        """Average cores' worth of CPU used by everything else since the start."""
        end = self._sample()
        if self.start is None or end is None or end[0] <= self.start[0]:
            return None
        other = (end[1] - self.start[1]) - (end[2] - self.start[2])
        return max(0.0, other / (end[0] - self.start[0]))


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    """Create the topic and wait until every partition has a leader (outside any timing)."""

    async def create() -> None:
        cluster = Cluster(bootstrap, client_id="kbatch-bench")
        try:
            await cluster.connect()
            await cluster.ensure_topic(topic, partitions)
        finally:
            await cluster.close()

    asyncio.run(create())


def payload(size: int) -> bytes:
    return bytes((i * 31 + 7) % 251 for i in range(size))


# ------------------------------------------------------------------------ kbatch engine


def bench_kbatch(mode: str, bootstrap: str, topic: str, args: argparse.Namespace) -> Measurement:
    workload = Workload(
        topic=topic, partitions=args.partitions, rate=None, duration_s=args.seconds,
        message_size=args.size,
    )
    settings = build_settings(args.kbatch_setting or [], mode=mode)
    last = [0.0]

    def on_progress(p: Progress) -> None:
        if p.elapsed_s - last[0] >= PROGRESS_EVERY_S:
            last[0] = p.elapsed_s
            log(f"  {p.elapsed_s:5.1f} s  generated {p.generated:>10,}  "
                f"acked {p.acknowledged:>10,}  p99 {p.p99_ms:7.1f} ms")

    results = run(workload, settings, mode, bootstrap, on_progress=on_progress)
    m = results.metrics
    return Measurement(
        name=f"kbatch {mode}",
        messages=m.messages_acked,
        seconds=results.duration_s,
        p99_ms=m.latency.percentile_ms(99) if m.latency.count else None,
        failed=m.messages_failed,
        details={
            "linger_ms": settings["linger.ms"] if mode == "partition" else 0,
            "requests_sent": results.requests_sent,
            "msgs_per_req": round(results.msgs_per_req, 1),
            "warnings": results.warnings,
        },
    )


# ----------------------------------------------------------------------- confluent-kafka


def bench_confluent(bootstrap: str, topic: str, args: argparse.Namespace) -> Measurement:
    from confluent_kafka import KafkaError, Producer

    producer = Producer({
        "bootstrap.servers": bootstrap,
        "client.id": "kbatch-bench-confluent",
        "linger.ms": 5,
        "acks": 1,
    })
    producer.list_topics(topic, timeout=15)  # metadata and connection before the clock starts
    value = payload(args.size)
    latencies: list[float] = []
    record = latencies.append
    failed = [0]
    clock = time.perf_counter

    def on_delivery(sent_at: float, err: KafkaError | None, _msg: Any) -> None:
        if err is None:
            record(clock() - sent_at)
        else:
            failed[0] += 1

    produce = producer.produce
    poll = producer.poll
    produced = 0
    # Ctrl-C landing inside a delivery callback surfaces from poll() as a SystemError; a
    # flag checked between produce chunks turns it into a clean KeyboardInterrupt instead.
    interrupted: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda *_: interrupted.append(1))
    try:
        start = clock()
        deadline = start + args.seconds
        next_report = start + PROGRESS_EVERY_S
        while True:
            now = clock()
            if interrupted:
                raise KeyboardInterrupt
            if now >= deadline:
                break
            if now >= next_report:
                next_report += PROGRESS_EVERY_S
                log(f"  {now - start:5.1f} s  produced {produced:>10,}  "
                    f"delivered {len(latencies):>10,}")
            for _ in range(POLL_EVERY):
                while True:
                    try:
                        produce(topic, value, callback=partial(on_delivery, clock()))
                        break
                    except BufferError:  # local queue full: let librdkafka deliver some
                        poll(0.001)
            produced += POLL_EVERY
            poll(0)
        flush_deadline = clock() + FLUSH_TIMEOUT_S
        remaining = len(producer)
        while remaining and clock() < flush_deadline:
            remaining = producer.flush(0.2)
            if interrupted:
                raise KeyboardInterrupt
    finally:
        signal.signal(signal.SIGINT, previous)
    elapsed = clock() - start
    lat = np.asarray(latencies)
    return Measurement(
        name="confluent-kafka",
        messages=len(latencies),
        seconds=elapsed,
        p99_ms=float(np.percentile(lat, 99) * 1000) if lat.size else None,
        failed=failed[0] + remaining,
        details={"produced": produced, "linger_ms": 5,
                 "poll_every": POLL_EVERY, "undelivered_after_flush": remaining},
    )


# ------------------------------------------------------------------------------ aiokafka


async def _aiokafka(bootstrap: str, topic: str, args: argparse.Namespace) -> Measurement:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, client_id="kbatch-bench-aiokafka", acks=1, linger_ms=0
    )
    await producer.start()
    try:
        await producer.partitions_for(topic)
        value = payload(args.size)
        loop = asyncio.get_running_loop()
        clock = loop.time
        acked = [0]
        failed = [0]
        outstanding: set[asyncio.Future[Any]] = set()

        def settled(count: int, future: asyncio.Future[Any]) -> None:
            outstanding.discard(future)
            if not future.cancelled() and future.exception() is None:
                acked[0] += count
            else:
                failed[0] += count

        partitions = args.partitions
        max_outstanding = AIOKAFKA_OUTSTANDING_PER_PARTITION * partitions
        partition = 0
        batches = 0
        appended = 0
        start = clock()
        deadline = start + args.seconds
        next_report = start + PROGRESS_EVERY_S
        while (now := clock()) < deadline:
            if now >= next_report:
                next_report += PROGRESS_EVERY_S
                log(f"  {now - start:5.1f} s  appended {appended:>10,}  acked {acked[0]:>10,}")
            batch = producer.create_batch()
            timestamp_ms = int(time.time() * 1000)
            append = batch.append
            while append(key=None, value=value, timestamp=timestamp_ms) is not None:
                pass
            count = batch.record_count()
            future = await producer.send_batch(batch, topic, partition=partition)
            partition = (partition + 1) % partitions
            batches += 1
            appended += count
            outstanding.add(future)
            future.add_done_callback(partial(settled, count))
            if len(outstanding) >= max_outstanding:
                await asyncio.wait(outstanding, return_when=asyncio.FIRST_COMPLETED)
        if outstanding:
            await asyncio.wait(outstanding)
        elapsed = clock() - start
    finally:
        await producer.stop()
    return Measurement(
        name="aiokafka batch API",
        messages=acked[0],
        seconds=elapsed,
        p99_ms=None,
        failed=failed[0],
        details={"appended": appended, "batches": batches,
                 "msgs_per_batch": round(appended / max(batches, 1), 1),
                 "max_outstanding": max_outstanding, "linger_ms": 0},
    )


def bench_aiokafka(bootstrap: str, topic: str, args: argparse.Namespace) -> Measurement:
    return asyncio.run(_aiokafka(bootstrap, topic, args))


# ------------------------------------------------------------------------------- driver


BENCHES = [
    ("kbatch none", partial(bench_kbatch, "none")),
    ("kbatch partition", partial(bench_kbatch, "partition")),
    ("confluent-kafka", bench_confluent),
    ("aiokafka batch API", bench_aiokafka),
]


def measure(index: int, name: str, bench: Any, args: argparse.Namespace) -> Measurement:
    topic = f"bench-{index}-{name.replace(' ', '-')}-{int(time.time() * 1000)}"
    with EmbeddedBroker() as broker:
        log(f"[{index}/{len(BENCHES)}] {name}: fresh Tansu broker pid {broker.pid} at "
            f"{broker.bootstrap}; topic {topic} ({args.partitions} partitions)")
        create_topic(broker.bootstrap, topic, args.partitions)
        load = OtherLoad(broker.pid)
        result: Measurement = bench(broker.bootstrap, topic, args)
        result.other_cpu_cores = load.cores()
        result.producer_cpu_s, result.broker_cpu_s = load.split()
        result.broker_rss_mb = rss_mb(broker.pid)
    p99 = f"{result.p99_ms:.1f} ms" if result.p99_ms is not None else "not measured"
    rss = f"{result.broker_rss_mb:,.0f} MiB" if result.broker_rss_mb is not None else "?"
    log(f"[{index}/{len(BENCHES)}] {name}: {result.messages:,} msgs in {result.seconds:.2f} s "
        f"= {result.rate:,.0f} msgs/s, p99 {p99}, failed {result.failed}; "
        f"broker RSS {rss}; broker stopped")
    if result.other_cpu_cores is not None and result.other_cpu_cores > BUSY_WARNING_CORES:
        log(f"    note: other processes used {result.other_cpu_cores:.2f} cores during this "
            "measurement; its figures may be lower than on an idle machine")
    return result


def render(results: list[Measurement], args: argparse.Namespace) -> str:
    lines = []
    cores = os.cpu_count()
    lines.append(
        f"Unthrottled produce throughput: {args.size}-byte values, keyless, "
        f"{args.partitions} partitions, {args.seconds:g} s each, one fresh "
        "embedded Tansu broker (in-memory) per measurement. confluent-kafka and aiokafka: "
        "acks=1, no idempotence; kbatch: "
        + (", ".join(f"{k}={v}" for k, v in args.kbatch_setting) if args.kbatch_setting
           else "its defaults (acks=all, enable.idempotence=true, as Java >= 3.0)") + "."
    )
    lines.append(
        f"Machine: {cores} CPU cores, shared by the producer and the broker on the same host; "
        f"Python {platform.python_version()}. Figures are for this box, not a broker's limit."
    )
    busy = [r for r in results if (r.other_cpu_cores or 0) > BUSY_WARNING_CORES]
    if busy:
        lines.append(
            "WARNING: other processes used CPU during " + ", ".join(
                f"{r.name} ({r.other_cpu_cores:.2f} cores)" for r in busy)
            + "; those figures and the ratios involving them may be depressed. Rerun on an idle "
            "machine to compare."
        )
    lines.append("")
    header = f"{'name':<20} {'messages':>12} {'seconds':>8} {'msgs/s':>12} {'p99 ms':>8}  notes"
    lines.append(header)
    lines.append("-" * len(header))
    for r in results:
        p99 = f"{r.p99_ms:8.1f}" if r.p99_ms is not None else f"{'-':>8}"
        notes = []
        if "msgs_per_req" in r.details:
            notes.append(f"{r.details['msgs_per_req']:g} msgs/req")
        if "msgs_per_batch" in r.details:
            notes.append(f"{r.details['msgs_per_batch']:g} msgs/batch")
        if r.failed:
            notes.append(f"{r.failed} failed")
        if r.broker_rss_mb is not None:
            notes.append(f"broker RSS {r.broker_rss_mb:,.0f} MiB")
        if r.other_cpu_cores is not None:
            notes.append(f"other load {r.other_cpu_cores:.2f} cores")
        if r.producer_cpu_s is not None and r.broker_cpu_s is not None and r.messages:
            notes.append(f"CPU us/msg producer {r.producer_cpu_s / r.messages * 1e6:.2f}, "
                         f"broker {r.broker_cpu_s / r.messages * 1e6:.2f}")
        lines.append(f"{r.name:<20} {r.messages:>12,} {r.seconds:>8.2f} {r.rate:>12,.0f} "
                     f"{p99}  {', '.join(notes)}")
    lines.append("")
    lines.append("Ratios (msgs/s):")
    for k, v in ratios(results).items():
        lines.append(f"  {k:<40} {v:6.2f}")
    lines.append("")
    lines.append(
        "p99: kbatch from append to acknowledgement; confluent-kafka from produce() to its "
        f"delivery callback (served by poll(0) every {POLL_EVERY} messages); aiokafka's "
        "batch API has no per-message accounting."
    )
    lines.append(
        "Defaults differ: confluent-kafka (librdkafka) keeps its own defaults besides "
        "linger.ms=5 and acks=1, among them a sticky partitioner for keyless messages and "
        "1 MB batches; kbatch spreads keyless messages round-robin with 16 KiB batches; "
        "aiokafka runs linger_ms=0, 16 KiB batches, up to "
        f"{AIOKAFKA_OUTSTANDING_PER_PARTITION * args.partitions} batch futures outstanding."
    )
    return "\n".join(lines)


def ratios(results: list[Measurement]) -> dict[str, float]:
    by_name = {r.name: r for r in results}
    out = {}
    for ours in ("kbatch none", "kbatch partition"):
        for ref in ("confluent-kafka", "aiokafka batch API"):
            a, b = by_name.get(ours), by_name.get(ref)
            if a and b and b.rate > 0:
                out[f"{ours} / {ref}"] = a.rate / b.rate
    return out


def _setting(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="produce time per run")
    parser.add_argument("--partitions", type=int, default=64, help="partitions per topic")
    parser.add_argument("--size", type=int, default=100, help="value bytes")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    parser.add_argument("-X", dest="kbatch_setting", action="append", type=_setting,
                        metavar="KEY=VALUE",
                        help="a kbatch producer setting (repeatable), e.g. -X acks=1 -X "
                        "enable.idempotence=false to match the references' acks=1")
    parser.add_argument("--only", action="append", choices=[name for name, _ in BENCHES],
                        help="run only this measurement (repeatable); default all")
    args = parser.parse_args(argv)
    if args.seconds <= 0 or args.partitions < 1 or args.size < 0:
        parser.error("--seconds must be > 0, --partitions >= 1, --size >= 0")

    log(f"{len(BENCHES)} measurements of {args.seconds:g} s on {os.cpu_count()} cores "
        "(shared with the broker)")
    try:
        results = [measure(i, name, bench, args) for i, (name, bench) in enumerate(BENCHES, 1)
                   if not args.only or name in args.only]
    except KeyboardInterrupt:  # the broker of the measurement under way is already stopped
        log("interrupted")
        return 130
    print(render(results, args))
    if args.json is not None:
        data = {
            "seconds": args.seconds, "partitions": args.partitions, "size": args.size,
            "cpu_cores": os.cpu_count(), "python": platform.python_version(),
            "results": [{**asdict(r), "msgs_per_s": round(r.rate, 1)} for r in results],
            "ratios": {k: round(v, 3) for k, v in ratios(results).items()},
        }
        args.json.write_text(json.dumps(data, indent=2) + "\n")
        log(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
