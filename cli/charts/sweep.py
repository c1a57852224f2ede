"""The frontier chart of a sweep: requests/s against the SLO latency, one line per mode.

matplotlib's object API (``Figure``, Agg backend) from cli/charts/charts.py, imported on first use
so `kbatch` starts without matplotlib.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["frontier_chart", "sweep_charts", "sweep_markdown"]


def sweep_charts(loaded: Sequence[Any], out_dir: Path) -> dict[str, Path]:
    """`kbatch report`: frontier.png when the inputs hold exactly one sweep with runs."""
    sweeps = [item for item in loaded if item.document.get("kind") == "sweep"]
    if len(sweeps) != 1 or not sweeps[0].document["modes"]:
        return {}
    return {"frontier": frontier_chart(sweeps[0].document, out_dir / "frontier.png")}


def sweep_markdown(document: Mapping[str, Any]) -> list[str]:
    """`kbatch report`: a sweep's recommendation as a Markdown paragraph (else nothing)."""
    sweep = document.get("sweep") or {}
    recommendation = sweep.get("recommendation")
    if document.get("kind") != "sweep" or not recommendation:
        return []
    return [f"**Recommendation for {sweep['slo']}:** {recommendation['text']}", ""]


def frontier_chart(document: Mapping[str, Any], path: Path) -> Path:
    """Each mode's cells (median over repeats) joined in window order; the Pareto frontier
    ringed, the recommended cell starred, the SLO a dashed line, failed cells left out."""
    from cli.charts.charts import Figure  # matplotlib with the Agg backend, loaded on first use

    sweep = document["sweep"]
    latency = sweep["frontier"]["latency"]
    frontier = set(sweep["frontier"]["requests_per_s"])
    chosen = (sweep.get("recommendation") or {}).get("cell")
    fig = Figure(figsize=(9, 5.5), dpi=110)
    ax = fig.add_subplot()
    by_mode: dict[str, list[dict[str, Any]]] = {}
    for cell in sweep["cells"]:
        if cell["status"] == "ok":
            by_mode.setdefault(cell["mode"], []).append(cell)
    for mode, cells in by_mode.items():
        groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
        for cell in cells:  # one line per combination of the non-window axes
            key = (cell["rate"], *sorted(cell["axes"].items()))
            groups.setdefault(key, []).append(cell)
        for key, group in groups.items():
            group.sort(key=lambda c: c["window_ms"] if c["window_ms"] is not None else -1)
            xs = [c["figures"]["requests_per_s"]["median"] for c in group]
            ys = [c["figures"][latency]["median"] for c in group]
            extra = ", ".join(f"{k.split('.')[-1]}={v}" for k, v in key[1:])
            if key[0] is not None:
                extra = ", ".join(filter(None, [f"{key[0]:,.0f} msg/s", extra]))
            line, = ax.plot(xs, ys, marker="o", linewidth=1.5,
                            label=mode + (f" ({extra})" if extra else ""))
            for cell, x, y in zip(group, xs, ys, strict=True):
                if cell["window_ms"] is not None:
                    ax.annotate(f"{cell['window_ms']}", (x, y), textcoords="offset points",
                                xytext=(4, 4), fontsize=7, color=line.get_color())
                if cell["id"] in frontier:
                    ax.plot([x], [y], marker="o", markersize=11, markerfacecolor="none",
                            markeredgecolor="black", linewidth=0)
                if cell["id"] == chosen:
                    ax.plot([x], [y], marker="*", markersize=16, color="gold",
                            markeredgecolor="black", linewidth=0, label="recommended")
    slo = sweep.get("slo")
    if slo:
        from producer_core.analysis.sweep import parse_slo

        ax.axhline(parse_slo(slo).limit_ms, color="grey", linestyle="--", linewidth=1,
                   label=f"SLO {slo}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("requests per second (log)")
    ax.set_ylabel(f"{latency.removesuffix('_ms')} latency, ms (log)")
    ax.set_title("kbatch sweep — requests/s against latency (labels: window ms; "
                 "ringed: Pareto frontier)", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path
