"""Interactive (Plotly) charts of results: the HTML report's and the live dashboard's.

Pure: loaded documents or live interval rows in, `plotly.graph_objects.Figure` out. The
over-time panels are found in the data, not listed here: every numeric key of the
interval rows is a series (a nested object's numbers too, as `outer.inner`), so figures
that other parts of kbatch add to the intervals (end-to-end latency, consumer lag, broker
cost) are drawn without a change here, and a series no run carries is not drawn. Keys
named like `<what>_p99_ms` share one latency panel per `<what>`. Titles and units come
from the metric catalog where it declares the key, else from the key's own suffix.

Colours are the PNG charts' (cli/charts/charts.py `mode_color`): one per mode, repeats dashed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import plotly.graph_objects as go
from matplotlib.colors import to_hex

from cli.charts.charts import mode_color, percentile_curve
from producer_core.engine.modes import base_mode
from producer_core.results.histogram import LatencyHistogram
from producer_core.results.intervals import ROW_COUNTERS
from producer_core.results.metric_catalog import METRICS

__all__ = ["Line", "bars_figure", "frontier_figure", "mode_hex", "over_time_figures",
           "over_time_panels", "percentile_figure"]

_DASHES = ("solid", "dash", "dot", "dashdot")
_NOT_SERIES = {"start_s", "end_s", "latency_count", *ROW_COUNTERS}
"""Interval keys that are not drawn: the bounds, and per-interval counts whose rates are."""

_KNOWN_PANELS: dict[str, tuple[str, str]] = {
    "requests_per_s": ("ProduceRequests per second", "requests/s"),
    "msgs_per_req": ("Messages per request", "messages/request"),
    "latency": ("Ack latency, ms", "ms"),
    "msgs_per_s": ("Messages acknowledged per second", "messages/s"),
    "mb_per_s": ("MB/s acknowledged (keys + values)", "MB/s"),
}
"""The panels of today's interval rows, in the report's order; others follow."""

_LATENCY_KEY = re.compile(r"^(?:(?P<what>.+?)_)?(?P<stat>p\d+|max|min|mean)_ms$")
_STAT_DASH = {"p50": "dot", "max": "dash"}
_DASH_WORDS = {"dot": "dotted", "dash": "dashed", "dashdot": "dash-dotted"}
_UNIT_SUFFIXES = (("_per_s", "/s"), ("_ms", "ms"), ("_s", "s"), ("_bytes", "bytes"),
                  ("_pct", "%"), ("_percent", "%"), ("_ratio", ""))
_TICKS = [(1, "0%"), (10, "90%"), (100, "99%"), (1_000, "99.9%"), (10_000, "99.99%"),
          (100_000, "99.999%"), (1_000_000, "99.9999%"), (10_000_000, "99.99999%")]
_AXIS = dict(showline=True, linecolor="#bbb", gridcolor="#ebf0f8", zeroline=False,
             automargin=True, ticks="")
"""Axes styled here, not by a named template: applying one deep-copies it for every figure
(most of a live redraw's time)."""
_FONT = dict(family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif", size=12)


def mode_hex(mode: str) -> str:
    """The PNG charts' colour of a mode, as #rrggbb."""
    return to_hex(mode_color(mode))


@dataclass
class Line:
    """One run over time: its label, mode and interval rows."""

    label: str
    mode: str
    rows: list[dict[str, Any]] = field(default_factory=list)


def _numbers(row: Mapping[str, Any], prefix: str = "") -> Iterable[tuple[str, float]]:
    for key, value in row.items():
        name = prefix + key
        if isinstance(value, bool):
            continue
        if isinstance(value, int | float):
            yield name, float(value)
        elif isinstance(value, Mapping) and not prefix:
            yield from _numbers(value, name + ".")


def _flat(row: Mapping[str, Any]) -> dict[str, float]:
    return {k: v for k, v in _numbers(row) if k not in _NOT_SERIES}


def _panel_of(key: str) -> tuple[str, str]:
    """(panel, statistic) of a series key: latency statistics share their panel."""
    match = _LATENCY_KEY.match(key)
    if match:
        return match["what"] or "latency", match["stat"]
    return key, ""


def _catalog_unit(key: str) -> str | None:
    for metric in METRICS:
        if key in (metric.name, metric.path):
            return metric.unit
    return None


def _describe(panel: str, latency: bool) -> tuple[str, str]:
    """(title, unit) of a panel."""
    if panel in _KNOWN_PANELS:
        return _KNOWN_PANELS[panel]
    words = panel.replace(".", " ").replace("_", " ")
    if latency:
        return f"{words[:1].upper()}{words[1:]} latency", "ms"
    unit = _catalog_unit(panel)
    if unit is None:
        unit = next((u for suffix, u in _UNIT_SUFFIXES if panel.endswith(suffix)), "")
    return words[:1].upper() + words[1:], unit


def over_time_panels(lines: Sequence[Line]) -> list[tuple[str, str, str, list[str]]]:
    """(panel, title, unit, series keys) for every panel some run's rows carry."""
    panels: dict[str, list[str]] = {}
    for line in lines:
        for row in line.rows:
            for key in _flat(row):
                panel, _ = _panel_of(key)
                keys = panels.setdefault(panel, [])
                if key not in keys:
                    keys.append(key)
    order = [p for p in _KNOWN_PANELS if p in panels] + [
        p for p in panels if p not in _KNOWN_PANELS]
    result = []
    for panel in order:
        keys = sorted(panels[panel], key=_stat_order)
        latency = any(_panel_of(k)[1] for k in keys)
        title, unit = _describe(panel, latency)
        result.append((panel, title, unit, keys))
    return result


def _stat_order(key: str) -> tuple[int, float]:
    """p50 before p99 before p999 (percentiles as fractions), then mean, min, max."""
    stat = _panel_of(key)[1]
    if stat.startswith("p"):
        return 0, float("0." + stat[1:])
    return {"mean": 1, "min": 2, "max": 3}.get(stat, 4), 0.0


def _main_key(keys: Sequence[str]) -> str:
    """The series a run's legend entry and solid line are: p99 where there is one."""
    return next((k for k in keys if _panel_of(k)[1] == "p99"), keys[0] if keys else "")


def _styles(modes: Sequence[str]) -> list[tuple[str, str]]:
    seen: dict[str, int] = {}
    styles = []
    for mode in modes:  # another release of a client (kafka-java@3.9.1) is dashed
        index = seen.get(base_mode(mode), 0)
        seen[base_mode(mode)] = index + 1
        styles.append((mode_hex(mode), _DASHES[index % len(_DASHES)]))
    return styles


def _layout(fig: go.Figure, title: str, x_title: str, y_title: str, height: int = 340,
            hovermode: str = "x unified") -> go.Figure:
    fig.update_layout(
        title=dict(text=title, x=0.01, xanchor="left", y=0.985, yanchor="top",
                   font=dict(size=15)),
        template="none", paper_bgcolor="white", plot_bgcolor="white", font=_FONT,
        height=height, hoverlabel=dict(namelength=-1),
        margin=dict(l=64, r=24, t=84, b=48), hovermode=hovermode,
        legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0.0),
        xaxis=dict(title=x_title, **_AXIS), yaxis=dict(title=y_title, rangemode="tozero",
                                                      **_AXIS))
    return fig


def over_time_figures(lines: Sequence[Line]) -> dict[str, go.Figure]:
    """One figure per over-time panel (panel name -> figure), one trace per run and series;
    a run's traces share its legend entry, so a click toggles the run."""
    figures: dict[str, go.Figure] = {}
    styles = _styles([line.mode for line in lines])
    for panel, title, unit, keys in over_time_panels(lines):
        fig = go.Figure()
        for line, (color, dash) in zip(lines, styles, strict=True):
            if not line.rows:
                continue
            flats = [_flat(row) for row in line.rows]
            edges = [float(line.rows[0]["start_s"]), *(float(r["end_s"]) for r in line.rows)]
            present = [key for key in keys if any(key in f for f in flats)]
            main = _main_key(present)
            for key in present:
                values = [f.get(key) for f in flats]
                stat = _panel_of(key)[1]
                name = f"{line.label} {stat}".strip() if len(keys) > 1 else line.label
                fig.add_trace(go.Scatter(
                    x=edges, y=[*values, values[-1]], mode="lines", line_shape="hv",
                    name=name, legendgroup=line.label, showlegend=key == main,
                    line=dict(color=color, width=2 if key == main else 1.3,
                              dash=dash if key == main else _STAT_DASH.get(stat, "dashdot")),
                    hovertemplate=f"{name}: %{{y:,.3~f}} {unit}<extra></extra>"))
        if len(keys) > 1:
            main = _main_key(keys)
            title = f"{title}: " + ", ".join(
                f"{_panel_of(k)[1]} " + ("solid" if k == main else
                                         _DASH_WORDS[_STAT_DASH.get(_panel_of(k)[1], "dashdot")])
                for k in [main, *(k for k in keys if k != main)])
        figures[panel] = _layout(fig, title, "seconds since the run's start", unit)
    for fig in figures.values():  # the legend names the run; the stat is in the hover
        for trace in fig.data:
            if trace.showlegend:
                trace.name = trace.legendgroup
    return figures


def percentile_figure(curves: Sequence[tuple[str, str, LatencyHistogram]],
                      title: str = "Ack latency by percentile, ms") -> go.Figure:
    """HdrHistogram's plot: latency against percentile on a log 1/(1-p) axis, one curve
    per (label, mode, histogram); the curve ends at the maximum."""
    fig = go.Figure()
    widest = 10.0
    for (label, _, histogram), (color, dash) in zip(
            curves, _styles([mode for _, mode, _ in curves]), strict=True):
        x, y = percentile_curve(histogram)
        if not x.size:
            continue
        widest = max(widest, float(x[-1]))
        percentiles = 100.0 * (1.0 - 1.0 / x)
        fig.add_trace(go.Scatter(
            x=x, y=y, mode="lines", name=f"{label} (n={histogram.count:,})", legendgroup=label,
            line=dict(color=color, dash=dash, width=2), customdata=percentiles,
            hovertemplate=f"{label}: p%{{customdata:.4~f}} = %{{y:,.2f}} ms<extra></extra>"))
    ticks = [(v, t) for v, t in _TICKS if v <= widest * 1.01]
    _layout(fig, title, "percentile", "latency (ms)", height=380, hovermode="closest")
    fig.update_xaxes(type="log", tickvals=[v for v, _ in ticks],
                     ticktext=[t for _, t in ticks], range=[0, _log10(widest * 1.05)])
    return fig


def _log10(value: float) -> float:
    import math

    return math.log10(max(value, 1.0))


def bars_figure(labels: Sequence[str], modes: Sequence[str], requests: Sequence[float],
                msgs_per_req: Sequence[float]) -> go.Figure:
    """ProduceRequests sent and messages per request, one bar per run label."""
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, subplot_titles=("ProduceRequests sent",
                                                        "messages per request"))
    colors = [mode_hex(m) for m in modes]
    for label, mode, color, req, mpr in zip(labels, modes, colors, requests, msgs_per_req,
                                            strict=True):
        fig.add_trace(go.Bar(x=[label], y=[req], name=label, legendgroup=label,
                             marker_color=color, text=[f"{req:,.0f}"], textposition="outside",
                             hovertemplate=f"{mode}: %{{y:,.0f}} requests<extra></extra>"),
                      row=1, col=1)
        fig.add_trace(go.Bar(x=[label], y=[mpr], name=label, legendgroup=label,
                             showlegend=False, marker_color=color, text=[f"{mpr:,.1f}"],
                             textposition="outside",
                             hovertemplate=f"{mode}: %{{y:,.1f}} msgs/request<extra></extra>"),
                      row=1, col=2)
    _layout(fig, "Requests sent and messages per request", "", "", height=380,
            hovermode="closest")
    fig.update_layout(showlegend=False, margin=dict(t=90))
    fig.update_xaxes(**_AXIS)
    fig.update_yaxes(rangemode="tozero", **_AXIS)
    fig.update_traces(cliponaxis=False)
    return fig


def _cell_hover(cell: Mapping[str, Any], latency: str) -> str:
    figures = cell["figures"]
    settings = [f"mode {cell['mode']}"]
    if cell.get("window_ms") is not None:
        settings.append(f"window {cell['window_ms']} ms")
    if cell.get("rate") is not None:
        settings.append(f"rate {cell['rate']:,.0f} msg/s")
    settings += [f"{k}={v}" for k, v in (cell.get("axes") or {}).items()]
    lines = [f"<b>{cell['id']}</b>", ", ".join(settings),
             f"requests/s {figures['requests_per_s']['median']:,.1f}",
             f"{latency.removesuffix('_ms')} {figures[latency]['median']:,.2f} ms"]
    for name in ("msgs_per_req", "p50_ms", "p99_ms"):
        if name in figures and name != latency:
            lines.append(f"{name} {figures[name]['median']:,.2f}")
    return "<br>".join(lines)


def frontier_figure(document: Mapping[str, Any]) -> go.Figure | None:
    """A sweep's cells: requests/s against the SLO latency (log-log), one line per mode and
    combination of the other axes; frontier cells ringed, the recommendation starred, each
    cell's settings on hover. None when no cell ran cleanly."""
    sweep = document.get("sweep") or {}
    cells = [c for c in sweep.get("cells", []) if c.get("status") == "ok" and c.get("figures")]
    if not cells:
        return None
    latency = sweep["frontier"]["latency"]
    frontier = set(sweep["frontier"]["requests_per_s"])
    chosen = (sweep.get("recommendation") or {}).get("cell")
    fig = go.Figure()
    groups: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for cell in cells:
        key = (cell["mode"], cell.get("rate"), *sorted((cell.get("axes") or {}).items()))
        groups.setdefault(key, []).append(cell)
    modes = [key[0] for key in groups]
    for (key, group), (color, dash) in zip(groups.items(), _styles(modes), strict=True):
        group.sort(key=lambda c: c["window_ms"] if c.get("window_ms") is not None else -1)
        extra = ", ".join(f"{k.split('.')[-1]}={v}" for k, v in key[2:])
        if key[1] is not None:
            extra = ", ".join(filter(None, [f"{key[1]:,.0f} msg/s", extra]))
        name = key[0] + (f" ({extra})" if extra else "")
        fig.add_trace(go.Scatter(
            x=[c["figures"]["requests_per_s"]["median"] for c in group],
            y=[c["figures"][latency]["median"] for c in group],
            mode="lines+markers+text", name=name, legendgroup=name,
            text=[str(c["window_ms"]) if c.get("window_ms") is not None else "" for c in group],
            textposition="top right", textfont=dict(size=10, color=color),
            line=dict(color=color, dash=dash, width=2),
            marker=dict(size=[13 if c["id"] in frontier else 8 for c in group],
                        symbol=["star" if c["id"] == chosen else "circle" for c in group],
                        line=dict(width=[2 if c["id"] in frontier else 0 for c in group],
                                  color="black")),
            hovertext=[_cell_hover(c, latency) for c in group], hoverinfo="text"))
    slo = sweep.get("slo")
    if slo:
        from producer_core.analysis.sweep import parse_slo

        limit = parse_slo(slo).limit_ms  # a trace, not a shape: shapes take log10 on a log axis
        xs = [c["figures"]["requests_per_s"]["median"] for c in cells]
        fig.add_trace(go.Scatter(x=[min(xs) / 1.2, max(xs) * 1.2], y=[limit, limit],
                                 mode="lines", name=f"SLO {slo}",
                                 line=dict(color="grey", dash="dash", width=1.2),
                                 hovertemplate=f"SLO {slo}<extra></extra>"))
    _layout(fig, "Sweep: requests/s against latency (labels: window ms; large ringed "
                 "markers: Pareto frontier; ★ recommended)",
            "requests per second (log)", f"{latency.removesuffix('_ms')} latency, ms (log)",
            height=460, hovermode="closest")
    fig.update_xaxes(type="log")
    fig.update_yaxes(type="log", rangemode="normal")
    return fig
