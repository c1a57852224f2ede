"""Fidelity of kbatch's emulations against the real clients they reproduce (issue 42): a
matrix of cells, each with the trace replay's request-by-request agreement and the two
whole runs' figures side by side.

A cell is a broker (the embedded Tansu broker, or 3 Apache Kafka nodes), a partition
count, a rate, a window (`linger.ms` on both sides) and a `batch.size` (the client's
default, or a value). For each pair of `producer_core.engine.drivers.kafka_java.fidelity.PAIRS`:

- **trace replay** (pairs whose real client traces: `java` <- `kafka-java`, `partition`
  <- `librdkafka`): the real client runs with its trace on, then the emulation's policy
  replays the trace (`producer_core.analysis.trace_replay`; for librdkafka with the
  settings librdkafka ran with, its defaults where kbatch passed none): the share of
  requests with the same node,
  partitions and records, the first divergence, and how long after the emulation's ready
  time the client sent (its Sender's own delay). The verdict does not depend on the
  machine's speed. Beside it, the emulation's requests with its *own* timing on the same
  appends and round trips (`free_run`): what timing alone does to the totals.
- **whole runs** (unless `--replay-only`): the emulation runs on the same workload, and
  requests, msgs/request, p50/p99 and time blocked on `buffer.memory` are compared within
  the bounds of `fidelity.py` (5%; 10% or 2 ms). These follow the machine's timing: run
  them on a quiet machine.

The Go clients (`--clients franz-go,sarama,kafka-go`) are compared with their nearest
emulation by whole runs only: their drivers record no per-request trace.

100-byte keyless values, fresh topics (on Tansu a broker per run), `-X acks=all` on both
sides. The first `--warmup` seconds are left out of latency on both sides.

    python benchmarks/fidelity.py [--brokers tansu,kafka] [--partitions 16,1000]
        [--rates 2000,20000] [--windows 5,100,500] [--batch-sizes default,1048576]
        [--pairs java,partition] [--clients kafka-java,librdkafka] [--seconds 10]
        [--warmup 2] [--replay-only | --whole-only] [--save-trace DIR [--record-only]]
        [--json PATH]
    python benchmarks/fidelity.py --replay-saved DIR [--thread-delays 0.1,0.2]
        # replay saved traces again (librdkafka's free run with late broker threads)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gzip
import itertools
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from producer_core import EmbeddedBroker, ProducerSettings, Workload, parse_mode_configs
from producer_core import run as engine_run
from producer_core.analysis.trace_replay import free_run, replay, settings_from_trace
from producer_core.engine.drivers.kafka_java.fidelity import CLIENT_BATCH_DEFAULTS, PAIRS, check
from producer_core.engine.drivers.kafka_java.run import run_traced
from producer_core.engine.drivers.librdkafka import run_traced as run_traced_librdkafka
from producer_core.results.client_trace import ClientTrace

TRACED = {"kafka-java", "librdkafka"}
"""Real clients whose driver records a trace."""
REPLAYED_AS = {"kafka-java": ("java", ()),
               "librdkafka": ("partition", (("produce.request.max.partitions", "1"),))}
"""A trace's client -> the emulation that replays it, with the emulation's own settings."""


def replay_settings(trace: ClientTrace, given: ProducerSettings) -> ProducerSettings:
    """The emulation's settings for a replay of `trace`: the ones given (mode java: the
    Java producer runs with kbatch's settings) or, for librdkafka, what it ran with
    (its own defaults where kbatch passed nothing: `librdkafka_trace.trace_settings`)."""
    if trace.client != "librdkafka":
        return given
    mode, extra = REPLAYED_AS["librdkafka"]
    return settings_from_trace(trace, mode, extra)


@contextlib.contextmanager
def _cluster(name: str) -> Iterator[str | None]:
    """A Kafka cluster for the whole matrix; None for Tansu (a broker per run)."""
    if name == "kafka":
        from producer_core.brokers.kafka import KafkaCluster

        with KafkaCluster(nodes=3, progress=lambda m: print(m, file=sys.stderr)) as cluster:
            yield cluster.bootstrap
    else:
        yield None


@contextlib.contextmanager
def _broker(shared: str | None) -> Iterator[str]:
    if shared is not None:
        yield shared
        return
    with EmbeddedBroker() as broker:
        yield broker.bootstrap


def _figures(doc: dict[str, Any]) -> dict[str, float]:
    return {"requests": doc["requests_sent"], "msgs_per_req": doc["msgs_per_req"],
            "p50_ms": doc["latency"]["p50_ms"], "p99_ms": doc["latency"]["p99_ms"],
            "blocked_s": doc.get("generator_blocked", {}).get("total_ms", 0.0) / 1000,
            "lag_p99_ms": doc["generator_lag"]["p99_ms"],
            "rtt_p50_ms": (doc.get("rtt") or {}).get("p50_ms", 0.0),
            "wall_s": doc.get("duration_s", 0.0)}


def _save(trace: ClientTrace, cell: dict[str, Any], real: str, folder: Path) -> None:
    """Write the trace before its replay, so a slow replay loses no recorded run."""
    path = folder / (("librdkafka-" if real == "librdkafka" else "")
                     + f"{cell['broker']}-{cell['partitions']}p-{cell['rate']}-"
                     f"{cell['window']}ms-{cell['batch_size']}.json.gz")
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as handle:
        json.dump(trace.to_dict(), handle)


def run_cell(cluster: str | None, cell: dict[str, Any], pair: tuple[str, tuple[str, ...], str],
             args: argparse.Namespace) -> dict[str, Any]:
    emulation, extra, real = pair
    common = [("acks", "all")]
    if cell["batch_size"] != "default":
        common.append(("batch.size", str(cell["batch_size"])))
    else:  # the client's own default on both sides: the emulation's is Java's 16 KB
        extra = (*extra, *CLIENT_BATCH_DEFAULTS.get(real, ()))
    runs = {r.mode: r.settings for r in parse_mode_configs(
        [real, emulation], common, [f"{emulation}:{item}" for item in extra],
        linger_ms=cell["window"])}
    stamp = f"{int(time.time() * 1000) % 10**9}"

    def workload(side: str) -> Workload:
        return Workload(topic=f"fid-{side}-{stamp}", partitions=cell["partitions"],
                        rate=cell["rate"], duration_s=args.seconds, warmup_s=args.warmup,
                        message_size=100)

    item: dict[str, Any] = {**cell, "real": real, "emulation": " ".join([emulation, *extra])}
    with _broker(cluster) as bootstrap:
        if real in TRACED and not args.whole_only:
            tracer = run_traced_librdkafka if real == "librdkafka" else run_traced
            results, trace = asyncio.run(tracer(workload("real"), runs[real], bootstrap))
            real_doc = results.to_dict()
            if args.save_trace:
                _save(trace, cell, real, Path(args.save_trace))
            if args.record_only:
                item["whole_run"] = {"real": _figures(real_doc)}
                return item
            specs = workload("real").topic_specs()
            settings = replay_settings(trace, runs[emulation])
            report = replay(trace, emulation, settings, specs)
            own_timing = free_run(trace, emulation, settings, specs)
            item["replay"] = {**report.to_dict(), "free_run_requests": own_timing.requests,
                              "trace_timing": trace.timing}
            item["replay_lines"] = [*report.lines(), own_timing.line()]
        else:
            real_doc = engine_run(workload("real"), runs[real], real, bootstrap).to_dict()
    if not args.replay_only:
        with _broker(cluster) as bootstrap:
            emulated = engine_run(workload("emu"), runs[emulation], emulation, bootstrap)
        emu_doc = emulated.to_dict()
        item["whole_run"] = {"real": _figures(real_doc), "emulated": _figures(emu_doc),
                             "checks": [{"metric": c.metric, "difference": c.difference,
                                         "ok": c.ok} for c in check(real_doc, emu_doc)]}
    else:
        item["whole_run"] = {"real": _figures(real_doc)}
    return item


def _print(item: dict[str, Any]) -> None:
    replay_text = "-"
    if "replay" in item:
        r = item["replay"]
        delay = r.get("sender_delay") or {}
        first = r.get("first_divergence")
        replay_text = (f"{r['identical']:,}/{r['compared']:,} ({r['share_identical']:.2%})"
                       + (f", same rule {r['share_same_rule']:.2%}"
                          if r["same_rule"] != r["identical"] else "")
                       + (f", {r['extra_requests']:,} extra" if r["extra_requests"] else "")
                       + (f", built before its rule {r['trace_timing']['built_before_rule']}"
                          if "built_before_rule" in r.get("trace_timing", {}) else "")
                       + (f", first {first['kind']} at #{first['request']}" if first else "")
                       + (f", delay p50 {delay['p50_ms']} mean {delay['mean_ms']} p99 "
                          f"{delay['p99_ms']} ms" if delay else "")
                       + f"; own timing {r['free_run_requests']:,} requests")
    whole = item["whole_run"]
    real = whole["real"]
    emu = whole.get("emulated")
    if emu is None:
        whole_text = (f"real: {real['requests']:,} req, {real['msgs_per_req']:.1f} msgs/req, "
                      f"p50 {real['p50_ms']:.1f} p99 {real['p99_ms']:.1f} ms, blocked "
                      f"{real['blocked_s']:.1f} s, lag p99 {real['lag_p99_ms']:.1f} ms")
    else:
        marks = {c["metric"]: ("ok" if c["ok"] else "OUT") + " " + c["difference"]
                 for c in whole["checks"]}
        whole_text = (
            f"req {real['requests']:,}/{emu['requests']:,} ({marks['requests_sent']}), "
            f"msgs/req {real['msgs_per_req']:.1f}/{emu['msgs_per_req']:.1f}, "
            f"p50 {real['p50_ms']:.1f}/{emu['p50_ms']:.1f} ({marks['p50_ms']}), "
            f"p99 {real['p99_ms']:.1f}/{emu['p99_ms']:.1f} ({marks['p99_ms']}), "
            f"blocked {real['blocked_s']:.1f}/{emu['blocked_s']:.1f} s, "
            f"lag p99 {real['lag_p99_ms']:.1f}/{emu['lag_p99_ms']:.1f} ms, "
            f"round trip p50 {real['rtt_p50_ms']:.1f}/{emu['rtt_p50_ms']:.1f} ms")
    print(f"| {item['broker']} | {item['partitions']} | {item['rate']:,} | {item['window']} | "
          f"{item['batch_size']} | {item['real']} vs {item['emulation']} | {replay_text} | "
          f"{whole_text} |", flush=True)


def replay_saved(folder: Path, thread_delays_ms: list[float]) -> None:
    """Replay every trace saved with --save-trace through its emulation again (after a
    change of the emulation, say; `REPLAYED_AS`): one line per trace. With
    `thread_delays_ms`, the free run of each librdkafka trace again with its broker
    threads that late after each wake-up (how much of the free run's excess is the
    client's scheduling)."""
    for path in sorted(folder.glob("*.json.gz")):
        with gzip.open(path, "rt") as handle:
            trace = ClientTrace.from_dict(json.load(handle))
        mode, extra = REPLAYED_AS.get(trace.client, REPLAYED_AS["kafka-java"])
        settings = settings_from_trace(trace, mode, extra)
        report = replay(trace, mode, settings)
        own_timing = free_run(trace, mode, settings)
        data = report.to_dict()
        delay = data["sender_delay"] or {}
        first = data["first_divergence"]
        print(f"| {path.name.removesuffix('.json.gz')} | {mode} | {report.identical:,}/"
              f"{report.compared:,} ({report.share_identical:.2%}) | "
              f"{report.share_same_rule:.2%}, {report.extra_requests:,} extra"
              + (f", built before its rule {trace.timing['built_before_rule']}"
                 if "built_before_rule" in trace.timing else "") + " | "
              + (f"{first['kind']} at #{first['request']}, " if first else "")
              + ", ".join(f"{k} {n}" for k, n in sorted(report.by_kind.items()))
              + f" | {delay.get('p50_ms', '-')} / {delay.get('mean_ms', '-')} / "
              f"{delay.get('p99_ms', '-')} ms | {own_timing.requests:,} "
              f"({own_timing.difference:+.1%}) |" + late_threads(trace, mode, settings,
                                                                 thread_delays_ms),
              flush=True)


def late_threads(trace: ClientTrace, mode: str, settings: ProducerSettings,
                 delays_ms: list[float]) -> str:
    """The free run with librdkafka's broker threads late by each delay: ' a ms: n (+x%)
    |' per delay (nothing for other clients)."""
    if trace.client != "librdkafka":
        return ""
    runs = [(ms, free_run(trace, mode, settings, thread_delay_s=ms / 1000))
            for ms in delays_ms]
    return "".join(f" {ms:g} ms: {run.requests:,} ({run.difference:+.1%}) |"
                   for ms, run in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--brokers", default="tansu,kafka")
    parser.add_argument("--partitions", default="16,1000")
    parser.add_argument("--rates", default="2000,20000")
    parser.add_argument("--windows", default="5,100,500")
    parser.add_argument("--batch-sizes", default="default,1048576")
    parser.add_argument("--pairs", default="java,partition",
                        help="emulation modes whose pairs to run")
    parser.add_argument("--clients", default="kafka-java,librdkafka",
                        help="real clients whose pairs to run (with --pairs): also "
                        "franz-go, sarama, kafka-go (whole runs only; they need Go)")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--whole-only", action="store_true",
                        help="only the whole runs: the real clients run without their trace "
                        "and nothing is replayed (a replay of a large cell takes minutes)")
    parser.add_argument("--replay-only", action="store_true",
                        help="only the real clients' runs and their trace replays")
    parser.add_argument("--save-trace", default=None, help="a folder for the traces")
    parser.add_argument("--record-only", action="store_true",
                        help="with --replay-only and --save-trace: record the traces, replay "
                        "them later with --replay-saved")
    parser.add_argument("--json", default=None)
    parser.add_argument("--replay-saved", default=None,
                        help="replay the traces in this folder (saved with --save-trace)")
    parser.add_argument("--thread-delays", default="",
                        help="with --replay-saved: librdkafka free runs again with its "
                        "broker threads this many ms late after each wake-up (e.g. 0.1,0.2)")
    args = parser.parse_args()
    if args.record_only and not (args.replay_only and args.save_trace):
        parser.error("--record-only needs --replay-only and --save-trace")
    if args.whole_only and args.replay_only:
        parser.error("--whole-only and --replay-only exclude each other")
    if args.replay_saved:
        try:
            delays = [float(x) for x in args.thread_delays.split(",") if x.strip()]
        except ValueError:
            parser.error(f"--thread-delays takes milliseconds separated by commas (e.g. "
                         f"0.1,0.2), not {args.thread_delays!r}")
        replay_saved(Path(args.replay_saved), delays)
        return
    pairs = [p for p in PAIRS if p[0] in args.pairs.split(",")
             and p[2] in args.clients.split(",")]
    if args.replay_only:
        pairs = [p for p in pairs if p[2] in TRACED]
    results = []
    print("| broker | partitions | msg/s | window ms | batch.size | pair | trace replay: "
          "identical requests | whole runs (real/emulated) |")
    print("|---|---|---|---|---|---|---|---|")
    for broker_name in args.brokers.split(","):
        with _cluster(broker_name) as cluster:
            for partitions, rate, window, batch_size, pair in itertools.product(
                    [int(p) for p in args.partitions.split(",")],
                    [int(r) for r in args.rates.split(",")],
                    [int(w) for w in args.windows.split(",")],
                    args.batch_sizes.split(","), pairs):
                cell = {"broker": broker_name, "partitions": partitions, "rate": rate,
                        "window": window, "batch_size": batch_size}
                print(f"  {cell} {pair[2]} vs {pair[0]}", file=sys.stderr)
                item = run_cell(cluster, cell, pair, args)
                results.append(item)
                _print(item)
                if args.json:
                    Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
