"""Results over time: every `interval_s` seconds, what that interval alone measured.

A run's totals hide when things happened (a p95 spike of one second in a minute-long run
is invisible in the run's p95). The recorder samples the run's cumulative counters and
latency histograms at each interval's end and keeps the differences, so it needs no hook
in the engine's hot path: counters are subtracted, and the latency histogram of an
interval is the run's histogram counts now minus at its start (exact, integer counts).

Latencies count in the interval in which their message was acknowledged. MB/s is key and
value bytes of acknowledged messages (the run's mean generated size times the count), as
in the run's totals. Intervals of the shares of a distributed run start together (common
start instant), so `merge_intervals` adds them index by index; the run-wide rows carry
their encoded histogram so merged percentiles are exact, per-topic percentiles merge as
the largest share's (an upper bound).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from producer_core.results.histogram import LatencyHistogram
from producer_core.results.metric_catalog import DEFAULT_INTERVAL_S
from producer_core.results.metrics import MB, RunMetrics, TopicMetrics

SHORT_RUN_ROWS = 10
"""A run shorter than this many intervals gets a shorter interval (`short_interval`)."""
_SHORT_STEPS = (2.0, 1.0, 0.5, 0.25, 0.2, 0.1)
MIN_TAIL_S = 0.05
"""A last partial interval shorter than this is folded away (nothing to say about it)."""
ROW_COUNTERS = ("acknowledged", "failed", "requests", "records", "wire_bytes",
                "payload_bytes", "generated", "aborted")


@dataclass
class Tally:
    """Cumulative counters at one instant (run-wide or one topic)."""

    acknowledged: int = 0
    failed: int = 0
    requests: int = 0
    records: int = 0
    wire_bytes: int = 0
    payload_bytes: int = 0
    generated: int = 0
    aborted: int = 0
    """Acknowledged records whose transaction aborted. `acknowledged` counts every
    acknowledgement received, so a row never goes below zero when a later abort takes
    records back: the run's acknowledged is the rows' acknowledged minus their aborted."""

    def minus(self, other: Tally) -> Tally:
        return Tally(*(getattr(self, f.name) - getattr(other, f.name) for f in fields(self)))


def run_tally(m: RunMetrics, requests: int, records: int | None = None,
              wire_bytes: int | None = None) -> Tally:
    return Tally(m.messages_acked + m.messages_aborted, m.messages_failed, requests,
                 m.records_sent if records is None else records,
                 m.bytes_sent if wire_bytes is None else wire_bytes,
                 m.payload_bytes, m.messages_generated, m.messages_aborted)


def topic_tally(t: TopicMetrics, requests: int | None = None, records: int | None = None,
                wire_bytes: int | None = None) -> Tally:
    return Tally(t.acknowledged + t.aborted, t.failed,
                 t.requests if requests is None else requests,
                 t.records_sent if records is None else records,
                 t.bytes_sent if wire_bytes is None else wire_bytes,
                 t.payload_bytes, t.generated, t.aborted)


def _counts(histogram: LatencyHistogram) -> np.ndarray:
    return np.ctypeslib.as_array(histogram.hdr.counts).copy()


def histogram_of(counts: np.ndarray) -> LatencyHistogram:
    """A histogram holding exactly these bucket counts (an interval's difference)."""
    histogram = LatencyHistogram()
    hdr = histogram.hdr
    used = np.flatnonzero(counts)
    if used.size:
        np.ctypeslib.as_array(hdr.counts)[:] = counts
        hdr.total_count = int(counts.sum())
        hdr.min_value = int(hdr.get_value_from_index(int(used[0])))
        hdr.max_value = int(hdr.get_value_from_index(int(used[-1])))
    return histogram


def short_interval(expected_s: float | None, interval_s: float) -> float:
    """The interval for a run expected to last `expected_s`: `interval_s`, or for a short
    run the longest round step that still gives it about `SHORT_RUN_ROWS` rows (at least
    0.1 s: finer rows would hold a handful of messages each)."""
    if not expected_s or expected_s <= 0 or expected_s >= SHORT_RUN_ROWS * interval_s:
        return interval_s
    wanted = expected_s / SHORT_RUN_ROWS
    return next((step for step in _SHORT_STEPS if step <= wanted and step < interval_s),
                min(_SHORT_STEPS[-1], interval_s))


def expected_run_s(workload: Any) -> float | None:
    """How long a one-topic workload will run, if its flags say (duration, or messages at
    a constant rate); None for a workload file or an unthrottled count."""
    if getattr(workload, "topics", None):
        return getattr(workload, "duration_s", None)
    duration, messages, rate = (getattr(workload, name, None)
                                for name in ("duration_s", "messages", "rate"))
    by_count = messages / rate if messages and rate else None
    if duration and by_count:
        return min(duration, by_count)
    return duration or by_count


def row(start_s: float, end_s: float, delta: Tally, mean_payload: float,
        latency: LatencyHistogram, encode: bool) -> dict[str, Any]:
    """One interval's figures (docs/reference/results.md, `intervals`)."""
    seconds = max(end_s - start_s, 1e-9)
    data: dict[str, Any] = {"start_s": round(start_s, 3), "end_s": round(end_s, 3)}
    data.update({name: getattr(delta, name) for name in ROW_COUNTERS})
    data.update(_rates(data, seconds, mean_payload))
    data.update({"p50_ms": latency.percentile_ms(50) if latency.count else 0.0,
                 "p99_ms": latency.percentile_ms(99) if latency.count else 0.0,
                 "max_ms": latency.max_ms if latency.count else 0.0,
                 "mean_ms": round(latency.mean_ms, 3) if latency.count else 0.0,
                 "latency_count": latency.count})
    if encode:
        data["latency_us"] = latency.encode()
    return data


def _rates(data: dict[str, Any], seconds: float, mean_payload: float) -> dict[str, float]:
    return {
        "msgs_per_s": round(data["acknowledged"] / seconds, 1),
        "mb_per_s": round(data["acknowledged"] * mean_payload / seconds / MB, 3),
        "requests_per_s": round(data["requests"] / seconds, 1),
        "msgs_per_req": round(data["records"] / data["requests"], 2) if data["requests"]
        else 0.0,
    }


class _Series:
    """One scope's rows: the previous sample and the rows so far."""

    def __init__(self, histogram: LatencyHistogram, encode: bool) -> None:
        self.histogram = histogram
        self.encode = encode
        self.prev = Tally()
        self.prev_counts = _counts(histogram)
        self.rows: list[dict[str, Any]] = []
        self.rows_start = 0.0
        self.start_state = (self.prev, self.prev_counts)

    def sample(self, start_s: float, end_s: float, tally: Tally, extend: bool = False
               ) -> dict[str, Any]:
        """Close the interval [start_s, end_s]; with `extend`, the last row grows to
        `end_s` instead (a tail too short for rates of its own)."""
        if extend and self.rows:
            self.rows.pop()
            start_s = self.rows_start
            self.prev, self.prev_counts = self.start_state
        counts = _counts(self.histogram)
        latency = histogram_of(counts - self.prev_counts)
        mean_payload = tally.payload_bytes / tally.generated if tally.generated else 0.0
        data = row(start_s, end_s, tally.minus(self.prev), mean_payload, latency, self.encode)
        self.rows_start, self.start_state = start_s, (self.prev, self.prev_counts)
        self.prev, self.prev_counts = tally, counts
        self.rows.append(data)
        return data


Live = Callable[[], tuple[Tally, dict[str, Tally]]]
"""Returns the run's and each topic's cumulative tally now."""


class IntervalRecorder:
    """Samples a run every `interval_s` seconds; `on_interval` gets each run-wide row."""

    def __init__(self, interval_s: float = DEFAULT_INTERVAL_S,
                 on_interval: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.interval_s = interval_s
        self.on_interval = on_interval
        self.start = 0.0
        self.last = 0.0
        self.finished = False
        self._live: Live | None = None
        self._run: _Series | None = None
        self._topics: dict[str, _Series] = {}

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without its live hooks (a finished run's rows are all it carries), so
        Results cross a process boundary (``librdkafka@VERSION`` runs in a child)."""
        return {**self.__dict__, "_live": None, "on_interval": None}

    @classmethod
    def for_callback(cls, on_progress: Any, expected_s: float | None = None
                     ) -> IntervalRecorder:
        """A recorder configured by a progress callback's optional attributes
        `report_interval_s` and `on_interval` (how the CLI passes `--report-interval`).
        A run expected to last under `SHORT_RUN_ROWS` intervals gets a shorter one (see
        `short_interval`), unless the callback says its interval was asked for
        (`report_interval_explicit`): one 5 s row of a 2 s run charts as a flat line."""
        asked = getattr(on_progress, "report_interval_s", None)
        interval = asked or DEFAULT_INTERVAL_S
        # a caller that names its interval meant it, unless it says otherwise (the CLI
        # always says, from --report-interval)
        if not getattr(on_progress, "report_interval_explicit", asked is not None):
            interval = short_interval(expected_s, interval)
        return cls(interval, getattr(on_progress, "on_interval", None))

    def begin(self, start: float, metrics: RunMetrics, live: Live) -> None:
        self.start = self.last = start
        self._live = live
        self._run = _Series(metrics.latency, encode=True)
        self._topics = {name: _Series(t.latency, encode=False)
                        for name, t in metrics.topics.items()}
        metrics.intervals = self

    def poll(self, now: float) -> None:
        """Sample if an interval has ended (call often; cheap otherwise)."""
        if self._run is not None and not self.finished and now - self.last >= self.interval_s:
            self._sample(now)

    def finish(self, now: float) -> None:
        """The last, possibly partial, interval; a tail shorter than MIN_TAIL_S joins the
        row before it, so every message is in some row and no rate comes from a sliver."""
        if self._run is None or self.finished:
            return
        self._sample(max(now, self.last), extend=now - self.last < MIN_TAIL_S)
        self.finished = True

    async def run_async(self, clock: Callable[[], float]) -> None:
        """Sample on time in an asyncio engine (cancelled when the run ends)."""
        while True:
            await asyncio.sleep(max(0.01, self.last + self.interval_s - clock()))
            self.poll(clock())

    def _sample(self, now: float, extend: bool = False) -> None:
        assert self._run is not None and self._live is not None
        run, topics = self._live()
        start_s, end_s = self.last - self.start, now - self.start
        data = self._run.sample(start_s, end_s, run, extend)
        for name, series in self._topics.items():
            if name in topics:
                series.sample(start_s, end_s, topics[name], extend)
        self.last = now
        if self.on_interval is not None and not extend:
            self.on_interval(data)

    def to_dict(self) -> dict[str, Any]:
        return {
            "interval_s": self.interval_s,
            "run": self._run.rows if self._run is not None else [],
            "topics": {name: s.rows for name, s in self._topics.items()},
        }


def engine_live(metrics: RunMetrics) -> Live:
    """Tallies of kbatch's engine: every counter is live in `RunMetrics`."""
    def live() -> tuple[Tally, dict[str, Tally]]:
        requests = (metrics.client_counts.requests if metrics.client_counts is not None
                    else len(metrics.requests))
        return (run_tally(metrics, requests),
                {name: topic_tally(t) for name, t in metrics.topics.items()})
    return live


class Series:
    """Merged or loaded intervals: plain data with the recorder's `to_dict`."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def to_dict(self) -> dict[str, Any]:
        return self.data


def merge_intervals(parts: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The shares' intervals, added index by index (they share a start instant)."""
    parts = [p for p in parts if p]
    if not parts:
        return None
    topics: dict[str, list[list[dict[str, Any]]]] = {}
    for part in parts:
        for name, rows in part.get("topics", {}).items():
            topics.setdefault(name, []).append(rows)
    return {
        "interval_s": parts[0]["interval_s"],
        "run": _merge_rows([p["run"] for p in parts], exact=True),
        "topics": {name: _merge_rows(lists, exact=False) for name, lists in topics.items()},
    }


def _merge_rows(lists: list[list[dict[str, Any]]], exact: bool) -> list[dict[str, Any]]:
    merged = []
    for index in range(max((len(rows) for rows in lists), default=0)):
        rows = [rows[index] for rows in lists if index < len(rows)]
        start = min(r["start_s"] for r in rows)
        end = max(r["end_s"] for r in rows)
        total = Tally(**{name: sum(r.get(name, 0) for r in rows) for name in ROW_COUNTERS})
        latency = LatencyHistogram()
        exact_rows = exact and all("latency_us" in r for r in rows)
        if exact_rows:
            for r in rows:
                latency.merge(LatencyHistogram.decode(r["latency_us"]))
        data = row(start, end, total, 0.0, latency, exact_rows)
        megabytes = sum(r["mb_per_s"] * (r["end_s"] - r["start_s"]) for r in rows)
        data["mb_per_s"] = round(megabytes / max(end - start, 1e-9), 3)
        if not exact_rows:
            data.update({k: max(r[k] for r in rows) for k in ("p50_ms", "p99_ms", "max_ms")})
            data["latency_count"] = sum(r.get("latency_count", 0) for r in rows)
            weighted = sum(r.get("mean_ms", 0.0) * r.get("latency_count", 0) for r in rows)
            data["mean_ms"] = round(weighted / data["latency_count"], 3) \
                if data["latency_count"] else 0.0
        data.update(_merge_consumer_fields(rows, exact_rows, max(end - start, 1e-9)))
        merged.append(data)
    return merged


def _merge_consumer_fields(rows: list[dict[str, Any]], exact: bool, seconds: float
                           ) -> dict[str, Any]:
    """The consumers' figures of the shares' rows (`--consume`, `measure.e2e`): counts
    add, the lag in seconds is the largest, end-to-end percentiles merge exactly from the
    encoded histograms (else the largest share's)."""
    if not any("consumed" in r for r in rows):
        return {}
    consumed = sum(r.get("consumed", 0) for r in rows)
    data: dict[str, Any] = {"consumed": consumed,
                            "consumed_per_s": round(consumed / seconds, 1),
                            "lag_messages": sum(r.get("lag_messages", 0) for r in rows),
                            "lag_s": max(r.get("lag_s", 0.0) for r in rows)}
    if exact and all("e2e_latency_us" in r for r in rows):
        e2e = LatencyHistogram()
        for r in rows:
            e2e.merge(LatencyHistogram.decode(r["e2e_latency_us"]))
        data.update({"e2e_p50_ms": e2e.percentile_ms(50) if e2e.count else 0.0,
                     "e2e_p99_ms": e2e.percentile_ms(99) if e2e.count else 0.0,
                     "e2e_max_ms": e2e.max_ms if e2e.count else 0.0,
                     "e2e_latency_us": e2e.encode()})
    else:
        data.update({k: max(r.get(k, 0.0) for r in rows)
                     for k in ("e2e_p50_ms", "e2e_p99_ms", "e2e_max_ms")})
    return data
