"""Merging the Results of the shares of a distributed run, exactly.

A share's Results travel from its Spark task to the driver as a payload of plain Python
values (`to_payload`): counters, the encoded HdrHistograms (run-wide and per topic), the
per-request log as columns, and the policy's statistics. `merge_results` adds them up:

- counters add (requests, records, bytes, messages, failures by reason, per broker, per
  topic), so `requests_sent` of the merge is the sum of the shares';
- histograms merge from their encoded form, exactly (integer counts per bucket), so the
  merged percentiles are those of the union of every share's samples;
- request logs concatenate (send times are relative to each share's start, which is the
  common start instant), sorted by send time;
- the duration is the longest share's (they start together), and the rates of the JSON
  are recomputed from the merged counters and that duration;
- stalls are found again in the merged request log (a span when no share got an
  acknowledgement while requests waited), and replace the shares' own stall warnings: one
  share's silence while the others were answered is not the run's stall;
- a policy's own statistics (mode broker's collector, mode java's reasons, ...): counts
  add, `max` is the largest, `mean` is weighted by the shares' `sends`; percentiles of
  those per-send figures cannot be merged from summaries, so the merged value is the
  largest share's (an upper bound); a value that is neither (an AIMD controller's final
  window) is kept if the shares agree, else listed per share, in share order.

Nothing here imports pyspark: it is unit-tested on synthetic Results.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from producer_core.results.histogram import LatencyHistogram
from producer_core.results.intervals import Series, merge_intervals
from producer_core.results.metric_catalog import Merge, recorded, topic_recorded
from producer_core.results.metrics import (
    REQUEST_LOG_FIELDS,
    ClientCounts,
    RequestRecord,
    Results,
    RunMetrics,
    Section,
    TopicMetrics,
)
from producer_core.results.stalls import find_stalls, stall_warning

# What each figure's merge is comes from producer_core.results.metric_catalog.
COUNTERS = recorded(Merge.SUM)
MAXIMA = recorded(Merge.MAX)
FLAGS = recorded(Merge.ALL)
HISTOGRAMS = recorded(Merge.HISTOGRAM)
TOPIC_COUNTERS = topic_recorded(Merge.SUM)
TOPIC_HISTOGRAMS = topic_recorded(Merge.HISTOGRAM)
_SUMMARY_KEY = re.compile(r"(?:^|_)(mean|max|min|p\d+)(?:_|$)")
_SUMMARY_DICT_KEY = re.compile(r"(?:mean|max|min|p\d+)(?:_ms|_s|_us)?")
_CONSTANT_KEYS = {"config", "version", "statistics_interval_ms"}


# ------------------------------------------------------------------------- payloads


def to_payload(results: Results) -> dict[str, Any]:
    """Results as plain, picklable values that `from_payload` turns back exactly."""
    m = results.metrics
    return {
        "mode": results.mode,
        "workload": results.workload,
        "settings": results.settings,
        "bootstrap": results.bootstrap,
        "broker": results.broker,
        "duration_s": results.duration_s,
        "warnings": list(results.warnings),
        "started_at": results.started_at,
        "messages_intended": results.messages_intended,
        "target_msgs_per_s": results.target_msgs_per_s,
        "policy": asdict(results.policy) if results.policy is not None else None,
        "transactions": results.transactions,
        "client": asdict(results.client) if results.client is not None else None,
        "verify": results.verify,
        "runner": results.runner,
        "e2e": results.e2e.encode() if results.e2e is not None else None,
        "consumers": results.consumers,
        "counters": {name: getattr(m, name) for name in COUNTERS + MAXIMA + FLAGS},
        "failed_reasons": dict(m.failed_reasons),
        "unknown_reasons": dict(m.unknown_reasons),
        "idempotence": dict(m.idempotence),
        "discard_reasons": dict(m.discard_reasons),
        "requests_by_broker": dict(m.requests_by_broker),
        "histograms": {name: getattr(m, name).encode() for name in HISTOGRAMS},
        "requests": {name: [getattr(r, name) for r in m.requests] for name in REQUEST_LOG_FIELDS},
        "client_counts": asdict(m.client_counts) if m.client_counts is not None else None,
        "intervals": m.intervals.to_dict() if m.intervals is not None else None,
        "topics": {
            name: {**{c: getattr(t, c) for c in TOPIC_COUNTERS},
                   **{h: getattr(t, h).encode() for h in TOPIC_HISTOGRAMS},
                   "discard_reasons": dict(t.discard_reasons)}
            for name, t in m.topics.items()
        },
    }


def from_payload(payload: dict[str, Any]) -> Results:
    """The Results a payload was made from (histograms decoded, request log rebuilt)."""
    m = RunMetrics()
    for name, value in payload["counters"].items():
        setattr(m, name, value)
    if payload.get("intervals"):
        m.intervals = Series(payload["intervals"])
    m.failed_reasons.update(payload["failed_reasons"])
    m.unknown_reasons.update(payload["unknown_reasons"])
    m.idempotence = dict(payload["idempotence"])
    m.discard_reasons.update(payload["discard_reasons"])
    m.requests_by_broker.update({int(k): v for k, v in payload["requests_by_broker"].items()})
    for name, blob in payload["histograms"].items():
        setattr(m, name, LatencyHistogram.decode(blob))
    columns = payload["requests"]
    m.requests = [RequestRecord(**dict(zip(REQUEST_LOG_FIELDS, row, strict=True)))
                  for row in zip(*(columns[name] for name in REQUEST_LOG_FIELDS), strict=True)]
    if payload["client_counts"] is not None:
        m.client_counts = ClientCounts(**payload["client_counts"])
    for name, data in payload["topics"].items():
        topic = TopicMetrics(**{c: data[c] for c in TOPIC_COUNTERS})
        topic.discard_reasons.update(data["discard_reasons"])
        for h in TOPIC_HISTOGRAMS:
            setattr(topic, h, LatencyHistogram.decode(data[h]))
        m.topics[name] = topic
    return Results(
        mode=payload["mode"], workload=payload["workload"], settings=payload["settings"],
        bootstrap=payload["bootstrap"], broker=payload["broker"],
        duration_s=payload["duration_s"], metrics=m, warnings=list(payload["warnings"]),
        started_at=payload["started_at"], messages_intended=payload["messages_intended"],
        target_msgs_per_s=payload["target_msgs_per_s"],
        policy=Section(**payload["policy"]) if payload["policy"] is not None else None,
        transactions=payload["transactions"],
        client=Section(**payload["client"]) if payload["client"] is not None else None,
        verify=payload["verify"], runner=payload["runner"],
        e2e=LatencyHistogram.decode(payload["e2e"]) if payload.get("e2e") else None,
        consumers=payload.get("consumers"),
    )


# ------------------------------------------------------------------------- merging


def merge_results(shares: Sequence[Results], workload: dict[str, Any] | None = None) -> Results:
    """One Results holding what every share measured (see the module docstring).

    `workload` is the whole run's workload (the shares' carry their share's rates).
    """
    if not shares:
        raise ValueError("nothing to merge")
    m = RunMetrics()
    # each share is its own producer: its id differs; whether idempotence was on does not
    m.idempotence = {"enabled": shares[0].metrics.idempotence.get("enabled", False),
                     "epoch_bumps": sum(s.metrics.idempotence.get("epoch_bumps", 0)
                                        for s in shares)}
    for share in shares:
        s = share.metrics
        m.requests.extend(s.requests)
        m.requests_by_broker.update(s.requests_by_broker)
        for name in COUNTERS:
            setattr(m, name, getattr(m, name) + getattr(s, name))
        for name in MAXIMA:
            setattr(m, name, max(getattr(m, name), getattr(s, name)))
        for name in FLAGS:
            setattr(m, name, getattr(m, name) and getattr(s, name))
        m.failed_reasons.update(s.failed_reasons)
        m.unknown_reasons.update(s.unknown_reasons)
        m.discard_reasons.update(s.discard_reasons)
        for name in HISTOGRAMS:
            getattr(m, name).merge(getattr(s, name))
        for name, topic in s.topics.items():
            merged = m.topics.setdefault(name, TopicMetrics())
            for counter in TOPIC_COUNTERS:
                setattr(merged, counter, getattr(merged, counter) + getattr(topic, counter))
            for histogram in TOPIC_HISTOGRAMS:
                getattr(merged, histogram).merge(getattr(topic, histogram))
            merged.discard_reasons.update(topic.discard_reasons)
    m.requests.sort(key=lambda r: r.send_time_s)  # stable: a share's own order is kept
    intervals = merge_intervals([s.metrics.intervals.to_dict() for s in shares
                                 if s.metrics.intervals is not None])
    m.intervals = Series(intervals) if intervals is not None else None
    m.client_counts = _merge_client_counts([s.metrics.client_counts for s in shares])
    first = shares[0]
    duration_s = max(s.duration_s for s in shares)
    stalls = find_stalls(m.requests, intervals.get("run", []) if intervals else [],
                         duration_s, answered=str(first.settings.get("acks", "all")) != "0")
    warnings = [w for w in merge_warnings([s.warnings for s in shares])
                if not _is_stall_warning(w)]
    warning = stall_warning(stalls)
    targets = [s.target_msgs_per_s for s in shares]
    started = [s.started_at for s in shares if s.started_at]
    return Results(
        mode=first.mode,
        workload=dict(workload) if workload is not None else first.workload,
        settings=first.settings,
        bootstrap=first.bootstrap,
        broker=first.broker,
        duration_s=duration_s,
        metrics=m,
        warnings=[*warnings, warning] if warning else warnings,
        started_at=min(started) if started else None,
        messages_intended=sum(s.messages_intended if s.messages_intended is not None
                              else s.metrics.messages_generated for s in shares),
        target_msgs_per_s=(round(sum(targets), 3)  # type: ignore[arg-type]  # none is None:
                           if all(t is not None for t in targets) else None),
        policy=_merge_section([s.policy for s in shares]),
        transactions=merge_stats([s.transactions for s in shares], key="transactions"),
        client=_merge_section([s.client for s in shares]),
        e2e=_merge_e2e([s.e2e for s in shares]),
        consumers=merge_stats([s.consumers for s in shares], key="consumers"),
        broker_cost=None,  # Merge.NOT_MERGED: measured around the whole run (measure/)
        stalls=stalls,
    )


def _is_stall_warning(text: str) -> bool:
    """A share's stall warning, as `stall_warning` words it (alone, or "Share N of M: ...",
    `merge_warnings`)."""
    return text.startswith("stall: ") or re.match(r"Share \d+ of \d+: stall: ", text) is not None


def _merge_e2e(histograms: Sequence[LatencyHistogram | None]) -> LatencyHistogram | None:
    """End-to-end latency of the shares' consumers, merged exactly (None: none had any)."""
    present = [h for h in histograms if h is not None]
    if not present:
        return None
    merged = LatencyHistogram()
    for histogram in present:
        merged.merge(histogram)
    return merged


def _merge_section(sections: Sequence[Section | None]) -> Section | None:
    """The shares' sections of one name (one mode, one client) merged by `merge_stats`."""
    key = next((s.key for s in sections if s is not None), None)
    if key is None:
        return None
    values = merge_stats([s.values if s is not None and s.key == key else None
                          for s in sections], key=key)
    return Section(key, values) if values else None


def merge_payloads(payloads: Sequence[dict[str, Any]],
                   workload: dict[str, Any] | None = None) -> Results:
    return merge_results([from_payload(p) for p in payloads], workload)


def _merge_client_counts(counts: list[ClientCounts | None]) -> ClientCounts | None:
    """librdkafka's totals: requests and batches add; the batch-size median is the
    batch-weighted mean of the shares' medians (librdkafka's own is windowed, approximate)."""
    known = [c for c in counts if c is not None]
    if not known:
        return None
    batches = sum(c.batches for c in known)
    p50 = (sum(c.batch_bytes_p50 * c.batches for c in known) / batches) if batches else 0.0
    return ClientCounts(requests=sum(c.requests for c in known), batches=batches,
                        batch_bytes_p50=p50,
                        batch_bytes_max=max(c.batch_bytes_max for c in known))


def merge_warnings(per_share: Sequence[Sequence[str]]) -> list[str]:
    """Warnings every share gave once; the others prefixed with their share."""
    if not per_share:
        return []
    common = set(per_share[0]).intersection(*map(set, per_share[1:]))
    merged: list[str] = []
    for index, warnings in enumerate(per_share):
        for warning in warnings:
            if warning in common:
                if warning not in merged:
                    merged.append(warning)
            elif len(per_share) > 1:
                merged.append(f"Share {index} of {len(per_share)}: {warning}")
            else:
                merged.append(warning)
    return merged


def merge_stats(values: Sequence[Any], weights: Sequence[float] | None = None,
                key: str = "", in_summary: bool = False) -> Any:
    """Merge the shares' policy statistics (nested dicts), see the module docstring.

    Integers are counts and add, except in a summary (a dict whose keys are all like
    `mean`, `p50`, `max_ms`). A value of a summary, or a fractional number named like one
    (`rtt_p50_ms`, a window's `mean`), merges as such: `mean` weighted by the shares'
    `sends`, `min` and `max` as such, a percentile as the largest share's. Any other value
    is kept if every share has the same, else the shares' values are listed in share order
    (lists, such as a window's change points, are concatenated).
    """
    present = [v for v in values if v is not None]
    if not present:
        return None
    if weights is None or len(weights) != len(values):
        weights = [1.0] * len(values)
    summary = _SUMMARY_KEY.search(key)
    numbers = all(_is_number(v) for v in present)
    if numbers and summary and (in_summary or not all(_is_count(v) for v in present)):
        return _merge_summary_value(summary.group(1), values, weights)
    if key in _CONSTANT_KEYS:
        return present[0]
    if all(isinstance(v, dict) for v in present):
        sends = [v.get("sends") if isinstance(v, dict) else None for v in values]
        if all(_is_count(s) for s in sends):
            # per-send summaries weigh by sends (each a count: checked above)
            weights = [float(s) for s in sends]  # type: ignore[arg-type]  # see above
        keys: list[str] = []
        for v in present:
            keys.extend(k for k in v if k not in keys)
        summary_dict = all(_SUMMARY_DICT_KEY.fullmatch(k) for k in keys)
        return {k: merge_stats([v.get(k) if isinstance(v, dict) else None for v in values],
                               weights, k, summary_dict) for k in keys}
    if all(_is_count(v) for v in present):
        return sum(present)
    if all(v == present[0] for v in present[1:]):
        return present[0]
    if all(isinstance(v, list) for v in present):
        return [item for v in present for item in v]
    return list(present)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _merge_summary_value(kind: str, column: Sequence[Any], weights: Sequence[float]) -> Any:
    pairs = [(v, w) for v, w in zip(column, weights, strict=True) if _is_number(v)]
    if not pairs:
        return None
    numbers = [v for v, _ in pairs]
    if kind == "mean":
        total = sum(w for _, w in pairs)
        if total <= 0:
            return round(sum(numbers) / len(numbers), 3)
        return round(sum(v * w for v, w in pairs) / total, 3)
    if kind == "min":
        return min(numbers)
    return max(numbers)  # max, and percentiles: the largest share's (an upper bound)


def share_summary(results: Results) -> dict[str, Any]:
    """A share's headline figures, for the merged JSON's `runner.shares`."""
    m = results.metrics
    return {
        "requests_sent": results.requests_sent,
        "records_sent": m.records_sent,
        "messages_sent": m.messages_generated,
        "acknowledged": m.messages_acked,
        "failed": m.messages_failed,
        "duration_s": round(results.duration_s, 6),
        "achieved_msgs_per_s": round(results.achieved_rate, 1),
        "latency_p99_ms": round(m.latency.percentile_ms(99), 3) if m.latency.count else 0.0,
    }

