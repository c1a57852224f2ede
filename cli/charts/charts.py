"""PNG charts of saved results (matplotlib, Agg backend: no display needed).

Figures are built with matplotlib's object API (``Figure``), not pyplot, so nothing global
is touched and a long-lived process does not accumulate open figures.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402  (after selecting the backend)
from matplotlib.ticker import FixedLocator, NullLocator  # noqa: E402

from producer_core.config import MODES  # noqa: E402
from producer_core.engine.modes import base_mode  # noqa: E402
from producer_core.results.histogram import LatencyHistogram  # noqa: E402

__all__ = ["ack_vs_e2e_chart", "latency_chart", "mode_color", "over_time_chart", "percentile_curve",
           "requests_chart", "rps_chart"]

_STYLES = ("-", "--", ":", "-.")


def mode_color(mode: str) -> str:
    """One colour per mode in every chart: the mode's place in the mode registry (every
    release of a client, ``kafka-java@3.9.1``, in its mode's colour; `_styles` dashes)."""
    mode = base_mode(mode)
    return f"C{MODES.index(mode) % 10}" if mode in MODES else "C9"


def _styles(modes: Sequence[str]) -> list[tuple[str, str]]:
    """(colour, line style) per series: the mode's colour; repeats of a mode, and other
    releases of its client, dashed."""
    seen: dict[str, int] = {}
    styles = []
    for mode in modes:
        index = seen.get(base_mode(mode), 0)
        seen[base_mode(mode)] = index + 1
        styles.append((mode_color(mode), _STYLES[index % len(_STYLES)]))
    return styles

_TICKS = [(1, "0%"), (10, "90%"), (100, "99%"), (1_000, "99.9%"), (10_000, "99.99%"),
          (100_000, "99.999%"), (1_000_000, "99.9999%")]


def percentile_curve(histogram: LatencyHistogram,
                     points_per_decade: int = 25) -> tuple[np.ndarray, np.ndarray]:
    """(x, latency ms) with x = 1/(1-p), from p = 0 up to the last recorded value.

    The curve stops at 1/(1-p) = count, the finest percentile the samples resolve; its
    last point is the maximum.
    """
    count = histogram.count
    if count == 0:
        return np.array([]), np.array([])
    decades = math.log10(max(count, 10))
    x = 10 ** (np.arange(0, math.floor(decades * points_per_decade) + 1) / points_per_decade)
    x = np.append(x[x < count], count)
    percentiles = np.minimum(100.0 * (1.0 - 1.0 / x), 100.0)
    values = np.array([histogram.percentile_ms(float(p)) for p in percentiles])
    values[-1] = histogram.max_ms
    return x, values


def latency_chart(series: Mapping[str, LatencyHistogram], path: Path,
                  title: str = "Ack latency by percentile (intended send → acknowledgement)",
                  modes: Sequence[str] | None = None) -> Path:
    """Percentile distribution per label on HdrHistogram's log 1/(1-p) axis; `modes`
    (one per label) colours each curve by its mode."""
    fig = Figure(figsize=(9, 5), dpi=110)
    ax = fig.add_subplot()
    widest = 10.0
    styles = _styles(modes) if modes is not None else [
        (f"C{i % 10}", "-") for i in range(len(series))]
    for (label, histogram), (color, style) in zip(series.items(), styles, strict=True):
        x, y = percentile_curve(histogram)
        if x.size:
            ax.plot(x, y, label=f"{label} (n={histogram.count:,})", linewidth=1.8,
                    color=color, linestyle=style)
            widest = max(widest, float(x[-1]))
    ax.set_xscale("log")
    ticks = [(v, t) for v, t in _TICKS if v <= widest * 1.01]
    ax.xaxis.set_major_locator(FixedLocator([v for v, _ in ticks]))
    ax.set_xticklabels([t for _, t in ticks])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlim(1, widest * 1.05)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("percentile")
    ax.set_ylabel("latency (ms)")
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.35)
    if series:
        ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(path, format="png")
    return path


def _bars(ax, labels: Sequence[str], values: Sequence[float], title: str, digits: int,
          colors: Sequence[str]) -> None:
    bars = ax.bar(labels, values, color=list(colors))
    ax.bar_label(bars, labels=[f"{v:,.{digits}f}" for v in values], padding=2)
    ax.set_title(title)
    ax.set_ylim(0, max([*values, 1]) * 1.15)
    ax.grid(True, axis="y", alpha=0.35)


def requests_chart(labels: Sequence[str], requests: Sequence[float],
                   msgs_per_req: Sequence[float], path: Path,
                   modes: Sequence[str] | None = None) -> Path:
    """ProduceRequests sent and messages per request, one bar per label (mode colours)."""
    fig = Figure(figsize=(9, 4.5), dpi=110)
    left, right = fig.subplots(1, 2)
    colors = [mode_color(m) for m in modes] if modes is not None else [
        f"C{i % 10}" for i in range(len(labels))]
    _bars(left, labels, requests, "ProduceRequests sent", 0, colors)
    _bars(right, labels, msgs_per_req, "messages per request", 1, colors)
    fig.tight_layout()
    fig.savefig(path, format="png")
    return path


def _bin_width(span_s: float) -> float:
    """1 s bins (true requests per second) unless the run is too short or too long."""
    if span_s < 5:
        return 0.25 if span_s <= 2.5 else 0.5
    for width in (1.0, 2.0, 5.0, 10.0, 30.0):
        if span_s / width <= 60:
            return width
    return 60.0


def rps_chart(series: Mapping[str, np.ndarray], path: Path,
              modes: Sequence[str] | None = None) -> Path:
    """Requests per second over the run (send times in s from each run's start), from
    request logs: for results without `intervals` (see `over_time_chart`)."""
    fig = Figure(figsize=(9, 4.5), dpi=110)
    ax = fig.add_subplot()
    styles = _styles(modes) if modes is not None else [
        (f"C{i % 10}", "-") for i in range(len(series))]
    span = max((float(t.max()) for t in series.values() if t.size), default=1.0)
    width = _bin_width(span)
    # Whole bins; a tail shorter than half a bin joins the last one, and every rate is
    # divided by the time its bin really covers (the run's end cuts the last one short).
    edges = list(np.arange(0.0, span, width)[: max(1, int(span // width)) + 1])
    if len(edges) == 1 or span - edges[-1] > width / 2:
        edges.append(max(span, edges[-1] + width * 0.1))
    else:
        edges[-1] = span
    bounds = np.array(edges)
    for (label, times), (color, style) in zip(series.items(), styles, strict=True):
        counts, _ = np.histogram(times, bins=bounds)
        rates = counts / np.diff(bounds)
        ax.step(bounds, np.append(rates, rates[-1]), where="post", label=label, linewidth=1.6,
                color=color, linestyle=style)
    ax.set_xlabel(f"seconds since the run's start ({width:g} s bins)")
    ax.set_ylabel("ProduceRequests per second")
    ax.set_title("Requests per second")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.35)
    if series:
        ax.legend(loc="upper right")
    fig.tight_layout()
    fig.savefig(path, format="png")
    return path


OVER_TIME_PANELS = (
    ("msgs_per_s", "messages acknowledged per second"),
    ("mb_per_s", "MB/s (keys + values acknowledged)"),
    ("requests_per_s", "ProduceRequests per second"),
    ("p99_ms", "ack latency p99 (solid) and p50 (dotted), ms"),
)


def over_time_chart(series: Mapping[str, tuple[str, list[dict]]], path: Path) -> Path:
    """A run over time from its `intervals`: rate, MB/s, requests/s and latency, one line
    per label (`series`: label -> (mode, interval rows)), coloured by mode."""
    panels = [(key, title) for key, title in OVER_TIME_PANELS
              if any(row.get(key) for _, rows in series.values() for row in rows)]
    panels = panels or list(OVER_TIME_PANELS[:1])  # an empty panel says nothing: leave it out
    fig = Figure(figsize=(10, 2.25 * len(panels) + 0.5), dpi=110)
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    styles = _styles([mode for mode, _ in series.values()])
    for ax, (key, title) in zip(axes, panels, strict=True):
        for (label, (_, rows)), (color, style) in zip(series.items(), styles, strict=True):
            if not rows:
                continue
            edges = [rows[0]["start_s"], *(r["end_s"] for r in rows)]
            values = [r[key] for r in rows]
            ax.step(edges, [*values, values[-1]], where="post", color=color,
                    linestyle=style, linewidth=1.6, label=label)
            if key == "p99_ms":
                p50 = [r["p50_ms"] for r in rows]
                ax.step(edges, [*p50, p50[-1]], where="post", color=color, linestyle=":",
                        linewidth=1.2)
        ax.set_title(title, fontsize=10)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.35)
    ends = [row["end_s"] for _, rows in series.values() for row in rows]
    if ends:  # the axis spans the run, not matplotlib's padded guess
        axes[-1].set_xlim(min(r["start_s"] for _, rows in series.values() for r in rows),
                          max(ends))
    axes[-1].set_xlabel("seconds since the run's start")
    if series:
        axes[0].legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, format="png")
    return path


def ack_vs_e2e_chart(series: Mapping[str, tuple[str, LatencyHistogram, LatencyHistogram]],
                     path: Path) -> Path:
    """Per label (`series`: label -> (mode, ack latency, end-to-end latency)): the ack
    latency's percentile curve (solid) and the end-to-end latency's (dashed) in the mode's
    colour, so what the consumer waits beyond the acknowledgement is the gap."""
    fig = Figure(figsize=(9, 5), dpi=110)
    ax = fig.add_subplot()
    widest = 10.0
    for index, (label, (mode, ack, e2e)) in enumerate(series.items()):
        color = mode_color(mode) if mode in MODES else f"C{index % 10}"  # sweep cells
        for histogram, style, kind in ((ack, "-", "ack"), (e2e, "--", "end-to-end")):
            x, y = percentile_curve(histogram)
            if x.size:
                ax.plot(x, y, label=f"{label} {kind} (n={histogram.count:,})", linewidth=1.8,
                        color=color, linestyle=style)
                widest = max(widest, float(x[-1]))
    ax.set_xscale("log")
    ticks = [(v, t) for v, t in _TICKS if v <= widest * 1.01]
    ax.xaxis.set_major_locator(FixedLocator([v for v, _ in ticks]))
    ax.set_xticklabels([t for _, t in ticks])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlim(1, widest * 1.05)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("percentile")
    ax.set_ylabel("latency (ms)")
    ax.set_title("Ack latency (solid) and end-to-end latency (dashed) by percentile")
    ax.grid(True, which="major", alpha=0.35)
    if series:
        ax.legend(loc="upper left", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, format="png")
    return path
