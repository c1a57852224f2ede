"""`kbatch report --html`: saved results as ONE self-contained HTML page.

Pure: loaded results in, the page as a string out. Every script and style is inlined
(plotly.js once, the charts as Plotly figures from cli/report/html_figures.py), so the file opens
offline, can be mailed or kept as a CI artifact, and asks the network for nothing.
The tables are the ones the terminal and report.md show (cli/render/results_tables.py), as HTML.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

import plotly.io as pio
from plotly.offline import get_plotlyjs
from rich.table import Table

from cli.render.markdown import plain_text
from cli.render.results_tables import (
    fact_lines,
    latency_table,
    live_table,
    median_of,
    mode_labels,
    results_name,
    run_label,
    run_topic_tables,
)
from cli.report.html_figures import (
    Line,
    bars_figure,
    frontier_figure,
    mode_hex,
    over_time_figures,
    percentile_figure,
)
from producer_core.results.results_io import LoadedResults, run_group

__all__ = ["CSS", "PLOTLY_CONFIG", "build_report", "figure_div", "page", "table_to_html"]

PLOTLY_CONFIG = {"displaylogo": False, "responsive": True}

CSS = """
:root { --fg:#1f2328; --muted:#59636e; --line:#d1d9e0; --bg:#f6f8fa; }
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif; color: var(--fg);
       margin: 0; background: #fff; }
header { background: #0d1117; color: #f0f6fc; padding: 14px 28px; }
header h1 { margin: 0; font-size: 20px; font-weight: 600; }
header .sub { color: #9198a1; font-size: 13px; margin-top: 2px; }
main { padding: 8px 28px 40px; max-width: 1280px; }
h2 { font-size: 17px; margin: 26px 0 8px; border-bottom: 1px solid var(--line);
     padding-bottom: 4px; }
h3 { font-size: 14px; margin: 16px 0 6px; color: var(--muted); }
ul.facts { margin: 4px 0 10px; padding-left: 18px; color: var(--muted); font-size: 13px; }
table.kb { border-collapse: collapse; font-size: 13px; margin: 6px 0 14px; }
table.kb caption { text-align: left; font-weight: 600; padding: 4px 0; }
table.kb th, table.kb td { border: 1px solid var(--line); padding: 3px 9px; }
table.kb th { background: var(--bg); font-weight: 600; }
table.kb td.num, table.kb th.num { text-align: right; font-variant-numeric: tabular-nums; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px;
          margin-right: 5px; vertical-align: baseline; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(560px, 1fr));
          gap: 12px; }
.chart { border: 1px solid var(--line); border-radius: 6px; padding: 4px; min-width: 0; }
.chart.wide { grid-column: 1 / -1; }
.note { color: var(--muted); font-size: 13px; }
.warn { color: #9a6700; }
.recommend { background: #dafbe1; border: 1px solid #aceebb; border-radius: 6px;
             padding: 6px 10px; display: inline-block; }
"""


def table_to_html(table: Table, modes: Mapping[str, str] | None = None) -> str:
    """A rich table (the terminal's) as an HTML table; a row whose first cell starts with a
    key of `modes` (a mode, a sweep cell) gets that mode's colour swatch."""
    modes = modes or {}
    headers = "".join(
        f"<th class=\"{'num' if c.justify == 'right' else ''}\">{html.escape(plain_text(c.header))}"
        "</th>" for c in table.columns)
    columns = [[plain_text(cell).replace("\\|", "|") for cell in c.cells] for c in table.columns]
    rows = []
    for row in zip(*columns, strict=True):
        cells = []
        for index, (column, text) in enumerate(zip(table.columns, row, strict=True)):
            swatch = ""
            mode = modes.get(text.split(" ")[0]) if index == 0 else None
            if mode is not None:
                swatch = f"<span class=\"swatch\" style=\"background:{mode_hex(mode)}\">" \
                         "</span>"
            cls = " class=\"num\"" if column.justify == "right" else ""
            cells.append(f"<td{cls}>{swatch}{html.escape(text)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    caption = f"<caption>{html.escape(plain_text(table.title))}</caption>" if table.title else ""
    return (f"<table class=\"kb\">{caption}<thead><tr>{headers}</tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>")


def figure_div(key: str, figure: Any, wide: bool = False) -> str:
    """One chart: its div and the script that draws it (plotly.js must be on the page)."""
    inner = pio.to_html(figure, full_html=False, include_plotlyjs=False,
                        div_id=f"chart-{key}", config=PLOTLY_CONFIG)
    return f"<div class=\"chart{' wide' if wide else ''}\" data-chart=\"{key}\">{inner}</div>"


def page(title: str, subtitle: str, body: str, script: str = "") -> str:
    """A whole page: plotly.js and the style inlined; `script` runs after the body."""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{html.escape(title)}</title><style>{CSS}</style>"
        f"<script type=\"text/javascript\">{get_plotlyjs()}</script></head><body>"
        f"<header><h1>{html.escape(title)}</h1><div class=\"sub\">{html.escape(subtitle)}"
        f"</div></header><main>{body}</main>"
        + (f"<script>{script}</script>" if script else "") + "</body></html>\n")


def _section(item: LoadedResults) -> str:
    parts = [f"<h2>{html.escape(str(item.path))}</h2>", "<ul class=\"facts\">"]
    parts += [f"<li>{html.escape(line.removeprefix('- '))}</li>" for line in fact_lines(item)]
    parts.append("</ul>")
    modes = {mode: mode for mode in item.modes} | {
        run_group(run): run["mode"] for run in item.runs}
    parts.append(table_to_html(live_table(item), modes))
    parts.append(table_to_html(latency_table(item), modes))
    parts += [table_to_html(t) for t in run_topic_tables(item)]
    recommendation = ((item.document.get("sweep") or {}).get("recommendation") or {})
    if item.document.get("kind") == "sweep" and recommendation:
        parts.append(f"<p class=\"recommend\"><b>Recommendation for "
                     f"{html.escape(item.document['sweep']['slo'])}:</b> "
                     f"{html.escape(recommendation['text'])}</p>")
    warnings = [(run_label(item, run), w) for run in item.runs
                for w in run.get("warnings", [])]
    if warnings:
        parts.append("<h3>Warnings</h3><ul class=\"warn\">" + "".join(
            f"<li>{html.escape(who)}: {html.escape(w)}</li>" for who, w in warnings)
            + "</ul>")
    return "".join(parts)


def over_time_lines(loaded: Sequence[LoadedResults]) -> tuple[list[Line], list[str]]:
    """Every run's interval rows, and the runs that have none (older results)."""
    lines, missing = [], []
    many = len(loaded) > 1
    for item in loaded:
        for run in item.runs:
            label = run_label(item, run)
            label = f"{results_name(item)}: {label}" if many else label
            rows = (run.get("intervals") or {}).get("run")
            if rows:
                lines.append(Line(label, run["mode"], rows))
            else:
                missing.append(label)
    return lines, missing


def chart_figures(loaded: Sequence[LoadedResults]) -> tuple[dict[str, tuple[Any, bool]],
                                                            list[str]]:
    """The report's figures (key -> (figure, full width)), and runs without intervals."""
    figures: dict[str, tuple[Any, bool]] = {}
    sweeps = [item for item in loaded if item.document.get("kind") == "sweep"]
    for index, item in enumerate(sweeps):
        frontier = frontier_figure(item.document)
        if frontier is not None:
            figures[f"frontier-{index}" if index else "frontier"] = (frontier, True)
    labels = mode_labels(loaded)
    figures["requests"] = (bars_figure(
        [label for _, _, label in labels],
        [_mode_of(item, mode) for item, mode, _ in labels],
        [median_of(item, mode, "requests_sent") for item, mode, _ in labels],
        [median_of(item, mode, "msgs_per_req") for item, mode, _ in labels]), False)
    figures["latency"] = (percentile_figure(
        [(label, _mode_of(item, mode), item.latency_histogram(mode))
         for item, mode, label in labels]), False)
    lines, missing = over_time_lines(loaded)
    for key, figure in over_time_figures(lines).items():
        figures[f"over-{key}"] = (figure, False)
    return figures, missing


def _mode_of(item: LoadedResults, group: str) -> str:
    """The mode of a comparison's group (a sweep groups by cell)."""
    for run in item.runs:
        if run.get("cell") == group:
            return run["mode"]
    return group


def build_report(loaded: Sequence[LoadedResults], subtitle: str = "") -> str:
    """The whole report page for these results."""
    figures, missing = chart_figures(loaded)
    body = [_section(item) for item in loaded]
    body.append("<h2>Charts</h2><p class=\"note\">Hover for values, drag to zoom, "
                "double-click to reset; click a legend entry to hide or show a run.</p>"
                "<div class=\"charts\">")
    body += [figure_div(key, figure, wide) for key, (figure, wide) in figures.items()]
    body.append("</div>")
    if missing:
        body.append("<p class=\"note\">No charts over time for "
                    f"{html.escape(', '.join(missing))}: these results carry no intervals "
                    "(written by an older kbatch, before results had <code>intervals</code>)."
                    "</p>")
    kinds = sorted({item.document.get("kind") or item.kind for item in loaded})
    return page("kbatch report", subtitle or f"{len(loaded)} results ({', '.join(kinds)})",
                "".join(body))
