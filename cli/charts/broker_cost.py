"""`kbatch report`'s broker_cost.png: broker CPU per mode, split by node, and the CPU per
million messages (the runs' `broker_cost`, measure/broker_cost.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from cli.charts.charts import mode_color


def broker_cost_chart(runs: Sequence[tuple[str, str, Mapping[str, Any]]], path: Path
                      ) -> Path | None:
    """``runs``: (label, mode, broker_cost section). None when no run measured the broker."""
    measured = [(label, mode, cost) for label, mode, cost in runs
                if (cost.get("broker") or {}).get("cpu_s") is not None]
    if not measured:
        return None
    nodes = sorted({n for _, _, c in measured for n in c["broker"].get("nodes", {})},
                   key=lambda n: (len(n), n))
    fig = Figure(figsize=(9, 4.5), dpi=110)
    left, right = fig.subplots(1, 2)
    labels = [label for label, _, _ in measured]
    bottom = [0.0] * len(measured)
    for index, node in enumerate(nodes):
        values = [(c["broker"]["nodes"].get(node) or {}).get("cpu_s") or 0.0
                  for _, _, c in measured]
        left.bar(labels, values, bottom=bottom, label=f"node {node}", color=f"C{index % 10}",
                 alpha=0.85)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    for x, total in enumerate(bottom):
        left.annotate(f"{total:,.2f}", (x, total), ha="center", va="bottom")
    left.set_title("broker CPU seconds (measured window), by node")
    left.legend(loc="upper right", fontsize="small")
    left.grid(True, axis="y", alpha=0.35)
    per_million = [c["broker"].get("cpu_s_per_million_msgs") or 0.0 for _, _, c in measured]
    bars = right.bar(labels, per_million, color=[mode_color(m) for _, m, _ in measured])
    right.bar_label(bars, labels=[f"{v:,.1f}" for v in per_million], padding=2)
    right.set_title("broker CPU s per million messages")
    right.grid(True, axis="y", alpha=0.35)
    left.set_ylim(0, max([*bottom, 0.001]) * 1.2)
    right.set_ylim(0, max([*per_million, 0.001]) * 1.2)
    for ax in (left, right):
        ax.tick_params(axis="x", labelrotation=20)
    fig.tight_layout()
    fig.savefig(path, format="png")
    return path
