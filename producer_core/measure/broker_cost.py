"""What a run cost the brokers (and the client): the ``broker_cost`` section, from samples.

Pure arithmetic over timed snapshots (``Snapshot``: cumulative CPU of each process, one
scrape of each broker's metrics), taken by ``cost_monitor`` beside the run. Cumulative
figures are read at any instant by linear interpolation between the two snapshots around
it, so the measured window (after ``--warmup``) and each interval of the run's
``intervals`` get their own CPU seconds, Produce requests and idle time without the
sampler being in step with the engine. The run's own counts over the same window
(requests, messages, bytes) come from its interval rows, interpolated the same way.

Merging (the Spark runner): broker_cost is measured once, around the whole run, where
the brokers are; shares of a distributed run carry none, and ``distributed.merge`` keeps
none (it is not summed across shares: two shares read the same broker processes).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from producer_core.measure.kafka_metrics import TIMES, KafkaReading
from producer_core.measure.process_cost import CpuReading, MemoryReading

MB = 1_000_000
PERCENTILES = ("p50", "p99")


@dataclass
class Snapshot:
    """Everything read at one instant ``t`` (time.monotonic seconds)."""

    t: float
    broker_cpu: dict[str, CpuReading | None] = field(default_factory=dict)
    client_cpu: CpuReading | None = None
    kafka: dict[str, KafkaReading] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)


@dataclass
class Watched:
    """What was watched: broker processes (node -> pid), endpoints (node -> shown URL)."""

    implementation: str  # tansu, kafka, external
    broker_pids: dict[str, int] = field(default_factory=dict)
    endpoints: dict[str, str] = field(default_factory=dict)
    client: str = "kbatch"
    """What the client figure covers (kbatch's process and its children)."""
    broker_memory: dict[str, MemoryReading | None] = field(default_factory=dict)
    client_memory: MemoryReading | None = None
    note: str | None = None
    """Why something is not measured (e.g. a distributed run's executors)."""


Getter = Callable[[Snapshot], float | None]


def value_at(snaps: Sequence[Snapshot], t: float, get: Getter) -> float | None:
    """A cumulative figure at ``t``: interpolated between the snapshots around it (held at
    the first/last outside them). None if no snapshot has it."""
    known = [(s.t, v) for s in snaps if (v := get(s)) is not None and not math.isnan(v)]
    if not known:
        return None
    if t <= known[0][0]:
        return known[0][1]
    for (t0, v0), (t1, v1) in zip(known, known[1:], strict=False):
        if t <= t1:
            return v0 + (v1 - v0) * ((t - t0) / (t1 - t0) if t1 > t0 else 1.0)
    return known[-1][1]


def went_backwards(snaps: Sequence[Snapshot], t0: float, t1: float, get: Getter) -> bool:
    """Whether a cumulative figure fell anywhere around [t0, t1] (the snapshots inside and
    the one on either side): the process restarted, or one URL reaches several processes.
    A difference across the fall would be a made-up figure (it used to read as 0)."""
    known = [(s.t, v) for s in snaps if (v := get(s)) is not None and not math.isnan(v)]
    lo = max((i for i, (t, _) in enumerate(known) if t <= t0), default=0)
    hi = min((i for i, (t, _) in enumerate(known) if t >= t1), default=len(known) - 1)
    values = [v for _, v in known[lo:hi + 1]]
    return any(b < a for a, b in zip(values, values[1:], strict=False))


def delta(snaps: Sequence[Snapshot], t0: float, t1: float, get: Getter) -> float | None:
    """A cumulative figure's growth over [t0, t1]; None if unknown or if it went backwards."""
    a, b = value_at(snaps, t0, get), value_at(snaps, t1, get)
    if a is None or b is None or went_backwards(snaps, t0, t1, get):
        return None
    return b - a


def gauge_at(snaps: Sequence[Snapshot], t: float, get: Getter) -> float | None:
    """A gauge as of ``t``: the first snapshot at or after it that has it (else the last)."""
    known = [(s.t, v) for s in snaps if (v := get(s)) is not None and not math.isnan(v)]
    for when, value in known:
        if when >= t:
            return value
    return known[-1][1] if known else None


def counter_in(rows: Sequence[Mapping[str, Any]], key: str, t0: float, t1: float) -> float:
    """A run counter over [t0, t1] (seconds from the run's start) from its interval rows,
    each row's count spread evenly over the row."""
    total = 0.0
    for row in rows:
        start, end = float(row["start_s"]), float(row["end_s"])
        overlap = min(end, t1) - max(start, t0)
        if end <= start:
            total += row.get(key, 0) if t0 <= start <= t1 else 0
        elif overlap > 0:
            total += row.get(key, 0) * overlap / (end - start)
    return total


def _round(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def _per(value: float | None, count: float, scale: float) -> float | None:
    return None if value is None or count <= 0 else value / count * scale


@dataclass(frozen=True)
class WindowCounts:
    """What the run did in a window: requests, messages acknowledged, bytes written."""

    seconds: float
    requests: float
    messages: float
    wire_bytes: float


def cost_figures(cpu_s: float | None, counts: WindowCounts) -> dict[str, Any]:
    """CPU seconds and what they buy: per 1,000 requests, per million messages, per MB."""
    return {
        "cpu_s": _round(cpu_s),
        "cpu_pct_of_core": _round(_per(cpu_s, counts.seconds, 100.0), 1),
        "cpu_ms_per_1k_requests": _round(_per(cpu_s, counts.requests, 1e6)),
        "cpu_s_per_million_msgs": _round(_per(cpu_s, counts.messages, 1e6)),
        "cpu_s_per_mb": _round(_per(cpu_s, counts.wire_bytes / MB, 1.0), 4),
    }


def _cpu(node: str) -> Getter:
    def get(s: Snapshot) -> float | None:
        reading = s.broker_cpu.get(node)
        return reading.total_s if reading is not None else None
    return get


def _client(s: Snapshot) -> float | None:
    return s.client_cpu.total_s if s.client_cpu is not None else None


def _kafka(node: str, attr: str) -> Getter:
    def get(s: Snapshot) -> float | None:
        reading = s.kafka.get(node)
        return getattr(reading, attr) if reading is not None else None
    return get


def _time(node: str, key: str, attr: str) -> Getter:
    def get(s: Snapshot) -> float | None:
        reading = s.kafka.get(node)
        hist = reading.times.get(key) if reading is not None else None
        if hist is None:
            return None
        if attr == "sum":
            return hist.mean * hist.count if hist.mean is not None else None
        return getattr(hist, attr)
    return get


def _mb(memory: MemoryReading | None) -> float | None:
    return round(memory.peak_rss_bytes / MB, 1) if memory is not None else None


def broker_cpu_nodes(snaps: Sequence[Snapshot], watched: Watched) -> list[str]:
    """Nodes whose CPU is known: processes kbatch watched, else the endpoints' JVM CPU."""
    return list(watched.broker_pids) or [
        n for n in watched.endpoints if value_at(snaps, snaps[-1].t, _kafka(n, "process_cpu_s"))
        is not None]


def node_cpu(snaps: Sequence[Snapshot], watched: Watched, node: str, t0: float, t1: float
             ) -> float | None:
    if node in watched.broker_pids:
        return delta(snaps, t0, t1, _cpu(node))
    return delta(snaps, t0, t1, _kafka(node, "process_cpu_s"))


def total_broker_cpu(snaps: Sequence[Snapshot], watched: Watched, t0: float, t1: float
                     ) -> float | None:
    values = [node_cpu(snaps, watched, n, t0, t1) for n in broker_cpu_nodes(snaps, watched)]
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def kafka_window(snaps: Sequence[Snapshot], nodes: Sequence[str], t0: float, t1: float
                 ) -> dict[str, Any]:
    """Kafka's own figures over [t0, t1], per node and for the cluster."""
    per_node: dict[str, Any] = {}
    for node in nodes:
        requests = delta(snaps, t0, t1, _kafka(node, "produce_requests"))
        idle_ns = delta(snaps, t0, t1, _kafka(node, "handler_idle_ns"))
        idle = (idle_ns / ((t1 - t0) * 1e9) if idle_ns is not None and t1 > t0
                else gauge_at(snaps, t1, _kafka(node, "handler_idle_rate")))
        times: dict[str, Any] = {}
        for key in TIMES:
            count = delta(snaps, t0, t1, _time(node, key, "count"))
            total = delta(snaps, t0, t1, _time(node, key, "sum"))
            times[key] = {
                "mean": _round(total / count if count and total is not None else None),
                "p50": _round(gauge_at(snaps, t1, _time(node, key, "p50"))),
                "p99": _round(gauge_at(snaps, t1, _time(node, key, "p99"))),
            }
        network = gauge_at(snaps, t1, _kafka(node, "network_idle"))
        per_node[node] = {
            "produce_requests": _round(requests, 0),
            "request_handler_idle_pct": _round(None if idle is None else min(idle, 1) * 100, 1),
            "network_processor_idle_pct": _round(None if network is None
                                                 else min(network, 1) * 100, 1),
            "messages_in": _round(delta(snaps, t0, t1, _kafka(node, "messages_in")), 0),
            "bytes_in": _round(delta(snaps, t0, t1, _kafka(node, "bytes_in")), 0),
            "produce_time_ms": times,
        }
    return {"nodes": per_node, **_cluster(per_node)}


def _cluster(per_node: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Cluster figures: counts add; idle is the nodes' mean; a time's p99 the worst node's,
    its mean the request-weighted mean."""
    def known(key: str) -> list[float]:
        return [v[key] for v in per_node.values() if v.get(key) is not None]

    def total(key: str) -> float | None:
        values = known(key)
        return sum(values) if values else None

    def mean(key: str) -> float | None:
        values = known(key)
        return round(sum(values) / len(values), 1) if values else None

    times: dict[str, Any] = {}
    for key in TIMES:
        cells = [(v.get("produce_requests") or 0, v["produce_time_ms"][key])
                 for v in per_node.values()]
        weighted = [(n, c["mean"]) for n, c in cells if c["mean"] is not None and n]
        weight = sum(n for n, _ in weighted)
        times[key] = {
            "mean": round(sum(n * m for n, m in weighted) / weight, 3) if weight else None,
            "p50": max((c["p50"] for _, c in cells if c["p50"] is not None), default=None),
            "p99": max((c["p99"] for _, c in cells if c["p99"] is not None), default=None),
        }
    return {
        "produce_requests": total("produce_requests"),
        "request_handler_idle_pct": mean("request_handler_idle_pct"),
        "network_processor_idle_pct": mean("network_processor_idle_pct"),
        "messages_in": total("messages_in"),
        "bytes_in": total("bytes_in"),
        "produce_time_ms": times,
    }


@dataclass(frozen=True)
class RunWindow:
    """The run on the monotonic clock: its start and end, the measured part's start."""

    start: float
    end: float
    warmup_s: float

    @property
    def measured_start(self) -> float:
        return min(self.start + self.warmup_s, self.end)


def section(snaps: Sequence[Snapshot], watched: Watched, run: RunWindow,
            rows: Sequence[Mapping[str, Any]], run_totals: WindowCounts,
            requests_sent: int, primed_requests: int = 0) -> dict[str, Any]:
    """The ``broker_cost`` section of one run (see docs/guides/broker-cost.md);
    ``primed_requests``: requests the run wrote before its time zero (priming), which
    Kafka's count of the whole run includes."""
    t0, t1 = run.measured_start, run.end
    rel0, rel1 = t0 - run.start, t1 - run.start
    if rows:
        counts = WindowCounts(t1 - t0, counter_in(rows, "requests", rel0, rel1),
                              counter_in(rows, "acknowledged", rel0, rel1),
                              counter_in(rows, "wire_bytes", rel0, rel1))
    else:  # no interval rows: the run's totals, prorated to the window
        share = (t1 - t0) / max(run.end - run.start, 1e-9)
        counts = WindowCounts(t1 - t0, run_totals.requests * share,
                              run_totals.messages * share, run_totals.wire_bytes * share)
    broker_nodes = broker_cpu_nodes(snaps, watched)
    nodes: dict[str, Any] = {}
    for node in broker_nodes:
        cpu = node_cpu(snaps, watched, node, t0, t1)
        nodes[node] = {
            "pid": watched.broker_pids.get(node),
            "cpu_s": _round(cpu),
            "cpu_pct_of_core": _round(_per(cpu, t1 - t0, 100.0), 1),
            "peak_rss_mb": _mb(watched.broker_memory.get(node)),
        }
    broker_cpu = total_broker_cpu(snaps, watched, t0, t1)
    client_cpu = delta(snaps, t0, t1, _client)
    first, last = snaps[0].t, snaps[-1].t
    document: dict[str, Any] = {
        "window": {"start_s": round(rel0, 3), "end_s": round(rel1, 3),
                   "seconds": round(t1 - t0, 3), "warmup_s": run.warmup_s,
                   "requests": round(counts.requests), "messages": round(counts.messages),
                   "mb": round(counts.wire_bytes / MB, 3)},
        "implementation": watched.implementation,
        "broker": {
            "measured": broker_cpu is not None,
            "source": ("process" if watched.broker_pids else
                       "process_cpu_seconds_total" if broker_nodes else None),
            "nodes": nodes,
            **cost_figures(broker_cpu, counts),
            "peak_rss_mb": max((n["peak_rss_mb"] for n in nodes.values()
                                if n["peak_rss_mb"] is not None), default=None),
        },
        "client": {
            "measured": client_cpu is not None,
            "covers": watched.client,
            **cost_figures(client_cpu, counts),
            "peak_rss_mb": _mb(watched.client_memory),
        },
    }
    kafka_nodes = [n for n in watched.endpoints if any(n in s.kafka for s in snaps)]
    if kafka_nodes:
        kafka = kafka_window(snaps, kafka_nodes, t0, t1)
        whole = kafka_window(snaps, kafka_nodes, first, last)
        kafka["available"] = True
        # the priming requests came before the schedule's time zero (transport.priming)
        before = int(primed_requests or 0)
        kafka["produce_requests_run"] = (whole["produce_requests"] - before
                                         if whole["produce_requests"] is not None else None)
        if before:
            kafka["priming_requests"] = before
        kafka["requests_sent_run"] = requests_sent
        kafka["endpoints"] = dict(watched.endpoints)
        document["kafka"] = kafka
    else:
        document["kafka"] = {"available": False, "reason": _why_no_kafka(watched, snaps)}
    missing = sorted({f"node {node}: {what}" for s in snaps[-1:] for node, r in s.kafka.items()
                      for what in r.missing}
                     | {f"node {node}: {error}" for s in snaps for node, error in
                        s.errors.items()})
    document["missing"] = sorted(set(missing) | set(backwards(snaps, watched, first, last)))
    if watched.note:
        document["note"] = watched.note
    # the figures compare-modes, sweep and gate use, by their short names
    document["broker_cpu_s_per_million_msgs"] = document["broker"]["cpu_s_per_million_msgs"]
    return document


#: The cumulative figures read from an endpoint, by the name a user knows them by.
_COUNTERS = {"process_cpu_s": "process_cpu_seconds_total",
             "produce_requests": "RequestsPerSec,request=Produce",
             "handler_idle_ns": "RequestHandlerAvgIdlePercent", "messages_in":
             "MessagesInPerSec", "bytes_in": "BytesInPerSec"}
BACKWARDS = "went backwards during the run"


def backwards(snaps: Sequence[Snapshot], watched: Watched, t0: float, t1: float
              ) -> list[str]:
    """``node N: COUNTER went backwards ...`` for each counter that fell in [t0, t1]."""
    found = [f"node {node}: {name} {BACKWARDS} (a restart, or a URL that reaches more than "
             "one process); its figures are left out, not shown as 0"
             for node in watched.endpoints for attr, name in _COUNTERS.items()
             if went_backwards(snaps, t0, t1, _kafka(node, attr))]
    found += [f"node {node}: the process's CPU time {BACKWARDS} (a reused pid); left out"
              for node in watched.broker_pids if went_backwards(snaps, t0, t1, _cpu(node))]
    return found


def _why_no_kafka(watched: Watched, snaps: Sequence[Snapshot]) -> str:
    if watched.implementation == "tansu":
        return ("Tansu has no Kafka request metrics (no JMX); its cost is its process's "
                "CPU and memory")
    if watched.endpoints:
        errors = sorted({e for s in snaps for e in s.errors.values()})
        return "no endpoint answered: " + "; ".join(errors) if errors else "no scrape"
    if watched.implementation == "external":
        return "not asked for: give --broker-metrics URL[,URL...] (one per broker)"
    return "the brokers' metrics endpoints are not available"


def interval_figures(snaps: Sequence[Snapshot], watched: Watched, run: RunWindow,
                     rows: list[dict[str, Any]]) -> None:
    """Add each interval row's broker figures (CPU s per node and in all, client CPU,
    Kafka's Produce requests, handler idle %, Produce TotalTime p99) to the row itself."""
    kafka_nodes = [n for n in watched.endpoints if any(n in s.kafka for s in snaps)]
    for row in rows:
        t0, t1 = run.start + float(row["start_s"]), run.start + float(row["end_s"])
        per_node = {n: _round(node_cpu(snaps, watched, n, t0, t1))
                    for n in broker_cpu_nodes(snaps, watched)}
        known = [v for v in per_node.values() if v is not None]
        row["broker_cpu_s"] = round(sum(known), 3) if known else None
        row["broker_cpu_s_by_node"] = per_node
        row["client_cpu_s"] = _round(delta(snaps, t0, t1, _client))
        if kafka_nodes:
            kafka = kafka_window(snaps, kafka_nodes, t0, t1)
            row["broker_produce_requests"] = kafka["produce_requests"]
            row["broker_handler_idle_pct"] = kafka["request_handler_idle_pct"]
            row["broker_produce_p99_ms"] = kafka["produce_time_ms"]["total"]["p99"]
