"""capacity.png: each mode's probes (rate against the SLO's latency), sustained or not,
and the highest sustained rate marked, so a reader sees how sharp the knee is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from cli.charts.charts import mode_color


def _limit_ms(slo: str) -> float | None:
    """The SLO's limit in ms ('p99<=100ms', 'p99<1s'), for the dashed line."""
    from producer_core.analysis.sweep import parse_slo
    from producer_core.errors import UsageError

    try:
        return parse_slo(slo).limit_ms
    except UsageError:
        return None


def capacity_chart(document: dict[str, Any], path: Path) -> Path:
    """One panel: x the probe's rate (log), y its SLO latency (log); filled markers for
    sustained probes, hollow for the rest; a vertical line per mode at its answer."""
    search = document["capacity"]
    metric = search["slo"].split("<")[0].strip() or "p99"
    field = {"p99.9": "p999_ms"}.get(metric, f"{metric}_ms")
    fig = Figure(figsize=(8, 4.8), dpi=110)
    ax = fig.subplots()
    for mode, found in search["modes"].items():
        runs = [r for r in document["runs"] if r["mode"] == mode]
        color = mode_color(mode)
        for probe, run in zip(found["probes"], runs, strict=False):
            latency = run["latency"].get(field, run["latency"]["p99_ms"])
            ax.plot([probe["rate"]], [max(latency, 1e-3)], marker="o", linestyle="none",
                    markersize=7, color=color,
                    markerfacecolor=color if probe["ok"] else "none")
        value = found["max_sustainable_msgs_per_s"]
        if value:
            ax.axvline(value, color=color, linewidth=1.4,
                       label=f"{mode}: {value:,.0f} msg/s")
    limit = document["capacity"]["slo"]
    limit_ms = _limit_ms(limit)
    if limit_ms is not None:
        ax.axhline(limit_ms, color="black", linestyle="--", linewidth=1.0, label=limit)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("probe rate, msg/s (filled: sustained)")
    ax.set_ylabel(f"{metric} latency, ms")
    ax.set_title(f"highest sustained rate within {limit}", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, format="png")
    return path
