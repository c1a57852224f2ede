"""What `kbatch report` does once its options are parsed (its options: cli.commands.report):
the saved results as the live tables, as Markdown, and as PNG charts. Imported by the
command's body, not by its declaration: the results readers (numpy, the histograms, the
schema) are not for --help (cli/app/lazy_group.py)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from cli.app.output_paths import writable_dir, writable_file
from cli.render.markdown import table_to_markdown
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
from cli.render.tables import console, out
from producer_core.engine.modes import keeps_request_log
from producer_core.results.histogram import LatencyHistogram
from producer_core.results.metrics import E2E_HISTOGRAM_KEY
from producer_core.results.results_io import (
    LoadedResults,
    load_results,
    merge_encoded,
    run_group,
)


def write_charts(loaded: Sequence[LoadedResults], out_dir: Path) -> dict[str, Path]:
    """latency.png, requests.png, over_time.png (from the runs' intervals) and, for runs
    without intervals (older results), requests_per_second.png from their request logs."""
    from cli.charts.charts import latency_chart, over_time_chart, requests_chart, rps_chart

    charts: dict[str, Path] = {}
    searches = [item for item in loaded if item.document.get("kind") == "capacity"]
    if searches:  # a capacity search's chart is its probes (capacity.png); no per-mode medians
        from cli.charts.capacity import capacity_chart

        for index, item in enumerate(searches):
            name = "capacity" if index == 0 else f"capacity_{index + 1}"
            charts[name] = capacity_chart(item.document, out_dir / f"{name}.png")
        loaded = [item for item in loaded if item not in searches]
        if not loaded:
            return charts
    labels = mode_labels(loaded)
    modes = [mode for _, mode, _ in labels]
    from cli.charts.sweep import sweep_charts  # a sweep's frontier.png comes first

    charts.update(sweep_charts(loaded, out_dir))
    histograms: dict[str, LatencyHistogram] = {
        label: item.latency_histogram(mode) for item, mode, label in labels}
    charts["latency"] = latency_chart(histograms, out_dir / "latency.png", modes=modes)
    with_e2e = {label: (mode, histograms[label], e2e) for item, mode, label in labels
                if (e2e := _e2e_histogram(item, mode)) is not None}
    if with_e2e:
        from cli.charts.charts import ack_vs_e2e_chart

        charts["ack_vs_e2e"] = ack_vs_e2e_chart(with_e2e, out_dir / "ack_vs_e2e.png")
    charts["requests"] = requests_chart(
        [label for _, _, label in labels],
        [median_of(item, mode, "requests_sent") for item, mode, _ in labels],
        [median_of(item, mode, "msgs_per_req") for item, mode, _ in labels],
        out_dir / "requests.png", modes=modes)
    over_time: dict[str, tuple[str, list[dict[str, Any]]]] = {}
    series: dict[str, np.ndarray] = {}
    series_modes: list[str] = []
    for item in loaded:
        for run in item.runs:
            label = run_label(item, run)
            label = f"{results_name(item)}: {label}" if len(loaded) > 1 else label
            rows = (run.get("intervals") or {}).get("run")
            if rows:
                over_time[label] = (run["mode"], rows)
                continue
            log = item.companion(run, "requests")
            if log is None:
                continue
            from producer_core.results.request_log import read_request_log

            times = read_request_log(log).column("send_time_s").to_numpy()
            if times.size == 0:  # mode librdkafka: the client reports totals only
                continue
            series[label] = times
            series_modes.append(run["mode"])
    if over_time:
        charts["over_time"] = over_time_chart(over_time, out_dir / "over_time.png")
    if series:
        charts["requests_per_second"] = rps_chart(series, out_dir / "requests_per_second.png",
                                                  modes=series_modes)
    from cli.charts.broker_cost import broker_cost_chart

    cost = broker_cost_chart(
        [(f"{results_name(item)}: {run_label(item, run)}" if len(loaded) > 1
          else run_label(item, run), run["mode"], run["broker_cost"])
         for item in loaded for run in item.runs if run.get("broker_cost")],
        out_dir / "broker_cost.png")
    if cost is not None:
        charts["broker_cost"] = cost
    return charts


def _e2e_histogram(item: LoadedResults, mode: str) -> LatencyHistogram | None:
    """A mode's end-to-end latency merged over its rounds, if every round had consumers."""
    runs = [run for run in item.runs if run_group(run) == mode]
    blobs = [run.get("histograms", {}).get(E2E_HISTOGRAM_KEY) for run in runs]
    if not blobs or any(blob is None for blob in blobs):
        return None
    return merge_encoded(blobs)


def _missing_over_time(loaded: Sequence[LoadedResults]) -> list[str]:
    """Runs that no over-time chart shows, so the report can say so."""
    return [f"{results_name(item)}: {run_label(item, run)}" for item in loaded for run in item.runs
            if not (run.get("intervals") or {}).get("run")
            and (item.companion(run, "requests") is None or not keeps_request_log(run["mode"]))]


_CHART_TITLES = {
    "latency": "Ack latency percentile distribution",
    "ack_vs_e2e": "Ack and end-to-end latency per mode (runs with --consume)",
    "requests": "Requests sent and messages per request",
    "over_time": "Rate, MB/s, requests per second and latency over time",
    "requests_per_second": "Requests per second",
    "frontier": "Sweep: requests per second against latency, per mode",
    "capacity": "Capacity search: probe rates against latency, the highest sustained marked",
    "broker_cost": "Broker CPU per mode and node, and per million messages",
}


def markdown_report(loaded: Sequence[LoadedResults], charts: dict[str, Path],
                    markdown_path: Path) -> str:
    """The report as Markdown; chart links are relative to ``markdown_path``."""
    lines = ["# kbatch report", ""]
    for item in loaded:
        lines += [f"## {item.path}", "", *fact_lines(item), ""]
        lines += [table_to_markdown(live_table(item)), table_to_markdown(latency_table(item))]
        lines += [table_to_markdown(t) for t in run_topic_tables(item)]
        warnings = [(run["mode"], w) for run in item.runs for w in run.get("warnings", [])]
        if warnings:
            lines += ["**Warnings**", ""] + [f"- {mode}: {w}" for mode, w in warnings] + [""]
        from cli.charts.sweep import sweep_markdown

        lines += sweep_markdown(item.document)
    if charts:
        lines += ["## Charts", ""]
        for key, path in charts.items():
            link = Path(os.path.relpath(path, markdown_path.parent)).as_posix()
            title = _CHART_TITLES.get(key.rstrip("_0123456789"), key)
            lines += [f"![{title}]({link})", ""]
    missing = _missing_over_time(loaded) if charts else []
    if missing:
        lines += ["(Not in the charts over time, having neither intervals nor a per-request "
                  f"log: {', '.join(missing)}. Results of this kbatch carry intervals.)", ""]
    return "\n".join(lines)


def _print_tables(loaded: Sequence[LoadedResults]) -> None:
    for item in loaded:
        out.print(live_table(item))
        out.print(latency_table(item))
        for table in run_topic_tables(item):
            out.print(table)


def write_html_report(loaded: Sequence[LoadedResults], path: Path) -> Path:
    """The self-contained HTML report (cli/report/html_report.py), written atomically."""
    from cli.report.html_report import build_report

    if str(path) == "-":
        sys.stdout.write(build_report(loaded))
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(build_report(loaded), encoding="utf-8")
    tmp.replace(path)
    return path


def report(inputs: tuple[Path, ...], out_dir: Path | None, markdown_path: Path | None,
           charts: bool, html_path: Path | None = None) -> None:
    """The body of `kbatch report` (its options: cli.commands.report)."""
    loaded = [load_results(path) for path in inputs]
    if html_path is not None:
        writable_file(html_path, "--html")
        if out_dir is None and markdown_path is None:  # the page alone
            if str(html_path) == "-":  # the page is the output
                write_html_report(loaded, html_path)
                return
            _print_tables(loaded)
            console.print(f"Report written: {write_html_report(loaded, html_path)}.")
            return
    if out_dir is None:
        out_dir = inputs[0] / "report" if len(inputs) == 1 and inputs[0].is_dir() else Path(
            "kbatch-report")
    if charts or markdown_path is None:
        writable_dir(out_dir, "--out")
    if markdown_path is not None:
        writable_file(markdown_path, "--markdown")
    for item in loaded:
        out.print(live_table(item))
        out.print(latency_table(item))
        for table in run_topic_tables(item):
            out.print(table)
    written = write_charts(loaded, out_dir) if charts else {}
    markdown_path = markdown_path or out_dir / "report.md"
    markdown_path.parent.mkdir(parents=True, exist_ok=True)
    markdown_path.write_text(markdown_report(loaded, written, markdown_path), encoding="utf-8")
    files = [markdown_path, *written.values()]
    if html_path is not None:
        files.append(write_html_report(loaded, html_path))
    console.print("Report written: " + ", ".join(str(f) for f in files) + ".")
