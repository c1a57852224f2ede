"""Kafka's own view of a run, from a Prometheus endpoint of one broker.

The names are the JMX exporter's, as its Kafka example config makes them (and as kbatch's
``kafka_jmx_exporter.yaml`` does); a few spellings of the same figure are accepted, since
exporter versions and configs differ in the ``_count``/``_total`` suffixes. What a scrape
lacks is named in ``missing`` (the run goes on; the section says what is missing).

Counters (requests, handler idle nanoseconds, messages and bytes in, the JVM's CPU) are
differenced over a window. Kafka's request-time histograms are Yammer histograms: their
``Mean`` is the lifetime sum over count, so ``mean * count`` differenced gives the
window's exact mean; their percentiles come from a reservoir biased to the last few
minutes, read at the window's end (see docs/guides/broker-cost.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from producer_core.measure.prometheus_text import Sample

#: Produce request phases Kafka times (kafka.network:type=RequestMetrics,request=Produce).
TIMES = {
    "total": "totaltimems",
    "request_queue": "requestqueuetimems",
    "local": "localtimems",
    "remote": "remotetimems",
    "response_queue": "responsequeuetimems",
    "response_send": "responsesendtimems",
}
_RM = "kafka_network_requestmetrics_"
PRODUCE_REQUESTS = (f"{_RM}requests_total", f"{_RM}requestspersec_total",
                    f"{_RM}requestspersec_count", f"{_RM}requests_count")
HANDLER_IDLE_COUNT = tuple(
    f"kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent{suffix}"
    for suffix in ("_count", "_count_total", "_total"))
HANDLER_IDLE_RATE = ("kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent",)
NETWORK_IDLE = ("kafka_network_socketserver_networkprocessoravgidlepercent",)
MESSAGES_IN = ("kafka_server_brokertopicmetrics_messagesin_total",
               "kafka_server_brokertopicmetrics_messagesinpersec_count")
BYTES_IN = ("kafka_server_brokertopicmetrics_bytesin_total",
            "kafka_server_brokertopicmetrics_bytesinpersec_count")
PROCESS_CPU = ("process_cpu_seconds_total",)


@dataclass(frozen=True)
class TimeHistogram:
    count: float
    mean: float | None
    p50: float | None
    p99: float | None


@dataclass
class KafkaReading:
    """One scrape of one broker, reduced to the figures broker_cost uses."""

    produce_requests: float | None = None
    handler_idle_ns: float | None = None
    """RequestHandlerAvgIdlePercent's Count: idle nanoseconds per handler thread."""
    handler_idle_rate: float | None = None
    network_idle: float | None = None
    messages_in: float | None = None
    bytes_in: float | None = None
    process_cpu_s: float | None = None
    times: dict[str, TimeHistogram] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)


def _first(samples: Sequence[Sample], names: tuple[str, ...], *, total: bool = False,
           **labels: str) -> float | None:
    """The value of the first of ``names`` present (summed over its series if ``total``);
    series with a ``topic`` label are per-topic copies of a broker-wide figure: skipped."""
    for name in names:
        found = [s for s in samples if s.name == name and s.label("topic") is None
                 and all(s.label(k) == v for k, v in labels.items())]
        if found:
            return sum(s.value for s in found) if total else found[0].value
    return None


def reading(samples: Sequence[Sample]) -> KafkaReading:
    """The figures of one scrape; what it lacks goes to ``missing`` (by Kafka's names)."""
    r = KafkaReading()
    r.produce_requests = _first(samples, PRODUCE_REQUESTS, total=True, request="Produce")
    r.handler_idle_ns = _first(samples, HANDLER_IDLE_COUNT)
    r.handler_idle_rate = _first(samples, HANDLER_IDLE_RATE)
    r.network_idle = _first(samples, NETWORK_IDLE)
    r.messages_in = _first(samples, MESSAGES_IN)
    r.bytes_in = _first(samples, BYTES_IN)
    r.process_cpu_s = _first(samples, PROCESS_CPU)
    for key, name in TIMES.items():
        count = _first(samples, (f"{_RM}{name}_count", f"{_RM}{name}_count_total"),
                       request="Produce")
        if count is None:
            r.missing.append(f"Produce {name.replace('timems', 'TimeMs')}")
            continue
        r.times[key] = TimeHistogram(
            count, _first(samples, (f"{_RM}{name}_mean",), request="Produce"),
            _first(samples, (f"{_RM}{name}",), request="Produce", quantile="0.50"),
            _first(samples, (f"{_RM}{name}",), request="Produce", quantile="0.99"))
    if r.handler_idle_ns is None and r.handler_idle_rate is None:
        r.missing.append("RequestHandlerAvgIdlePercent")
    for value, what in ((r.network_idle, "NetworkProcessorAvgIdlePercent"),
                        (r.messages_in, "MessagesInPerSec"), (r.bytes_in, "BytesInPerSec")):
        if value is None:
            r.missing.append(what)
    # RequestsPerSec,request=Produce appears with the first Produce request: before it, 0
    if r.produce_requests is None and "total" in r.times:
        r.produce_requests = 0.0
    if r.produce_requests is None:
        r.missing.append("RequestsPerSec,request=Produce")
    return r
