"""The dashboard's `/metrics`: a running command in Prometheus' text exposition format
(version 0.0.4), so a soak run can be scraped and graphed in Grafana.

Pure: a dashboard snapshot in, the text out. Per run (labels `run` and `mode`): messages
generated / acknowledged / failed and ProduceRequests (counters, from the live progress,
else the sum of the interval rows), the ack latency quantiles so far (exact: the intervals'
HdrHistograms merged), generator lag p99, and the last interval's every other numeric
figure as `kbatch_interval_<key>`: whatever the intervals carry (end-to-end latency,
consumer lag, broker cost) is exported without a change here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from cli.dashboard.state import LiveRun, Snapshot

__all__ = ["CONTENT_TYPE", "prometheus_text"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
QUANTILES = (0.5, 0.95, 0.99, 0.999, 1.0)
_SHOWN_ELSEWHERE = {"start_s", "end_s", "acknowledged", "failed", "requests", "generated",
                    "latency_us"}
_NAME_CHARS = re.compile(r"[^a-zA-Z0-9_]")


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")


def _labels(run: LiveRun, **extra: str) -> str:
    pairs = {"run": run.label, "mode": run.mode, **extra}
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in pairs.items()) + "}"


def _number(value: float) -> str:
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


class _Families:
    """Samples grouped by metric family, each family written once with HELP and TYPE."""

    def __init__(self) -> None:
        self.families: dict[str, tuple[str, str, list[str]]] = {}

    def add(self, name: str, kind: str, help_text: str, labels: str, value: float) -> None:
        family = self.families.setdefault(name, (kind, help_text, []))
        family[2].append(f"{name}{labels} {_number(value)}")

    def text(self) -> str:
        lines = []
        for name, (kind, help_text, samples) in self.families.items():
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", *samples]
        return "\n".join(lines) + "\n"


def _latency_quantiles(rows: Iterable[dict[str, Any]]) -> dict[float, float]:
    from producer_core.results.results_io import merge_encoded

    histogram = merge_encoded(r["latency_us"] for r in rows if r.get("latency_us"))
    if not histogram.count:
        return {}
    return {q: (histogram.max_ms if q == 1.0 else histogram.percentile_ms(q * 100)) / 1000.0
            for q in QUANTILES}


def _extra_figures(row: dict[str, Any]) -> Iterable[tuple[str, float]]:
    for key, value in row.items():
        if key in _SHOWN_ELSEWHERE:
            continue
        if isinstance(value, bool):
            continue
        if isinstance(value, int | float):
            yield key, float(value)
        elif isinstance(value, dict):
            for inner, number in value.items():
                if isinstance(number, int | float) and not isinstance(number, bool):
                    yield f"{key}_{inner}", float(number)


def prometheus_text(snapshot: Snapshot) -> str:
    """The exposition text for this snapshot."""
    out = _Families()
    out.add("kbatch_up", "gauge", "1 while the kbatch command runs; 0 once it has finished.",
            "", 0 if snapshot.finished else 1)
    out.add("kbatch_elapsed_seconds", "gauge", "Seconds since the dashboard started.", "",
            snapshot.elapsed_s)
    out.add("kbatch_warnings_total", "counter", "Warnings the command has raised so far.", "",
            len(snapshot.warnings))
    for run in snapshot.runs:
        labels = _labels(run)
        totals = run.totals()
        out.add("kbatch_messages_generated_total", "counter",
                "Messages the workload generator produced.", labels, totals["generated"])
        out.add("kbatch_messages_acknowledged_total", "counter",
                "Messages the brokers acknowledged.", labels, totals["acknowledged"])
        out.add("kbatch_messages_failed_total", "counter",
                "Messages that failed (not written).", labels, totals["failed"])
        out.add("kbatch_requests_total", "counter", "ProduceRequests written to the wire.",
                labels, totals["requests"])
        out.add("kbatch_run_active", "gauge", "1 for the run in progress, else 0.", labels,
                0 if run.done else 1)
        for quantile, seconds in _latency_quantiles(run.rows).items():
            out.add("kbatch_ack_latency_seconds", "gauge",
                    "Ack latency (intended send to acknowledgement) so far, by quantile "
                    "(1 = the maximum), from the intervals' HdrHistograms.",
                    _labels(run, quantile=str(quantile)), seconds)
        lag = (run.progress or {}).get("generator_lag_p99_ms")
        if lag is not None:
            out.add("kbatch_generator_lag_p99_seconds", "gauge",
                    "How late the generator created messages against the rate schedule, p99.",
                    labels, lag / 1000.0)
        if run.rows:
            for key, value in _extra_figures(run.rows[-1]):
                name = "kbatch_interval_" + _NAME_CHARS.sub("_", key)
                out.add(name, "gauge", f"The last interval's {key} (results' intervals).",
                        labels, value)
    if snapshot.sweep is not None:
        sweep = snapshot.sweep
        out.add("kbatch_sweep_units_done", "gauge", "Sweep runs (cell x repeat) finished.",
                "", sweep.done)
        out.add("kbatch_sweep_units_total", "gauge", "Sweep runs (cell x repeat) planned.",
                "", sweep.total)
        if sweep.eta_s is not None:
            out.add("kbatch_sweep_eta_seconds", "gauge", "Estimated seconds left.", "",
                    sweep.eta_s)
    return out.text()
