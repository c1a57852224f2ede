"""`kbatch sweep`: a grid of modes × windows (× rates × any -X axis), one results
directory, the Pareto frontier, and the setting that meets a latency SLO with the fewest
requests. The logic is in producer_core.analysis.sweep (pure) and
producer_core.analysis.sweep_run."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import click
from rich import box
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from cli.broker_cost_opts import broker_endpoints, broker_metrics_option
from cli.consume_opts import consume_options, consuming
from cli.dashboard import dashboard_option, finish_dashboard, open_dashboard, sweep_hooks
from cli.errors import friendly_errors
from cli.options import lab_options, lab_shape, workload_from_flags, workload_options
from cli.output_paths import writable_dir
from cli.render import console, out
from producer_core.analysis.compare import parse_modes
from producer_core.analysis.sweep import (
    check_cells,
    eta_s,
    expand_grid,
    parse_axis,
    parse_int_list,
    parse_rate_list,
    parse_slo,
)
from producer_core.analysis.sweep_run import SweepPlan, SweepRunner
from producer_core.brokers import BrokerTarget
from producer_core.brokers.per_run import run_targets
from producer_core.config import MODES, parse_assignment
from producer_core.distributed.plan import MASTER_FORMS, MAX_WORKERS
from producer_core.errors import UsageError

DEFAULT_WINDOWS = "0,1,2,5,10,20,50,100,200,500"


def spark_cells(runner: str, workers: int | None, master_url: str | None,
                conf_items: tuple[str, ...], bootstrap: str | None,
                shape: dict[str, Any]) -> Any:
    """The Spark executor of `--runner spark`, checked before anything starts; None: local."""
    if runner != "spark":
        given = [name for name, value in (("--workers", workers),
                                          ("--spark-master", master_url),
                                          ("--spark-conf", conf_items)) if value]
        if given:
            raise UsageError(f"{', '.join(given)} only apply with --runner spark.")
        return None
    from producer_core.distributed.plan import (
        check_reachable,
        check_slots,
        default_master,
        parse_master,
    )
    from producer_core.distributed.session import parse_conf, require_pyspark
    from producer_core.distributed.sweep_spark import SparkCells

    workers = workers or 2
    master = parse_master(master_url or default_master(workers))
    check_slots(master, workers)
    if bootstrap:  # without one, each task's own broker is on the task's machine
        check_reachable(master, bootstrap)
    conf = parse_conf(conf_items)
    require_pyspark("--runner spark")
    return SparkCells(master, workers, conf, shape)


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class SweepProgress:
    """Cells done, the cell running, and the ETA: a rich bar on a terminal, plain lines
    otherwise (CI logs)."""

    def __init__(self, total: int, estimate_s: float, enabled: bool,
                 parallel: int = 1) -> None:
        self.total = total
        self.parallel = parallel  # cells running at once (Spark): the ETA divides by it
        self.estimate_s = estimate_s
        self.seconds: list[float] = []
        self.live = enabled and console.is_terminal
        self.bar: Progress | None = None
        self.task: Any = None

    @contextmanager
    def shown(self) -> Iterator[SweepProgress]:
        if not self.live:
            yield self
            return
        self.bar = Progress(TextColumn("{task.description}"), BarColumn(),
                            MofNCompleteColumn(), TimeElapsedColumn(),
                            TextColumn("ETA {task.fields[eta]}"), console=console,
                            transient=True)
        with self.bar:
            self.task = self.bar.add_task("sweep", total=self.total,
                                          eta=self.eta(self.total))
            yield self

    def eta(self, remaining: int) -> str:
        # Spark: a unit's seconds are its wave's divided by the cells in it.
        return _duration(eta_s(self.seconds, remaining, self.estimate_s / self.parallel))

    def start(self, cell: Any, round_index: int, index: int, total: int) -> None:
        what = f"{cell.id} round {round_index}"
        if self.bar is not None:
            self.bar.update(self.task, description=what, eta=self.eta(total - index))
        else:
            console.print(f"[{index + 1}/{total}] {what} ({cell.label}); "
                          f"ETA {self.eta(total - index)}", highlight=False)
        return None

    def end(self, cell: Any, round_index: int, error: str | None, seconds: float) -> None:
        self.seconds.append(seconds)
        if error is not None:
            console.print(f"[red]Cell {cell.id} failed[/red] ({escape(error)}).",
                          highlight=False)
        if self.bar is not None:
            self.bar.advance(self.task)


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


@click.command("sweep")
@click.option("--modes", "modes_text", default="partition,broker", show_default=True,
              help="Comma-separated modes to sweep.")
@click.option("--windows", "windows_text", default=DEFAULT_WINDOWS, show_default=True,
              metavar="MS[,MS...]",
              help="Linger windows, each applied to the mode's own window setting: "
                   "linger.ms (partition, java, librdkafka), broker.linger.ms (broker), "
                   "bruce.combined.max.delay.ms (bruce), the upper bound "
                   "adaptive.linger.max.ms / aimd.linger.max.ms (adaptive, aimd, which choose "
                   "their window below it); mode none has no window and runs once.")
@click.option("--rates", "rates_text", default=None, metavar="MSG/S[,...]",
              help="Rates to sweep too (one-topic workloads); default: --rate only.")
@click.option("--axis", "axes_text", multiple=True, metavar="KEY=V1,V2,...",
              help="Any producer setting as one more axis, e.g. --axis "
                   "broker.batch.max.partitions=-1,100,333. Repeatable. An axis only "
                   "multiplies the cells of modes its setting applies to.")
@workload_options
@click.option("-X", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Producer setting applied to every cell (see kbatch produce --help).")
@click.option("--repeats", type=click.IntRange(1, 100), default=1, show_default=True,
              help="Runs per cell, interleaved over the grid; figures are the median, with "
                   "the min–max spread.")
@click.option("--slo", "slo_texts", multiple=True, metavar="METRIC<=LIMIT",
              help="Latency objective, e.g. p99<=50ms (METRIC: p50, p95, p99, p999, max; "
                   "LIMIT in ms or s). Prints the cell with the fewest requests/s that meets "
                   "it in every repeat.")
@click.option("--reference-mode", type=click.Choice(MODES), default="partition",
              show_default=True,
              help="The recommendation's comparison: the best cell of this mode that meets "
                   "the SLO.")
@click.option("--minimize", type=click.Choice(["requests", "broker-cpu"]),
              default="requests", show_default=True,
              help="What the --slo recommendation minimises among the cells that meet it: "
                   "requests/s, or the broker's CPU seconds per million messages (measured "
                   "on brokers kbatch starts, or with --broker-metrics).")
@click.option("--bootstrap-servers", default=None, metavar="HOST:PORT[,...]",
              help="Kafka cluster to use. Default: an embedded Tansu broker started afresh "
                   "for each run (--broker kafka: one cluster for all runs).")
@broker_metrics_option
@lab_options
@click.option("--runner", type=click.Choice(["local", "spark"]), default="local",
              show_default=True,
              help="'local': the cells one after the other in this process. 'spark': the "
                   "cells as Spark tasks, --workers at a time, each against "
                   "--bootstrap-servers or its own embedded broker (or lab). Needs pip "
                   "install 'kbatch[spark]'.")
@click.option("--workers", type=click.IntRange(1, MAX_WORKERS), default=None,
              help="Cells running at once with --runner spark (default 2).")
@click.option("--spark-master", default=None, metavar="URL",
              help=f"Spark master for --runner spark (default local[N]). Forms: "
                   f"{MASTER_FORMS}.")
@click.option("--spark-conf", multiple=True, metavar="KEY=VALUE",
              help="A Spark setting, e.g. --spark-conf spark.executor.memory=2g. Repeatable.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              required=True,
              help="Results directory: results.json (a sweep: every cell's runs, the "
                   "frontier and the recommendation), runs/<cell>-<round>/ and frontier.png. "
                   "`kbatch report`, `gate` and `analyze` read it.")
@click.option("--resume", is_flag=True,
              help="Continue the interrupted sweep in --out: run only the cells (and repeats) "
                   "it has no results for; cells that failed run again.")
@click.option("--chart/--no-chart", default=True, show_default=True,
              help="Draw frontier.png (matplotlib).")
@click.option("--progress/--no-progress", default=True, show_default=True,
              help="Progress bar with ETA on a terminal (plain lines otherwise).")
@dashboard_option
@friendly_errors
@consume_options
def sweep(modes_text: str, windows_text: str, rates_text: str | None,
          axes_text: tuple[str, ...], overrides: tuple[str, ...], repeats: int,
          slo_texts: tuple[str, ...], reference_mode: str, minimize: str,
          bootstrap_servers: str | None,
          runner: str, workers: int | None, spark_master: str | None,
          spark_conf: tuple[str, ...], out_dir: Path, resume: bool, chart: bool,
          progress: bool, consume: Any = None, **workload_flags: Any) -> None:
    """Sweep linger modes and windows; find the setting that meets a latency SLO with the
    fewest requests.

    Each cell (a mode with one value per axis) runs on a fresh topic with the same
    message sequence (same seed). Example, seed 000's next steps:

    kbatch sweep --partitions 1000 --rate 20000 --duration 10 --modes partition,broker
    --windows 5,20,50,100,200,500 --axis broker.batch.max.partitions=-1,100 --slo 'p99<=500ms'
    --out sweep-out
    """
    dashboard_spec = workload_flags.pop("dashboard")
    shape = lab_shape(workload_flags)
    endpoints = broker_endpoints(workload_flags, bootstrap_servers)
    modes = parse_modes(modes_text, MODES)
    windows = parse_int_list(windows_text, "--windows")
    rates = parse_rate_list(rates_text) if rates_text else []
    axes = [parse_axis(text) for text in axes_text]
    common = [parse_assignment(text) for text in overrides]
    if len(set(slo_texts)) > 1:
        raise UsageError(f"--slo is given {len(set(slo_texts))} times ({', '.join(slo_texts)});"
                         " a sweep recommends for one objective. Run the sweep once and "
                         "read the other objectives from its results with kbatch gate.")
    slo_text = slo_texts[0] if slo_texts else None
    slo = parse_slo(slo_text) if slo_text else None
    if slo is not None and slo.end_to_end and consume is None:
        raise UsageError(f"--slo {slo_text!r} is an end-to-end objective: add --consume so "
                         "consumers measure it.")
    if consume is not None and runner == "spark":
        raise UsageError("--consume is not available with --runner spark yet: measure "
                         "end-to-end latency with --runner local.")
    source = click.get_current_context().get_parameter_source("reference_mode")
    if slo is None and source == click.core.ParameterSource.COMMANDLINE:
        console.print("[yellow]Warning: --reference-mode applies only with --slo (it picks "
                      "the recommendation's comparison); ignored.[/]")
    if rates and workload_flags.get("workload_file") is None and \
            click.get_current_context().get_parameter_source("rate").name == "COMMANDLINE":
        raise UsageError("--rate and --rates cannot be combined: --rates gives the rates.")
    cells = expand_grid(modes, windows, rates, axes)
    check_cells(cells, common)
    workload = workload_from_flags(**workload_flags)
    grid = {"modes": modes, "windows": windows, "rates": rates,
            "axes": {k: v for k, v in axes}, "settings": {k: v for k, v in common}}
    plan = SweepPlan(cells, repeats, workload, common, grid, slo, reference_mode, minimize)
    writable_dir(out_dir, "--out")  # before any cell runs, not after the first one
    spark = spark_cells(runner, workers, spark_master, spark_conf, bootstrap_servers, shape)
    open_dashboard(dashboard_spec, f"kbatch sweep {','.join(modes)}")
    with ExitStack() as stack:
        if spark is not None and not bootstrap_servers:  # every task starts its own broker
            target = BrokerTarget("", "its own embedded broker per cell", embedded=True)
            on_its_broker = None
        else:
            target, on_its_broker = stack.enter_context(
                run_targets(bootstrap_servers, shape, endpoints))
        if spark is not None:
            console.print(f"Starting Spark ({spark.master.url})...")
            stack.enter_context(spark)
        stack.enter_context(warnings.catch_warnings())
        warnings.simplefilter("ignore")
        from producer_core.brokers.kafka_target import sigterm_as_interrupt
        from producer_core.drivers.engine import run

        run = consuming(run, consume, False, lambda text: console.print(
            f"[yellow]{escape(text)}[/yellow]", soft_wrap=True))
        stack.enter_context(sigterm_as_interrupt())  # SIGTERM unwinds like Ctrl-C: 143
        sweeper = SweepRunner(plan, out_dir, target.bootstrap,
                              on_its_broker(run) if on_its_broker else run, target.description,
                              target.embedded, execute=spark,
                              implementation=target.implementation, version=target.version)
        total = len(cells) * repeats
        console.print(f"Sweeping {len(cells)} cells × {repeats} repeat"
                      f"{'s' if repeats > 1 else ''} = {total} runs on {target.description}"
                      f"{spark.description if spark else ''}.")
        display = SweepProgress(total, plan.estimate_s(), progress,
                                spark.workers if spark else 1)
        sweeper.on_start, sweeper.on_end = sweep_hooks(
            display.start, display.end, total, out_dir,
            lambda left: eta_s(display.seconds, left, display.estimate_s / display.parallel))
        try:
            with display.shown():
                document = sweeper.run(resume)
        except KeyboardInterrupt:
            click.echo(f"Interrupted: the runs finished so far are in {out_dir}; run the "
                       "same command with --resume to continue.", err=True)
            raise
    out.print(sweep_table(document))
    failed = [c["id"] for c in document["sweep"]["cells"] if c["status"] == "failed"]
    if failed:
        console.print(f"[red]{len(failed)} cell(s) failed:[/red] {', '.join(failed)}.")
    recommendation = document["sweep"].get("recommendation")
    if recommendation:
        out.print(f"Recommendation for {slo_text}: {recommendation['text']}", highlight=False)
    if chart and document["modes"]:
        from cli.sweep_chart import frontier_chart

        console.print(f"Chart written to {frontier_chart(document, out_dir / 'frontier.png')}.")
    console.print(f"Results written to {out_dir / 'results.json'}.")
    finish_dashboard(out_dir / "results.json", out_dir)
