"""End-to-end latency, consume rate, consumer lag and the live read-back (pure logic).

The consumers (`measure.consumers`) hand back, per record read: its topic index,
partition, message id, the instant it reached the consumer (on the producer's clock, and
on the wall clock) and the record's timestamp. Here those become the figures, so every
rule is testable on synthetic arrays:

* end-to-end latency = consume instant - intended send instant (run start + the
  schedule's offset of the message, `measure.intended`); the first copy of each id counts
  (a duplicate is a delivery fault, reported by the read-back, not a second latency);
  messages intended during the warm-up are left out, as for the ack latency. Topics
  without a schedule (`--rate max`) are measured from the record's timestamp instead.
* consumer lag at an instant T (each interval's end): in messages, acknowledged by T minus
  consumed by T; in seconds, the age at T of the oldest message that was due by T and not
  yet consumed (0 when the consumers had everything due).
* the read-back: `verify.check_topic` on the records in offset order per partition, the
  same counts `--verify` gives (present, missing, duplicated, out of order).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from producer_core.measure.intended import intended_offsets
from producer_core.measure.verify import TopicCheck, check_topic
from producer_core.results.histogram import LatencyHistogram
from producer_core.workload.workload import Workload


@dataclass
class Consumed:
    """Every record the consumers read, one array entry per record, in read order per
    partition."""

    topic_index: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    partition: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    consume_s: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))
    """When the record reached the consumer, on the producer's clock (seconds)."""
    consume_wall: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))
    """The same instant on the wall clock (epoch seconds)."""
    timestamp_ms: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """The record's timestamp (CreateTime, epoch ms)."""

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def concat(cls, parts: Sequence[Consumed]) -> Consumed:
        if not parts:
            return cls()
        return cls(*(np.concatenate([getattr(p, name) for p in parts]) for name in
                     ("topic_index", "partition", "ids", "consume_s", "consume_wall",
                      "timestamp_ms")))


@dataclass
class Latencies:
    """The end-to-end latency of each first copy that has one, and when it was read."""

    seconds: np.ndarray
    consume_rel: np.ndarray
    """Consume instant minus the run's start (s)."""
    intended_rel: np.ndarray
    """Intended instant minus the run's start (s; NaN when only the timestamp was known)."""
    topic_index: np.ndarray
    from_timestamp: int
    """Latencies measured from the record timestamp (unthrottled topics)."""


def first_copies(consumed: Consumed) -> np.ndarray:
    """Indices of the earliest-read copy of each distinct id."""
    if not len(consumed):
        return np.zeros(0, np.int64)
    order = np.argsort(consumed.consume_s, kind="stable")
    _, first = np.unique(consumed.ids[order], return_index=True)
    return np.sort(order[first])


def latencies(workload: Workload, consumed: Consumed, start: float) -> Latencies:
    """End-to-end latency of each message read (its first copy), from its intended send
    time; `start` is the run's start on the clock of `consume_s`."""
    index = first_copies(consumed)
    ids = consumed.ids[index]
    offsets = intended_offsets(workload, ids)
    consume_rel = consumed.consume_s[index] - start
    seconds = consume_rel - offsets
    unknown = ~np.isfinite(offsets)
    by_timestamp = (consumed.consume_wall[index][unknown]
                    - consumed.timestamp_ms[index][unknown] / 1000.0)
    seconds[unknown] = by_timestamp
    intended_rel = np.where(unknown, np.nan, offsets)
    keep = ~(intended_rel < workload.warmup_s)  # NaN (timestamp-measured) kept
    if workload.warmup_s and unknown.any():
        keep &= ~(unknown & (consume_rel - by_timestamp < workload.warmup_s))
    return Latencies(seconds[keep], consume_rel[keep], intended_rel[keep],
                     consumed.topic_index[index][keep], int(np.count_nonzero(unknown & keep)))


def histogram(seconds: np.ndarray) -> LatencyHistogram:
    result = LatencyHistogram()
    result.record_seconds(seconds)
    return result


def lag_at(instants: Sequence[float], acknowledged_by: Sequence[int], lat: Latencies
           ) -> list[tuple[int, float]]:
    """(messages, seconds) of consumer lag at each instant (seconds from the run start)."""
    consumed_sorted = np.sort(lat.consume_rel)
    known = np.isfinite(lat.intended_rel)
    intended, consumed_at = lat.intended_rel[known], lat.consume_rel[known]
    out = []
    for instant, acked in zip(instants, acknowledged_by, strict=True):
        read = int(np.searchsorted(consumed_sorted, instant, side="right"))
        waiting = intended[(intended <= instant) & (consumed_at > instant)]
        seconds = float(instant - waiting.min()) if waiting.size else 0.0
        out.append((max(0, int(acked) - read), round(max(0.0, seconds), 6)))
    return out


def interval_figures(rows: Sequence[Mapping[str, Any]], lat: Latencies, encode: bool
                     ) -> list[dict[str, Any]]:
    """Per interval row: records consumed in it, their e2e percentiles, and the lag at its
    end (the row's own `acknowledged` counts add up to what was acknowledged by then)."""
    ends = [float(r["end_s"]) for r in rows]
    acked = np.cumsum([int(r.get("acknowledged", 0)) for r in rows]).tolist()
    lags = lag_at(ends, acked, lat)
    out = []
    for row, (lag_messages, lag_s) in zip(rows, lags, strict=True):
        here = (lat.consume_rel > float(row["start_s"])) & (lat.consume_rel <= float(row["end_s"]))
        if row is rows[0]:
            here |= lat.consume_rel <= float(row["start_s"])
        h = histogram(lat.seconds[here])
        seconds = max(float(row["end_s"]) - float(row["start_s"]), 1e-9)
        figures: dict[str, Any] = {
            "consumed": h.count,
            "consumed_per_s": round(h.count / seconds, 1),
            "e2e_p50_ms": h.percentile_ms(50) if h.count else 0.0,
            "e2e_p99_ms": h.percentile_ms(99) if h.count else 0.0,
            "e2e_max_ms": h.max_ms if h.count else 0.0,
            "lag_messages": lag_messages,
            "lag_s": lag_s,
        }
        if encode:
            figures["e2e_latency_us"] = h.encode()
        out.append(figures)
    return out


def read_back(workload: Workload, consumed: Consumed, acked: Mapping[str, Sequence[int]],
              aborted: Mapping[str, Sequence[int]]) -> dict[str, TopicCheck]:
    """`--verify`'s verdict per topic on what the consumers read."""
    names = [spec.name for spec in workload.topic_specs()]
    checks = {}
    for index, name in enumerate(names):
        mine = consumed.topic_index == index
        partitions = {int(p): consumed.ids[mine & (consumed.partition == p)]
                      for p in np.unique(consumed.partition[mine])}
        checks[name] = check_topic(acked.get(name, ()), partitions, aborted.get(name, ()))
    return checks


def consume_rate(lat: Latencies) -> float:
    """Messages read per second, from the run's start to the last read."""
    if not len(lat.consume_rel):
        return 0.0
    span = float(lat.consume_rel.max())
    return round(len(lat.consume_rel) / span, 1) if span > 0 else 0.0


def summary(h: LatencyHistogram) -> dict[str, float]:
    """The figures of the `latency` object, for `e2e_latency`."""
    return {key: round(value, 3) if isinstance(value, float) else value
            for key, value in h.summary_ms().items()}


def negative_count(lat: Latencies) -> int:
    """Latencies below zero: only possible when clocks differ (hosts of a distributed
    run, or a record timestamp set by another host)."""
    return int(np.count_nonzero(lat.seconds < 0))


def topic_histograms(workload: Workload, lat: Latencies) -> dict[str, LatencyHistogram]:
    return {spec.name: histogram(lat.seconds[lat.topic_index == index])
            for index, spec in enumerate(workload.topic_specs())}
