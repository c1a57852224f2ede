"""The tables a results document is shown as: in the terminal after a run, in `kbatch
report` (terminal, report.md and the HTML report) and on the dashboard. One module below
the commands that print them, so report, html_report, dashboard, sweep and capacity share
them without importing each other."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich import box
from rich.markup import escape
from rich.table import Table

from cli.render.tables import comparison_table, out, summary_table, topics_table
from producer_core.results.metric_catalog import SUMMARY_METRICS
from producer_core.results.results_io import RESULTS_FILE, LoadedResults, run_group

if TYPE_CHECKING:
    from rich.console import JustifyMethod

LATENCY_COLUMNS = (("p50", "p50_ms"), ("p95", "p95_ms"), ("p99", "p99_ms"),
                   ("p99.9", "p999_ms"), ("max", "max_ms"), ("mean", "mean_ms"))


def live_table(item: LoadedResults) -> Table:
    """The table the live command printed for these results."""
    if item.document.get("kind") == "sweep":
        return sweep_table(item.document)
    if item.document.get("kind") == "capacity":
        return capacity_table(item.document)
    if item.kind == "comparison":
        return comparison_table(item.document)
    return summary_table(item.document)


def latency_table(item: LoadedResults) -> Table:
    """Latency percentiles of every run, exactly as in the JSON (ms)."""
    narrow = (out.width or 80) < 100  # 80 columns: no vertical rules, so no number is cut
    e2e = any("e2e_latency" in run for run in item.runs)
    table = Table(title="ack latency, intended send → acknowledgement (ms)" + (
        "; end-to-end, intended send → consume (--consume)" if e2e else ""),
        box=box.SIMPLE_HEAD if narrow else box.HEAVY_HEAD)
    labels = [run_label(item, run) for run in item.runs]
    table.add_column("run", no_wrap=True, min_width=max(map(len, labels), default=3))
    for header, _ in LATENCY_COLUMNS:
        table.add_column(header, justify="right", no_wrap=True, min_width=len(header))
    table.add_column("count", justify="right", no_wrap=True, min_width=5)
    for run in item.runs:
        for suffix, key in (("", "latency"), (" end-to-end", "e2e_latency")):
            latency = run.get(key)
            if latency is None:
                continue
            table.add_row(run_label(item, run) + suffix, *(
                f"{latency[k]:,.3f}" for _, k in LATENCY_COLUMNS), f"{latency['count']:,}")
    return table


def run_topic_tables(item: LoadedResults) -> list[Table]:
    """The per-topic table of every run with more than one topic."""
    tables = []
    for run in item.runs:
        if len(run.get("topics", {})) > 1:
            table = topics_table(run)
            table.title = f"{run_label(item, run)}: {table.title}"
            tables.append(table)
    return tables


def run_label(item: LoadedResults, run: dict[str, Any]) -> str:
    """A run's label in tables and charts (the HTML and Markdown reports share it)."""
    repeat = item.document.get("repeat", 1)
    return run_group(run) + (f" round {run.get('round', 1)}" if repeat > 1 else "")


def results_name(item: LoadedResults) -> str:
    """An input's short name: its results directory, or its file's stem."""
    return item.path.parent.name if item.path.name == RESULTS_FILE else item.path.stem


def mode_labels(loaded: Sequence[LoadedResults]) -> list[tuple[LoadedResults, str, str]]:
    """(results, mode, chart label) for every mode of every input."""
    many = len(loaded) > 1
    return [(item, mode, f"{results_name(item)}: {mode}" if many else mode)
            for item in loaded for mode in item.modes]


def median_of(item: LoadedResults, mode: str, metric: str) -> float:
    """What the live table shows for a mode: the comparison's median, or the run's value."""
    if item.kind == "comparison":
        return float(item.document["summary"][mode][metric]["median"])
    return float(SUMMARY_METRICS[metric](item.document))


def fact_lines(item: LoadedResults) -> list[str]:
    """The workload and target of an input, one Markdown list line each (both reports)."""
    doc = item.document
    w = doc["workload"]
    rate = w.get("rate")
    topics = w.get("topics") or []
    if topics:  # a workload file: its topics replace the one-topic flags
        partitions = sum(int(t.get("partitions", 0)) for t in topics if isinstance(t, dict))
        parts = [f"{len(topics)} topics, {partitions:,} partitions"]
    else:
        parts = [f"{w.get('partitions')} partitions",
                 "rate max" if rate is None else f"{rate:,.0f} msg/s"]
    if w.get("duration_s") is not None:
        parts.append(f"{w['duration_s']:g} s")
    if w.get("messages") is not None:
        parts.append(f"{w['messages']:,} messages")
    if not topics:
        parts.append(f"{w.get('message_size')}-byte values, keys {w.get('keys')}")
    parts.append(f"seed {w.get('seed')}")
    if doc.get("kind") == "capacity":
        what = f"capacity search of {', '.join(doc['modes'])} within {doc['capacity']['slo']}"
    elif item.kind == "comparison":
        what = (f"comparison of {', '.join(doc['modes'])}, {doc['repeat']} round"
                + ("s" if doc["repeat"] > 1 else ""))
    else:
        what = f"one run in mode {doc['mode']}"
    lines = [f"- {what}", f"- workload: {', '.join(parts)}"]
    broker = doc.get("broker") or item.runs[0].get("broker") or "?"
    lines.append(f"- broker: {broker} ({doc.get('broker_version', 'version unknown')})")
    host = doc.get("host")
    facts = [f"kbatch {doc.get('kbatch_version', '?')}"]
    if doc.get("started_at"):
        facts.append(f"started {doc['started_at']}")
    if host:
        facts.append(f"{host.get('hostname', '?')}: {host.get('platform')}, "
                     f"{host.get('cpu_count')} CPUs, Python {host.get('python')}")
    lines.append("- " + " · ".join(facts))
    return lines


def duration_text(seconds: float) -> str:
    """Seconds as a person reads them (s, min, h): sweep's ETA and the dashboard share it."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def _cell(figures: dict[str, Any], name: str, repeats: int, fmt: str) -> str:
    spread = figures[name]
    text = format(spread["median"], fmt)
    if repeats > 1:
        text += f" ({format(spread['min'], fmt)}–{format(spread['max'], fmt)})"
    return text


E2E_COLUMNS = (("e2e_p50_ms", "e2e p50 ms"), ("e2e_p99_ms", "e2e p99 ms"))
"""End-to-end latency columns (--consume), shown when some cell measured them."""


BROKER_COLUMNS = (("broker_cpu_s_per_million_msgs", "broker CPU s/M msgs"),
                  ("broker_handler_idle_pct", "handler idle %"),
                  ("broker_produce_p99_ms", "broker Produce p99 ms"))
"""The broker cost columns (measure/broker_cost.py), shown when some cell measured them."""


def sweep_table(document: dict[str, Any]) -> Table:
    """One row per cell: its figures (median, min–max over repeats), frontier, SLO."""
    sweep = document["sweep"]
    frontier = set(sweep["frontier"]["requests_per_s"])
    chosen = (sweep.get("recommendation") or {}).get("cell")
    repeats = document["repeat"]
    title = "kbatch sweep" + (f" — median (min–max) of {repeats} repeats" if repeats > 1
                              else "")
    narrow = (out.width or 80) < 100  # an 80-column terminal: shorter headers, no rules
    table = Table(title=title + (" (latency in ms)" if narrow else ""),
                  box=box.SIMPLE_HEAD if narrow else box.HEAVY_HEAD, pad_edge=not narrow)
    widest = max((len(cell["id"]) for cell in sweep["cells"]), default=4)
    extra = [(key, header) for key, header in (*E2E_COLUMNS, *BROKER_COLUMNS)
             if any(key in (c.get("figures") or {}) for c in sweep["cells"])]
    names = (("cell", "status", "req/s", "msg/req", "B/req", "p50", "p99", "p99.9",
              *[header.removesuffix(" ms") for _, header in extra], "Pareto")
             if narrow else ("cell", "status", "requests/s", "msgs/req", "bytes/req",
                             "p50 ms", "p99 ms", "p99.9 ms", *[h for _, h in extra], "frontier"))
    for name in names:  # cell ids and numbers stay whole (widths set below), reasons wrap
        table.add_column(name, justify="left" if name in ("cell", "status") else "right",
                         no_wrap=name != "status", min_width=widest if name == "cell" else
                         6 if name == "status" else None)
    for cell in sweep["cells"]:
        f = cell.get("figures") or {}
        if not f:
            table.add_row(cell["id"], f"[red]{cell['status']}[/red]: "
                          f"{escape(cell.get('reason') or '')}",
                          *[""] * (7 + len(extra)))
            continue
        status = "ok" if cell["status"] == "ok" else \
            f"[red]failed[/red]: {escape(cell['reason'] or '')}"
        mark = ("★ " if cell["id"] == chosen else "") + ("yes" if cell["id"] in frontier
                                                         else "")
        table.add_row(cell["id"], status, _cell(f, "requests_per_s", repeats, ",.0f"),
                      _cell(f, "msgs_per_req", repeats, ",.1f"),
                      _cell(f, "bytes_per_request", repeats, ",.0f"),
                      _cell(f, "p50_ms", repeats, ",.1f"), _cell(f, "p99_ms", repeats, ",.1f"),
                      _cell(f, "p999_ms", repeats, ",.1f"),
                      *[_cell(f, key, repeats, ",.1f") if key in f else "-" for key, _ in extra],
                      mark)
    for column in table.columns[2:]:
        column.min_width = max(len(str(column.header)),
                               *(len(str(value)) for value in column.cells))
    return table


METRIC = "max_sustainable_msgs_per_s"


def capacity_table(document: dict[str, Any]) -> Table:
    """One row per mode: the rate, the bracket it ended in, probes run, why it stopped."""
    table = Table(title=f"highest sustained rate, {document['capacity']['slo']}")
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("mode", "left"), ("msg/s", "right"), ("bracket", "right"), ("probes", "right"),
        ("search", "left"))
    for name, justify in columns:
        table.add_column(name, justify=justify, overflow="fold")
    for mode, found in document["capacity"]["modes"].items():
        value = found[METRIC]
        lo, hi = found["bracket"]
        bracket = f"{lo or 0:,.0f}–{hi:,.0f}" if hi is not None else f"≥ {lo or 0:,.0f}"
        table.add_row(mode, "none" if value is None else f"{value:,.0f}", bracket,
                      str(len(found["probes"])), found["stopped"])
    return table
