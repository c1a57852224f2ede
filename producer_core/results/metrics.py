"""What a run measured: counters, histograms, a per-request log, and the Results JSON.

Counts are facts: `requests_sent` is incremented where a ProduceRequest is written to
the socket, `records_sent` by the records in it. Results are mergeable (counters add,
histograms merge from their encoded form, request logs concatenate) so runs executed in
different processes combine exactly.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from producer_core.results.histogram import LatencyHistogram
from producer_core.results.metric_catalog import HISTOGRAMS
from producer_core.results.rates import window_rates
from producer_core.results.stalls import Stall, find_stalls, stall_warning
from producer_core.workload.message_source import run_target_rate

if TYPE_CHECKING:
    from producer_core.workload.workload import Workload

SCHEMA_VERSION = 1
E2E_HISTOGRAM_KEY = "e2e_latency_us"
"""The end-to-end latency's encoded histogram under `histograms` (runs with consumers)."""

REQUEST_LOG_FIELDS = (
    "send_time_s", "broker", "partitions", "records", "bytes", "rtt_ms", "reason",
    "linger_ms", "attempt",
)


@dataclass
class RequestRecord:
    """One ProduceRequest as written to the wire (send time relative to the run start)."""

    send_time_s: float
    broker: int
    partitions: int
    records: int
    bytes: int
    reason: str
    linger_ms: float
    attempt: int
    rtt_ms: float = -1.0  # -1 until the response arrives (and for acks=0)


@dataclass
class ClientCounts:
    """Request figures taken from a client's own statistics (mode librdkafka).

    librdkafka does not say what each ProduceRequest carried, only totals: Produce
    requests per broker (`req.Produce`) and the partition batches it built (`batchcnt`,
    `batchsize`). Per-request records are then unknown, so `RunMetrics.requests` stays
    empty and these totals stand in for it.
    """

    requests: int
    batches: int
    batch_bytes_p50: float = 0.0
    """Median batch size in bytes, from librdkafka's windowed histograms (approximate)."""
    batch_bytes_max: float = 0.0


@dataclass
class TopicMetrics:
    """One topic's share of a run. A request carrying several topics counts once in the
    run's `requests_sent` and once for each topic it carried here."""

    requests: int = 0
    records_sent: int = 0
    bytes_sent: int = 0
    generated: int = 0
    acknowledged: int = 0
    failed: int = 0
    unknown: int = 0
    sent_unacknowledged: int = 0
    discarded: int = 0
    aborted: int = 0
    discard_reasons: Counter[str] = field(default_factory=Counter)
    latency: LatencyHistogram = field(default_factory=LatencyHistogram)
    payload_bytes: int = 0
    """Key and value bytes of the messages generated (see `payload_mb_per_s`)."""

    def to_dict(self, duration_s: float) -> dict[str, Any]:
        return {
            "payload_bytes": self.payload_bytes,
            "mb_per_s": payload_mb_per_s(self.payload_bytes, self.generated,
                                         self.acknowledged, duration_s),
            "requests": self.requests,
            "records_sent": self.records_sent,
            "bytes_sent": self.bytes_sent,
            "msgs_per_req": round(self.records_sent / self.requests, 3) if self.requests else 0.0,
            "messages": {
                "sent": self.generated, "acknowledged": self.acknowledged,
                "failed": self.failed, "unknown": self.unknown,
                "sent_unacknowledged": self.sent_unacknowledged, "discarded": self.discarded,
                "aborted": self.aborted,
                "discard_reasons": dict(self.discard_reasons),
            },
            "achieved_msgs_per_s": round(self.acknowledged / duration_s, 1) if duration_s else 0.0,
            "latency": _summary(self.latency),
        }


@dataclass
class RunMetrics:
    """Mutable counters the engine updates while it runs."""

    requests: list[RequestRecord] = field(default_factory=list, repr=False)
    """Left out of the repr: asyncio's runner formats the run's result (a `Results`) when it
    ends, and tens of thousands of records took 0.1 s there."""
    requests_by_broker: Counter[int] = field(default_factory=Counter)
    retried_requests: int = 0
    records_sent: int = 0
    bytes_sent: int = 0
    messages_generated: int = 0
    messages_acked: int = 0
    messages_failed: int = 0
    failed_reasons: Counter[str] = field(default_factory=Counter)
    latency: LatencyHistogram = field(default_factory=LatencyHistogram)
    generator_lag: LatencyHistogram = field(default_factory=LatencyHistogram)
    linger: LatencyHistogram = field(default_factory=LatencyHistogram)
    rtt: LatencyHistogram = field(default_factory=LatencyHistogram)
    batch_linger: LatencyHistogram = field(default_factory=LatencyHistogram)
    """Per partition batch: first record's append to the batch's first send (KIP-1224)."""
    blocked_s: float = 0.0
    """Time the generator spent blocked on buffer memory (a full librdkafka queue)."""
    blocked_max_s: float = 0.0
    blocked_episodes: int = 0
    client_counts: ClientCounts | None = None
    """Set instead of `requests` when per-request records are unknown (librdkafka)."""
    topics: dict[str, TopicMetrics] = field(default_factory=dict)
    """Per-topic figures, filled by the engine (in workload order)."""
    messages_discarded: int = 0
    discard_reasons: Counter[str] = field(default_factory=Counter)
    payload_bytes: int = 0
    """Key and value bytes of the messages generated: compression's input."""
    intervals: Any = None
    """The run's `intervals.IntervalRecorder`, if one ran (its `to_dict` goes in the JSON)."""
    messages_unknown: int = 0
    """Timed out (or cut off) after they may have been written: outcome unknown."""
    unknown_reasons: Counter[str] = field(default_factory=Counter)
    messages_sent_unacknowledged: int = 0
    """acks=0: written to the wire, no acknowledgement asked for."""
    complete: bool = True
    """False when the run was stopped before its end (a signal)."""
    idempotence: dict[str, Any] = field(default_factory=lambda: {"enabled": False})
    """enabled, producer_id, producer_epoch, epoch_bumps (results JSON `idempotence`)."""
    messages_aborted: int = 0
    """Acknowledged by the broker in a transaction that was then aborted: not visible to
    read_committed consumers."""

    def settled(self) -> int:
        """Messages with an outcome: every generated message ends in exactly one of these."""
        return (self.messages_acked + self.messages_failed + self.messages_unknown
                + self.messages_sent_unacknowledged + self.messages_discarded
                + self.messages_aborted)

    def unknown(self, count: int, reason: str) -> None:
        self.messages_unknown += count
        self.unknown_reasons[reason] += count

    def discard(self, topic: str, count: int, reason: str) -> None:
        """Messages a mode chose not to send (Bruce's rate limit): counted, never lost."""
        self.messages_discarded += count
        self.discard_reasons[reason] += count
        topic_metrics = self.topics.get(topic)
        if topic_metrics is not None:
            topic_metrics.discarded += count
            topic_metrics.discard_reasons[reason] += count

    def record_request(self, record: RequestRecord) -> None:
        self.requests.append(record)
        self.requests_by_broker[record.broker] += 1
        self.records_sent += record.records
        self.bytes_sent += record.bytes
        if record.attempt > 1:
            self.retried_requests += 1
        self.linger.record_us(int(record.linger_ms * 1000))

    def fail(self, count: int, reason: str) -> None:
        self.messages_failed += count
        self.failed_reasons[reason] += count


MB = 1_000_000
"""MB/s figures use decimal megabytes."""


def payload_mb_per_s(payload_bytes: int, generated: int, acknowledged: int,
                     seconds: float) -> float:
    """Key and value MB per second of acknowledged messages: the mean generated size times
    the acknowledged count (exact for fixed sizes), like kafka-producer-perf-test's MB/sec."""
    if seconds <= 0 or generated <= 0:
        return 0.0
    return round(payload_bytes / generated * acknowledged / seconds / MB, 3)


def compression_summary(codec: str, payload_bytes: int, wire_bytes: int, requests: int
                        ) -> dict[str, Any]:
    """How much the codec saved: payload (key + value) bytes per byte on the wire."""
    return {
        "type": codec,
        "payload_bytes": payload_bytes,
        "wire_bytes": wire_bytes,
        "ratio": round(payload_bytes / wire_bytes, 3) if wire_bytes else 0.0,
        "wire_bytes_per_request": round(wire_bytes / requests, 1) if requests else 0.0,
    }


def _distribution(values: np.ndarray, unit: str = "") -> dict[str, float]:
    if values.size == 0:
        return {f"mean{unit}": 0.0, f"p50{unit}": 0.0, f"max{unit}": 0.0}
    return {
        f"mean{unit}": round(float(values.mean()), 3),
        f"p50{unit}": float(np.percentile(values, 50, method="lower")),
        f"max{unit}": float(values.max()),
    }


@dataclass
class Section:
    """A named object of the results JSON whose fields a mode or a client chooses: a linger
    policy's statistics (`collector`, ...), a client's own figures (`librdkafka`,
    `kafka_java`). Shares merge it with `distributed.merge.merge_stats`."""

    key: str
    values: dict[str, Any]


@dataclass
class Results:
    """The outcome of one run, in the shape of its JSON (see README, 'Results JSON').

    Every run driver (engine, librdkafka, kafka-java) builds it with `of_run`, the merge of
    a distributed run with the constructor; `to_dict` is the one place the JSON is shaped.
    The figures it holds are declared in `metric_catalog`.
    """

    mode: str
    workload: dict[str, Any]
    settings: dict[str, Any]
    bootstrap: str
    broker: str
    duration_s: float
    metrics: RunMetrics
    warnings: list[str] = field(default_factory=list)
    started_at: str | None = None
    """Wall-clock start of the run, ISO 8601 UTC (set by the caller that started it)."""
    messages_intended: int | None = None
    """Messages the schedule asked for (None: the messages generated)."""
    target_msgs_per_s: float | None = None
    """The rate the run intended on average (None: the workload's `rate`, null if none)."""
    policy: Section | None = None
    """The linger policy's own statistics (a section keyed by the policy's `stats_key`)."""
    transactions: dict[str, Any] | None = None
    """A transactional run's transactions (`transactions.TxnState.as_dict`)."""
    client: Section | None = None
    """A client driver's own figures (`librdkafka`, `kafka_java`)."""
    verify: dict[str, Any] | None = None
    """--verify's read-back (`verify_read.VerifyingRun`)."""
    runner: dict[str, Any] | None = None
    """How a distributed run ran (`distributed.spark_runner`)."""
    e2e: LatencyHistogram | None = None
    """End-to-end latency (intended send to consume) when consumers read the run
    (`--consume`, `measure.consuming_run`); None otherwise."""
    consumers: dict[str, Any] | None = None
    """The consumers' section: consume rate, lag, read-back, what they could not measure."""
    run_start: float | None = None
    """The schedule's zero on the run driver's clock (time.monotonic), not in the JSON:
    consumers on the same host measure end-to-end latency from it."""
    broker_cost: dict[str, Any] | None = None
    """What the run cost the brokers and the client (`measure.broker_cost`)."""
    priming: dict[str, Any] | None = None
    """What making the topics ready before time zero did (`transport.priming`); None when
    nothing was primed (warm topics, `--no-prime`)."""
    stalls: list[Stall] = field(default_factory=list)
    """Spans without an acknowledgement while requests waited (`stalls`), found once the
    run ended (`of_run`)."""
    clock_span: tuple[float, float] | None = None
    """The run's start and end on `time.monotonic()` (every driver's clock), so that
    measurements taken beside it find its window; not in the JSON."""

    @classmethod
    def of_run(cls, mode: str, workload: Workload, settings: dict[str, Any], bootstrap: str,
               metrics: RunMetrics, *, start: float, end: float, intended: int | None,
               warnings: list[str], policy: Section | None = None,
               transactions: dict[str, Any] | None = None,
               client: Section | None = None) -> Results:
        """The Results of a run driver's run from `start` to `end` (its clock's seconds),
        whose schedule intended `intended` messages (0 or None: unknown, those generated).
        Its stalls are found here, and named among its warnings."""
        rows = metrics.intervals.to_dict().get("run", []) if metrics.intervals else []
        stalls = find_stalls(metrics.requests, rows, end - start,
                             answered=str(settings.get("acks", "all")) != "0")
        warning = stall_warning(stalls)
        if warning:
            warnings = [*warnings, warning]
        return cls(
            mode=mode, workload=workload.as_dict(), settings=settings, bootstrap=bootstrap,
            broker="", duration_s=max(end - start, 1e-9), metrics=metrics,
            warnings=warnings, messages_intended=intended or metrics.messages_generated,
            target_msgs_per_s=run_target_rate(workload), policy=policy,
            transactions=transactions, client=client, run_start=start,
            clock_span=(start, end), stalls=stalls,
        )

    def sections(self) -> dict[str, Any]:
        """The JSON's objects named by the run's mode, client and wrappers, in JSON order."""
        named: dict[str, Any] = {}
        if self.policy is not None and self.policy.values:
            named[self.policy.key] = self.policy.values
        if self.transactions is not None:
            named["transactions"] = self.transactions
        if self.client is not None:
            named[self.client.key] = self.client.values
        if self.verify is not None:
            named["verify"] = self.verify
        if self.runner is not None:
            named["runner"] = self.runner
        if self.consumers is not None:
            named["consumers"] = self.consumers
        if self.broker_cost is not None:
            named["broker_cost"] = self.broker_cost
        if self.priming is not None:
            named["priming"] = self.priming
        return named

    @property
    def requests_sent(self) -> int:
        counts = self.metrics.client_counts
        return counts.requests if counts is not None else len(self.metrics.requests)

    @property
    def msgs_per_req(self) -> float:
        return self.metrics.records_sent / self.requests_sent if self.requests_sent else 0.0

    @property
    def achieved_rate(self) -> float:
        return self.metrics.messages_acked / self.duration_s if self.duration_s > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        m = self.metrics
        partitions = np.array([r.partitions for r in m.requests], dtype=np.int64)
        sizes = np.array([r.bytes for r in m.requests], dtype=np.int64)
        per_partition, per_bytes = _distribution(partitions), _distribution(sizes)
        if m.client_counts is not None:
            per_partition, per_bytes = _client_distributions(m.client_counts, m.bytes_sent)
        target = None if self.workload.get("closed_loop") else self.workload.get("rate")
        intended = (self.messages_intended if self.messages_intended is not None
                    else m.messages_generated)
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": "run",
            "mode": self.mode,
            "started_at": self.started_at,
            "bootstrap_servers": self.bootstrap,
            "broker": self.broker,
            "workload": self.workload,
            "settings": self.settings,
            "duration_s": round(self.duration_s, 6),
            "requests_sent": self.requests_sent,
            "retried_requests": m.retried_requests,
            "records_sent": m.records_sent,
            "bytes_sent": m.bytes_sent,
            "msgs_per_req": round(self.msgs_per_req, 3),
            "partitions_per_request": per_partition,
            "bytes_per_request": per_bytes,
            "requests_by_broker": {str(k): v for k, v in sorted(m.requests_by_broker.items())},
            "messages": {
                "intended": intended,
                "sent": m.messages_generated,
                "acknowledged": m.messages_acked,
                "failed": m.messages_failed,
                "failed_reasons": dict(m.failed_reasons),
                "unknown": m.messages_unknown,
                "unknown_reasons": dict(m.unknown_reasons),
                "sent_unacknowledged": m.messages_sent_unacknowledged,
                "discarded": m.messages_discarded,
                "discard_reasons": dict(m.discard_reasons),
                "aborted": m.messages_aborted,
            },
            "rate": {
                "target_msgs_per_s": (self.target_msgs_per_s
                                      if self.target_msgs_per_s is not None else target),
                "achieved_msgs_per_s": round(self.achieved_rate, 1),
                "mb_per_s": payload_mb_per_s(m.payload_bytes, m.messages_generated,
                                             m.messages_acked, self.duration_s),
                "wire_mb_per_s": round(m.bytes_sent / self.duration_s / MB, 3)
                if self.duration_s > 0 else 0.0,
                **window_rates(self.workload, intended, self.target_msgs_per_s
                               if self.target_msgs_per_s is not None else target,
                               m.messages_generated, m.messages_acked, self.duration_s,
                               m.intervals.to_dict().get("run", []) if m.intervals else []),
            },
            "compression": compression_summary(
                str(self.settings.get("compression.type", "none")), m.payload_bytes,
                m.bytes_sent, self.requests_sent),
            **{h.path: _summary(getattr(m, h.name)) for h in HISTOGRAMS},
            "send_rate_per_s": round(self.requests_sent / self.duration_s, 3)
            if self.duration_s > 0 else 0.0,
            "generator_blocked": {
                "total_ms": round(m.blocked_s * 1000, 3),
                "max_ms": round(m.blocked_max_s * 1000, 3),
                "episodes": m.blocked_episodes,
            },
            **({"e2e_latency": _summary(self.e2e)} if self.e2e is not None else {}),
            "histograms": {h.histogram_key: getattr(m, h.name).encode() for h in HISTOGRAMS}
            | ({E2E_HISTOGRAM_KEY: self.e2e.encode()} if self.e2e is not None else {}),
            "topics": {name: t.to_dict(self.duration_s) for name, t in m.topics.items()},
            **({"intervals": m.intervals.to_dict()} if m.intervals is not None else {}),
            "stalls": [s.as_dict() for s in self.stalls],
            "complete": m.complete,
            "idempotence": dict(m.idempotence),
            "warnings": self.warnings,
            **self.sections(),
        }


def _client_distributions(
    counts: ClientCounts, bytes_sent: int
) -> tuple[dict[str, float], dict[str, float]]:
    """Partitions and bytes per request from a client's totals (see `ClientCounts`).

    With one partition batch per request (stock librdkafka) every request carries exactly
    one partition, and the batch sizes are the request sizes. Otherwise only the means are
    known, and p50/max repeat them.
    """
    requests = max(counts.requests, 1)
    mean_partitions = counts.batches / requests
    mean_bytes = round(bytes_sent / requests, 3)
    if counts.batches == counts.requests:
        one = 1.0 if counts.requests else 0.0
        return ({"mean": one, "p50": one, "max": one},
                {"mean": mean_bytes, "p50": counts.batch_bytes_p50, "max": counts.batch_bytes_max})
    mean_partitions = round(mean_partitions, 3)
    return ({"mean": mean_partitions, "p50": mean_partitions, "max": mean_partitions},
            {"mean": mean_bytes, "p50": mean_bytes, "max": mean_bytes})


def _summary(histogram: LatencyHistogram) -> dict[str, float]:
    summary = histogram.summary_ms()
    return {key: round(value, 3) if isinstance(value, float) else value
            for key, value in summary.items()}
