"""The live dashboard's page and the state it polls: the report's figures (cli/report/html_figures)
built from the live interval rows, and the runs' numbers as plain JSON.

The page is cli/report/html_report.py's shell (style and plotly.js inlined) with a small script
that polls `/state.json` every second and hands each figure to `Plotly.react`: the charts
are Plotly's, not drawn by hand.
"""

from __future__ import annotations

import json
from typing import Any

from cli.dashboard.state import Snapshot

POLL_MS = 1000

_BODY = """
<section id="status-bar"><span id="status">connecting…</span>
<span id="report-link"></span></section>
<div id="sweep" hidden><h2>Sweep</h2>
  <progress id="sweep-bar" value="0" max="1"></progress>
  <span id="sweep-text"></span></div>
<h2>Runs</h2>
<table class="kb" id="numbers"><thead><tr>
<th>run</th><th class="num">elapsed s</th><th class="num">generated</th>
<th class="num">acknowledged</th><th class="num">msgs/s (last interval)</th>
<th class="num">requests</th><th class="num">msgs/req (last)</th>
<th class="num">p99 ms (last)</th><th class="num">failed</th><th class="num">in flight</th>
</tr></thead><tbody></tbody></table>
<div id="warnings-box" hidden><h2>Warnings</h2><ul id="warnings" class="warn"></ul></div>
<h2>Charts</h2><p class="note" id="lines-note">Charts appear after the first interval.</p>
<div class="charts" id="charts"></div>
"""

_STYLE = """
<style>
#status-bar { margin: 14px 0 4px; font-size: 14px; }
#status.live::before { content: "●"; color: #1a7f37; margin-right: 6px; }
#status.over::before { content: "■"; color: #59636e; margin-right: 6px; }
#report-link a { margin-left: 14px; font-weight: 600; }
progress { width: 420px; height: 14px; vertical-align: middle; }
#sweep-text { margin-left: 10px; font-size: 14px; }
</style>
"""

_SCRIPT = """
const CONFIG = {displaylogo: false, responsive: true};
let figuresVersion = -1, stopped = false;
const fmt = (v, d = 0) => (v === undefined || v === null) ? '' :
  Number(v).toLocaleString('en-US', {minimumFractionDigits: d, maximumFractionDigits: d});
function cell(text, num) {
  const td = document.createElement('td');
  if (num) td.className = 'num';
  td.textContent = text;
  return td;
}
function drawNumbers(runs) {
  const body = document.querySelector('#numbers tbody');
  body.replaceChildren();
  for (const run of runs) {
    const p = run.progress || {}, last = run.last || {}, t = run.totals || {};
    const tr = document.createElement('tr');
    tr.dataset.run = run.label;
    const name = cell(run.label + (run.done ? '' : '  (running)'));
    const swatch = document.createElement('span');
    swatch.className = 'swatch';
    swatch.style.background = run.color;
    name.prepend(swatch);
    tr.append(name, cell(fmt(p.elapsed_s, 1), 1), cell(fmt(t.generated), 1),
      cell(fmt(t.acknowledged), 1), cell(fmt(last.msgs_per_s), 1), cell(fmt(t.requests), 1),
      cell(fmt(last.msgs_per_req, 1), 1), cell(fmt(last.p99_ms, 1), 1), cell(fmt(t.failed), 1),
      cell(run.done ? '' : fmt(p.in_flight_requests), 1));
    body.append(tr);
  }
}
function drawFigures(figures) {
  const box = document.getElementById('charts');
  for (const [key, fig] of Object.entries(figures)) {
    let div = document.getElementById('chart-' + key);
    if (!div) {
      const wrap = document.createElement('div');
      wrap.className = 'chart' + (key === 'frontier' ? ' wide' : '');
      wrap.dataset.chart = key;
      div = document.createElement('div');
      div.id = 'chart-' + key;
      wrap.append(div);
      box.append(wrap);
      // a chart added to the grid narrows the others: redraw each at its box's width
      new ResizeObserver(() => { if (div.data) Plotly.Plots.resize(div); }).observe(wrap);
    }
    Plotly.react(div, fig.data, fig.layout, CONFIG);
  }
}
function drawSweep(sweep) {
  const box = document.getElementById('sweep');
  if (!sweep) return;
  box.hidden = false;
  document.getElementById('sweep-bar').max = sweep.total;
  document.getElementById('sweep-bar').value = sweep.done;
  document.getElementById('sweep-text').textContent = sweep.done + ' / ' + sweep.total +
    ' runs done' + (sweep.eta ? ', ETA ' + sweep.eta : '') +
    (sweep.current ? ' — running ' + sweep.current : '');
}
function drawWarnings(warnings) {
  const list = document.getElementById('warnings');
  document.getElementById('warnings-box').hidden = warnings.length === 0;
  list.replaceChildren(...warnings.map(w => { const li = document.createElement('li');
    li.textContent = w; return li; }));
}
async function keepReport(url, path) {
  // fetched now, kept as a blob: the link still works once kbatch has exited
  const span = document.getElementById('report-link');
  const a = document.createElement('a');
  a.textContent = 'HTML report';
  a.title = path;
  a.target = '_blank';
  a.href = url;
  span.replaceChildren(a, document.createTextNode(' (' + path + ')'));
  try {
    const blob = await (await fetch(url, {cache: 'no-store'})).blob();
    a.href = URL.createObjectURL(blob);
  } catch (e) { /* kbatch exited first: the path on disk is shown */ }
}
async function tick() {
  let state;
  try {
    const r = await fetch('state.json?figures=' + figuresVersion, {cache: 'no-store'});
    state = await r.json();
  } catch (e) {
    const s = document.getElementById('status');
    s.className = 'over';
    s.textContent = 'kbatch has exited; this is the last state it served.';
    return;
  }
  const s = document.getElementById('status');
  s.className = state.finished ? 'over' : 'live';
  s.textContent = state.title + ' — ' + (state.finished ? 'finished' : 'running') +
    ', ' + fmt(state.elapsed_s, 0) + ' s';
  drawNumbers(state.runs);
  drawSweep(state.sweep);
  drawWarnings(state.warnings);
  document.getElementById('lines-note').textContent = state.lines_note;
  if (state.figures) { drawFigures(state.figures); figuresVersion = state.figures_version; }
  if (state.finished) {
    if (state.report) keepReport(state.report, state.report_path);
    return;
  }
  setTimeout(tick, POLL_MS);
}
tick();
"""


def live_page(title: str) -> str:
    from cli.report.html_report import page

    script = f"const POLL_MS = {POLL_MS};\n" + _SCRIPT
    return page(title, "live dashboard (updates every interval)", _STYLE + _BODY, script)


def live_figures(snapshot: Snapshot, max_lines: int) -> dict[str, Any]:
    """The report's figures for the runs so far, as Plotly JSON (key -> figure)."""
    import plotly.io as pio

    from cli.report.html_figures import (
        Line,
        bars_figure,
        frontier_figure,
        over_time_figures,
        percentile_figure,
    )
    from producer_core.results.results_io import merge_encoded

    runs = [run for run in snapshot.runs if run.rows][-max_lines:]
    figures: dict[str, Any] = {}
    document = _sweep_document(snapshot)
    if document is not None:
        frontier = frontier_figure(document)
        if frontier is not None:
            figures["frontier"] = frontier
    lines = [Line(run.label, run.mode, run.rows) for run in runs]
    for key, figure in over_time_figures(lines).items():
        figures[f"over-{key}"] = figure
    if runs:
        figures["latency"] = percentile_figure(
            [(run.label, run.mode, merge_encoded(r["latency_us"] for r in run.rows
                                                 if r.get("latency_us"))) for run in runs])
        requests = [sum(r.get("requests", 0) for r in run.rows) for run in runs]
        records = [sum(r.get("records", 0) for r in run.rows) for run in runs]
        figures["requests"] = bars_figure(
            [run.label for run in runs], [run.mode for run in runs], requests,
            [rec / req if req else 0.0 for rec, req in zip(records, requests, strict=True)])
    return {key: json.loads(pio.to_json(figure, validate=False))
            for key, figure in figures.items()}


def _sweep_document(snapshot: Snapshot) -> dict[str, Any] | None:
    path = snapshot.sweep_document
    if path is None or not path.is_file():
        return None
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError):  # being replaced this instant: next interval
        return None
    return document if document.get("kind") == "sweep" else None


def _eta(seconds: float | None) -> str:
    if seconds is None:
        return ""
    from cli.render.results_tables import duration_text

    return duration_text(seconds)


def state_document(snapshot: Snapshot, figures: dict[str, Any] | None,
                   max_lines: int) -> dict[str, Any]:
    """What `/state.json` answers."""
    from cli.report.html_figures import mode_hex

    with_rows = sum(1 for run in snapshot.runs if run.rows)
    note = ("Charts appear after the first interval." if not with_rows else
            "Hover for values, drag to zoom, double-click to reset; click a legend entry to "
            "hide or show a run." + (f" Over time: the latest {max_lines} of {with_rows} runs."
                                     if with_rows > max_lines else ""))
    sweep = snapshot.sweep
    return {
        "title": snapshot.title,
        "version": snapshot.version,
        "figures_version": snapshot.figures_version,
        "elapsed_s": round(snapshot.elapsed_s, 1),
        "finished": snapshot.finished,
        "report": "report.html" if snapshot.report else None,
        "report_path": str(snapshot.report) if snapshot.report else None,
        "runs": [{"label": run.label, "mode": run.mode, "done": run.done,
                  "color": mode_hex(run.mode), "progress": run.progress,
                  "totals": run.totals(),
                  "last": {k: v for k, v in (run.rows[-1] if run.rows else {}).items()
                           if k != "latency_us"}} for run in snapshot.runs],
        "sweep": None if sweep is None else {"done": sweep.done, "total": sweep.total,
                                             "eta": _eta(sweep.eta_s),
                                             "current": sweep.current},
        "warnings": snapshot.warnings,
        "lines_note": note,
        "figures": figures,
    }
