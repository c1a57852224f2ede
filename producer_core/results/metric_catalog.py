"""Every figure a run reports, declared once: where it is in the JSON, its unit, how the
shares of a distributed run merge it, and whether compare-modes summarises it.

`Results.to_dict` writes the histograms from this table, `distributed.merge` adds, takes
the largest of or merges what it says, compare-modes' summary, `kbatch report` and
`kbatch gate` take their rows and short names from the `summary` entries.
tests/unit/test_metric_catalog.py checks the rest against it: every `RunMetrics` and
`TopicMetrics` field is declared here (or the merge would drop it), every path is in the
JSON `to_dict` writes and in the results schema (producer_core/schemas/results-v1.json).

Pure data: no imports from the rest of kbatch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

DEFAULT_INTERVAL_S = 5.0
"""Seconds per row of the results' `intervals` (producer_core.results.intervals); here, with no
imports, because `--report-interval`'s help quotes it."""


class Merge(Enum):
    """How the shares of a distributed run combine a figure (distributed.merge)."""

    SUM = "sum"
    """A counter: the shares' values add."""
    MAX = "max"
    """The largest share's value."""
    ALL = "all"
    """A flag that holds for the merge only if it holds for every share."""
    HISTOGRAM = "histogram"
    """An HdrHistogram, merged exactly from its encoded form."""
    RECOMPUTE = "recompute"
    """Derived in `Results.to_dict` from merged figures (a rate, a ratio, a percentile)."""
    NOT_MERGED = "not_merged"
    """Measured once around the whole run, never per share (`broker_cost`: the shares of
    a distributed run share the brokers, so their readings must not add)."""


class Change(Enum):
    """How compare-modes' change column words a mode against the first (`compare.change_text`)."""

    DELTA_MS = "delta_ms"          # +12.3 ms
    DELTA_S = "delta_s"            # +1.2 s
    FEWER_MORE = "fewer_more"      # 95.0% fewer
    TIMES = "times"                # 20.0x
    PERCENT = "percent"            # +3.1%


@dataclass(frozen=True)
class Metric:
    """One figure of a run's results JSON."""

    name: str
    """Its short name: a compare-modes summary row and `kbatch gate` name (`p99_ms`) when
    `summary`; else the RunMetrics field it is recorded in."""
    path: str
    """Dotted path in a run document (`latency.p99_ms`)."""
    unit: str
    merge: Merge
    source: str | None = None
    """The `RunMetrics` attribute that records it (None: derived in `to_dict`)."""
    summary: bool = False
    """A row of compare-modes' summary and `kbatch report`; a short name in gate rules."""
    digits: int = 0
    """Decimals in compare-modes' table."""
    change: Change = Change.PERCENT
    optional: bool = False
    """Present only when the run measured it (broker cost, end-to-end latency): summaries
    skip it where absent, and gate says what a run needs to hold it (`needs`)."""
    needs: str = ""
    """For an optional figure: which runs hold it, in the words of gate's error."""

    def value(self, run: Mapping[str, Any]) -> Any:
        """The figure in a run document (KeyError if the document lacks it)."""
        node: Any = run
        for key in self.path.split("."):
            node = node[key]
        return node

    @property
    def histogram_key(self) -> str:
        """A histogram's key under the JSON's `histograms` (its encoded form, in µs)."""
        return f"{self.name}_us"


BROKER_COST_NEEDS = ("runs on brokers kbatch started itself; Kafka's own figures only on "
                     "Apache Kafka")


def _latency(name: str, digits: int = 1) -> Metric:
    return Metric(name, f"latency.{name}", "ms", Merge.RECOMPUTE, summary=True, digits=digits,
                  change=Change.DELTA_MS)


METRICS: tuple[Metric, ...] = (
    # the compare-modes summary, in its row order
    Metric("requests_sent", "requests_sent", "requests", Merge.RECOMPUTE, summary=True,
           change=Change.FEWER_MORE),
    Metric("msgs_per_req", "msgs_per_req", "records/request", Merge.RECOMPUTE, summary=True,
           digits=1, change=Change.TIMES),
    Metric("partitions_per_request", "partitions_per_request.mean", "partitions/request",
           Merge.RECOMPUTE, summary=True, digits=1, change=Change.TIMES),
    _latency("p50_ms"),
    _latency("p95_ms"),
    _latency("p99_ms"),
    _latency("max_ms"),
    # rates over the schedule's window (results/rates.py), then acknowledgements over the
    # whole wall time (to the last acknowledgement: a run that overran reads low)
    Metric("acked_msgs_per_s", "rate.acked_msgs_per_s", "msg/s", Merge.RECOMPUTE,
           summary=True, optional=True, needs="results of kbatch 47 or later"),
    Metric("sent_msgs_per_s", "rate.sent_msgs_per_s", "msg/s", Merge.RECOMPUTE,
           summary=True, optional=True, needs="results of kbatch 47 or later"),
    Metric("overrun_s", "rate.overrun_s", "s", Merge.RECOMPUTE, summary=True, digits=1,
           change=Change.DELTA_S, optional=True, needs="results of kbatch 47 or later"),
    Metric("achieved_msgs_per_s", "rate.achieved_msgs_per_s", "msg/s", Merge.RECOMPUTE,
           summary=True),
    Metric("mb_per_s", "rate.mb_per_s", "MB/s", Merge.RECOMPUTE, summary=True, digits=2),
    Metric("failed", "messages.failed", "messages", Merge.SUM, "messages_failed",
           summary=True),
    # what the run cost the brokers (measure/broker_cost.py), where it was measured
    *(Metric(name, f"broker_cost.{path}", unit, Merge.NOT_MERGED, summary=True,
             digits=digits, change=change, optional=True, needs=BROKER_COST_NEEDS)
      for name, path, unit, digits, change in (
          ("broker_cpu_s", "broker.cpu_s", "s", 2, Change.PERCENT),
          ("broker_cpu_s_per_million_msgs", "broker.cpu_s_per_million_msgs", "s", 1,
           Change.PERCENT),
          ("broker_produce_requests", "kafka.produce_requests_run", "requests", 0,
           Change.FEWER_MORE),
          ("broker_handler_idle_pct", "kafka.request_handler_idle_pct", "%", 1,
           Change.PERCENT),
          ("broker_produce_p99_ms", "kafka.produce_time_ms.total.p99", "ms", 1,
           Change.DELTA_MS),
          ("client_cpu_s_per_million_msgs", "client.cpu_s_per_million_msgs", "s", 1,
           Change.PERCENT),
      )),
    # end-to-end latency (intended send to consume), held by runs with consumers; the
    # latency rows above are the ack latency (intended send to acknowledgement,
    # OpenMessaging Benchmark's "publish latency")
    *(Metric(name, f"e2e_latency.{name[4:]}", "ms", Merge.RECOMPUTE, summary=True, digits=1,
             change=Change.DELTA_MS, optional=True, needs="runs with --consume")
      for name in ("e2e_p50_ms", "e2e_p99_ms")),
    # counters
    Metric("retried_requests", "retried_requests", "requests", Merge.SUM, "retried_requests"),
    Metric("records_sent", "records_sent", "records", Merge.SUM, "records_sent"),
    Metric("bytes_sent", "bytes_sent", "bytes", Merge.SUM, "bytes_sent"),
    Metric("payload_bytes", "compression.payload_bytes", "bytes", Merge.SUM, "payload_bytes"),
    Metric("messages_generated", "messages.sent", "messages", Merge.SUM, "messages_generated"),
    Metric("messages_acked", "messages.acknowledged", "messages", Merge.SUM, "messages_acked"),
    Metric("messages_unknown", "messages.unknown", "messages", Merge.SUM, "messages_unknown"),
    Metric("messages_sent_unacknowledged", "messages.sent_unacknowledged", "messages",
           Merge.SUM, "messages_sent_unacknowledged"),
    Metric("messages_discarded", "messages.discarded", "messages", Merge.SUM,
           "messages_discarded"),
    Metric("messages_aborted", "messages.aborted", "messages", Merge.SUM, "messages_aborted"),
    Metric("blocked_s", "generator_blocked.total_ms", "s", Merge.SUM, "blocked_s"),
    Metric("blocked_max_s", "generator_blocked.max_ms", "s", Merge.MAX, "blocked_max_s"),
    Metric("blocked_episodes", "generator_blocked.episodes", "episodes", Merge.SUM,
           "blocked_episodes"),
    Metric("complete", "complete", "flag", Merge.ALL, "complete"),
    # histograms (µs; the JSON has each one's summary in ms and its encoded form)
    Metric("latency", "latency", "µs", Merge.HISTOGRAM, "latency"),
    Metric("generator_lag", "generator_lag", "µs", Merge.HISTOGRAM, "generator_lag"),
    Metric("linger", "linger", "µs", Merge.HISTOGRAM, "linger"),
    Metric("rtt", "rtt", "µs", Merge.HISTOGRAM, "rtt"),
    Metric("batch_linger", "batch_linger", "µs", Merge.HISTOGRAM, "batch_linger"),
)


@dataclass(frozen=True)
class TopicMetric:
    """One figure of a topic's share of a run (`TopicMetrics`, JSON `topics.<name>`)."""

    field: str
    """The `TopicMetrics` attribute."""
    path: str
    """Dotted path in the topic's JSON object."""
    merge: Merge


TOPIC_METRICS: tuple[TopicMetric, ...] = (
    TopicMetric("requests", "requests", Merge.SUM),
    TopicMetric("records_sent", "records_sent", Merge.SUM),
    TopicMetric("bytes_sent", "bytes_sent", Merge.SUM),
    TopicMetric("payload_bytes", "payload_bytes", Merge.SUM),
    TopicMetric("generated", "messages.sent", Merge.SUM),
    TopicMetric("acknowledged", "messages.acknowledged", Merge.SUM),
    TopicMetric("failed", "messages.failed", Merge.SUM),
    TopicMetric("unknown", "messages.unknown", Merge.SUM),
    TopicMetric("sent_unacknowledged", "messages.sent_unacknowledged", Merge.SUM),
    TopicMetric("discarded", "messages.discarded", Merge.SUM),
    TopicMetric("aborted", "messages.aborted", Merge.SUM),
    TopicMetric("latency", "latency", Merge.HISTOGRAM),
)


def recorded(merge: Merge) -> tuple[str, ...]:
    """The RunMetrics fields merged this way (distributed.merge)."""
    return tuple(m.source for m in METRICS if m.merge is merge and m.source is not None)


def topic_recorded(merge: Merge) -> tuple[str, ...]:
    """The TopicMetrics fields merged this way."""
    return tuple(m.field for m in TOPIC_METRICS if m.merge is merge)


HISTOGRAMS: tuple[Metric, ...] = tuple(m for m in METRICS if m.merge is Merge.HISTOGRAM)
"""The run's HdrHistograms, in the JSON's order."""

SUMMARY: dict[str, Metric] = {m.name: m for m in METRICS if m.summary}
"""compare-modes' summary rows (and `kbatch report`'s, and gate short names), in order."""

SUMMARY_METRICS: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    name: metric.value for name, metric in SUMMARY.items()}
"""Each summary metric's getter over a run document."""

def summary_metric(name: str) -> Metric | None:
    """A summary row's declaration, always-present or optional."""
    return SUMMARY.get(name)
