"""`--consume`: a run with consumers reading it, and the figures they give.

Wraps a run driver's `run` as `verify_read.VerifyingRun` does, so `produce`,
`compare-modes` and `sweep` all get it, and no driver needs to know: before the run the
topics are created (so consumers can be assigned to them) and their end offsets read;
consumer processes start and reach their partitions; the run goes on with them reading;
afterwards they drain (until every acknowledged message is read, or nothing new comes for
a while) and their records become `e2e_latency`, the `consumers` section and the
consumer fields of the `intervals` rows. Whatever goes wrong on the consumer side is a
line in `consumers.problems` and on screen; the producer's results are kept.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from producer_core.engine.core.ledger import Delivery
from producer_core.engine.transport.transport import ensure_topics
from producer_core.measure import e2e
from producer_core.measure.consumers import (
    Assignment,
    ConsumerPlan,
    ConsumerProcesses,
    consumer_properties,
    spread,
)
from producer_core.measure.e2e_notes import fetch_wait_note, isolation_note
from producer_core.measure.verify import idempotence_enabled, verify_document
from producer_core.measure.verify_read import end_offsets
from producer_core.security import redact
from producer_core.workload.workload import Workload

DRAIN_TIMEOUT_S = 60.0
"""Longest the consumers may read on after the run."""
QUIET_S = 5.0
"""Nothing new read this long after the run: the consumers have all there is."""
FELL_BEHIND_S = 2.0
"""Reading on this long after the run means the consumers did not keep up."""
CLOCK_NOTE = ("one host: consume and intended times on the same monotonic clock")


@dataclass(frozen=True)
class ConsumeOptions:
    """`--consumers`, `--consumer-config` and how long the consumers may drain."""

    consumers: int = 1
    config: tuple[tuple[str, str], ...] = ()
    drain_timeout_s: float = DRAIN_TIMEOUT_S
    quiet_s: float = QUIET_S


class LiveConsumers:
    """The run's progress callback with the consumers' live figures added to each
    interval row (`consumed` in it, `lag_messages` at its end); the exact figures replace
    them after the run. Other attributes pass through to the wrapped callback."""

    def __init__(self, inner: Any, processes: ConsumerProcesses) -> None:
        self._inner = inner
        self._processes = processes
        self._acknowledged = 0
        self._consumed = 0
        self.report_interval_s = getattr(inner, "report_interval_s", None)
        if getattr(inner, "on_interval", None) is None:  # callers test it for None
            self.on_interval = None  # type: ignore[method-assign, assignment]  # see above

    def __call__(self, progress: Any) -> None:
        if self._inner is not None:
            self._inner(progress)

    def on_interval(self, row: dict[str, Any]) -> None:
        consumed = self._processes.consumed()
        self._acknowledged += int(row.get("acknowledged", 0))
        row["consumed"] = consumed - self._consumed
        row["lag_messages"] = max(0, self._acknowledged - consumed)
        self._consumed = consumed
        self._inner.on_interval(row)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class ConsumingRun:
    """Wraps a run callable; see the module docstring. `say` prints a problem line as it
    happens (the CLI's console); `verify`: also report the read-back as `verify`."""

    def __init__(self, run: Callable[..., Any], options: ConsumeOptions,
                 say: Callable[[str], None] = print, verify: bool = False) -> None:
        self._run = run
        self.options = options
        self.say = say
        self.verify = verify

    def __call__(self, workload: Workload, settings: Any, mode: str, bootstrap: str,
                 on_progress: Any = None, **kwargs: Any) -> Any:
        problems: list[str] = []
        self._isolation: str | None = None
        self._user_config = redact(dict(self.options.config))
        processes, tmp = self._start(workload, settings, bootstrap, problems)
        deliveries: list[Delivery] = kwargs.pop("deliveries", None) or []
        live = LiveConsumers(on_progress, processes) if (
            processes is not None and on_progress is not None) else on_progress
        try:
            results = self._run(workload, settings, mode, bootstrap, live,
                                deliveries=deliveries, **kwargs)
        except BaseException:
            if processes is not None:
                processes.kill()
            if tmp is not None:
                tmp.cleanup()
            raise
        stop = kwargs.get("stop")
        stopped = not results.metrics.complete or (stop is not None and stop.is_set())
        try:
            self._measure(workload, settings, results, processes, deliveries, problems,
                          stopped)
        finally:
            if tmp is not None:
                tmp.cleanup()
        return results

    # ------------------------------------------------------------------ before the run
    def _start(self, workload: Workload, settings: Any, bootstrap: str,
               problems: list[str]) -> tuple[ConsumerProcesses | None, Any]:
        specs = workload.topic_specs()
        try:
            asyncio.run(ensure_topics(bootstrap, settings, specs))
            starts = end_offsets(bootstrap, {s.name: s.partitions for s in specs},
                                 settings.security.aiokafka_kwargs())
        except Exception as exc:  # noqa: BLE001 - the producer may still run; say why
            self._problem(problems, f"consumers not started: the topics or their offsets "
                                    f"could not be read ({type(exc).__name__}: {exc})")
            return None, None
        assignments = [Assignment(s.name, i, p, starts.get((s.name, p), 0))
                       for i, s in enumerate(specs) for p in range(s.partitions)]
        groups = spread(assignments, self.options.consumers)
        if self.options.consumers > len(groups):
            self._problem(problems, f"--consumers {self.options.consumers} is more than the "
                                    f"run's {len(assignments)} partitions: "
                                    f"{len(groups)} consumers read one partition each")
        props = consumer_properties(bootstrap, settings.security.librdkafka_properties(),
                                    dict(self.options.config),
                                    bool(settings.transactional_id))
        tmp = tempfile.TemporaryDirectory(prefix="kbatch-consumers-")
        plans = [ConsumerPlan(i, bootstrap, props, group, str(Path(tmp.name) / f"c{i}"))
                 for i, group in enumerate(groups)]
        processes = ConsumerProcesses(plans)
        self._isolation = props["isolation.level"]
        if not processes.start():
            self._problem(problems, "some consumers could not reach their partitions "
                                    "before the run; end-to-end figures cover what the "
                                    "others read (see the problems below)")
        return processes, tmp

    def _problem(self, problems: list[str], text: str) -> None:
        problems.append(text)
        self.say(f"Consumers: {text}.")

    # ------------------------------------------------------------------ after the run
    def _measure(self, workload: Workload, settings: Any, results: Any,
                 processes: ConsumerProcesses | None, deliveries: list[Delivery],
                 problems: list[str], stopped: bool = False) -> None:
        acked: dict[str, list[int]] = {}
        aborted: dict[str, list[int]] = {}
        for delivery in deliveries:
            (aborted if delivery.aborted else acked).setdefault(
                delivery.topic, []).extend(delivery.message_ids)
        # acks=0: nothing is acknowledged, what was sent is what there is to read
        expected = (sum(len(ids) for ids in acked.values())
                    + results.metrics.messages_sent_unacknowledged)
        if processes is None:
            results.consumers = self._section(problems, None)
            return
        if stopped:  # a stopped run ends now: no reading on
            self._problem(problems, "the run was stopped: the consumers stopped with it")
        complete = processes.drain(expected, 0.0 if stopped else self.options.drain_timeout_s,
                                   self.options.quiet_s)
        consumed, found, short = processes.finish()
        for text in found:
            if text not in problems:
                self._problem(problems, text)
        if short:
            self._problem(problems, f"{short:,} records too short to carry a message id "
                                    "were left out")
        if not complete:
            self._problem(problems, f"the consumers read {len(consumed):,} records of "
                                    f"{expected:,} written and then nothing new: they "
                                    "fell behind, could not read some partitions, or records "
                                    "were lost (see the read-back)")
        if results.run_start is None:
            self._problem(problems, "this run driver gives no start instant: no end-to-end "
                                    "latency (the read-back still holds)")
        transactional = bool(results.transactions)
        checks = e2e.read_back(workload, consumed, acked, aborted)
        readback = verify_document(checks, idempotence_enabled(results.to_dict()), complete,
                                   0.0, transactional)
        readback.pop("read_s")
        if self.verify:
            results.verify = {**readback, "read_s": 0.0, "by": "consumers"}
        section = self._section(problems, readback)
        section["records_read"] = len(consumed)
        if results.run_start is not None and len(consumed):
            self._latency(workload, results, consumed, section)
            self._explain(results)
        isolation = isolation_note(transactional, self._isolation)
        if isolation:
            self._problem(section["problems"], isolation)
        results.consumers = section

    def _explain(self, results: Any) -> None:
        """Name the fetch wait's share when it, not the producer, makes e2e long."""
        latency = results.metrics.latency
        if results.e2e is None or not latency.count or not results.e2e.count:
            return
        note = fetch_wait_note(latency.percentile_ms(50), results.e2e.percentile_ms(50),
                               dict(self.options.config))
        if note:
            results.warnings.append(note)

    def _latency(self, workload: Workload, results: Any, consumed: e2e.Consumed,
                 section: dict[str, Any]) -> None:
        lat = e2e.latencies(workload, consumed, results.run_start)
        results.e2e = e2e.histogram(lat.seconds)
        section["msgs_per_s"] = e2e.consume_rate(lat)
        section["measured_from_timestamp"] = lat.from_timestamp
        section["negative_latencies"] = e2e.negative_count(lat)
        section["topics"] = {name: e2e.summary(h) for name, h in
                             e2e.topic_histograms(workload, lat).items()}
        intervals = results.metrics.intervals
        rows = intervals.to_dict()["run"] if intervals is not None else []
        if rows:
            for row, figures in zip(rows, e2e.interval_figures(rows, lat, encode=True),
                                    strict=True):
                row.update(figures)
        else:
            section["intervals"] = _own_intervals(lat, results.duration_s)
        series = rows or section["intervals"]
        section["lag"] = {
            "max_messages": max((r.get("lag_messages", 0) for r in series), default=0),
            "max_s": max((r["lag_s"] for r in series), default=0.0),
        }
        drained = float(lat.consume_rel.max()) - results.duration_s if len(lat.consume_rel) else 0.0
        section["drain_s"] = round(max(0.0, drained), 3)
        if drained > FELL_BEHIND_S:
            lag = section["lag"]
            self._problem(section["problems"],
                          f"the consumers fell behind: they needed {drained:,.1f} s after the "
                          f"run to catch up (lag up to {lag['max_messages']:,} messages, "
                          f"{lag['max_s']:,.1f} s); end-to-end latency then measures the "
                          "consumers' backlog, not the producer")

    def _section(self, problems: list[str], readback: Mapping[str, Any] | None
                 ) -> dict[str, Any]:
        return {
            "consumers": self.options.consumers,
            "isolation_level": self._isolation,
            "config": self._user_config,
            "clock": CLOCK_NOTE,
            "readback": dict(readback) if readback is not None else None,
            "problems": list(problems),
        }


def _own_intervals(lat: e2e.Latencies, duration_s: float, step_s: float = 1.0
                   ) -> list[dict[str, Any]]:
    """Consumer rows on a 1 s grid when the run driver keeps no intervals (kafka-java):
    without per-interval acknowledgements, the lag is in seconds only."""
    count = max(1, int(np.ceil(duration_s / step_s)))
    rows = [{"start_s": round(i * step_s, 3), "end_s": round(min((i + 1) * step_s,
                                                                  duration_s), 3)}
            for i in range(count)]
    figures = e2e.interval_figures(rows, lat, encode=False)
    for row, extra in zip(rows, figures, strict=True):
        extra.pop("lag_messages")
        row.update(extra)
    return rows
