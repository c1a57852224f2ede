"""How a run's consumers look on screen: ack latency beside end-to-end latency, what the
consumers read, their lag, and what they could not measure (`--consume`)."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

PERCENTILES = (("p50", "p50_ms"), ("p95", "p95_ms"), ("p99", "p99_ms"), ("p99.9", "p999_ms"),
               ("max", "max_ms"))


def _ms(value: float) -> str:
    return f"{value:,.2f}"


def consumers_tables(run: dict[str, Any], label: str = "") -> list[Table]:
    """The end-to-end table of a run with consumers (none without)."""
    section = run.get("consumers")
    if section is None:
        return []
    title = "end-to-end (consumers)" + (f" — {label}" if label else "")
    table = Table(title=title)
    table.add_column("figure")
    table.add_column("ack latency ms", justify="right")
    table.add_column("end-to-end ms", justify="right")
    ack, e2e = run["latency"], run.get("e2e_latency")
    for name, key in PERCENTILES:
        table.add_row(name, _ms(ack[key]), _ms(e2e[key]) if e2e else "not measured")
    txn = run.get("transactions")
    if txn:
        commit = txn["commit_latency"]
        table.add_row("transaction commit wait p50 / p99 (in end-to-end)",
                      "", f"{_ms(commit['p50_ms'])} / {_ms(commit['p99_ms'])}")
    readback = section.get("readback")
    counts = Table(title="consumers: read-back and lag" + (f" — {label}" if label else ""))
    counts.add_column("figure")
    counts.add_column("value", justify="right")
    counts.add_row("consumers / isolation", f"{section['consumers']} / "
                                            f"{section.get('isolation_level') or '-'}")
    if readback is not None:
        distinct = readback["present"] + readback["unacknowledged_found"]
        counts.add_row("acknowledged / consumed (distinct)",
                       f"{readback['acknowledged']:,} / {distinct:,}")
        counts.add_row("missing / duplicated / out of order",
                       f"{readback['missing']:,} / {readback['duplicated']:,} / "
                       f"{readback['out_of_order']:,}")
        if readback.get("unacknowledged_found"):
            counts.add_row("read but not acknowledged", f"{readback['unacknowledged_found']:,}")
    if "msgs_per_s" in section:
        counts.add_row("consume rate msg/s", f"{section['msgs_per_s']:,.0f}")
        lag = section["lag"]
        counts.add_row("lag max (messages / s)", f"{lag['max_messages']:,} / "
                                                 f"{lag['max_s']:,.3f}")
        counts.add_row("read on after the run s", f"{section['drain_s']:,.2f}")
    if section.get("negative_latencies"):
        counts.add_row("negative latencies (clocks differ)", f"{section['negative_latencies']:,}")
    for problem in section.get("problems", []):
        counts.add_row("[yellow]problem[/yellow]", escape(problem))
    return [table, counts]


def interval_suffix(row: dict[str, Any]) -> str:
    """The consumers' part of an interval line (empty without consumers)."""
    if "consumed" not in row:
        return ""
    lag = row.get("lag_messages", 0)
    if "lag_s" in row:
        seconds = f"{row['lag_s']:,.2f} s"
    else:  # live: the lag in messages at the interval's acknowledgement rate
        rate = row.get("msgs_per_s") or 0
        seconds = f"~{lag / rate:,.2f} s" if rate else "- s"
    text = f"  consumed {row['consumed']:,}  lag {lag:,} msgs / {seconds}"
    if "e2e_p99_ms" in row:
        text += f"  e2e p99 {row['e2e_p99_ms']:,.1f} ms"
    return text
