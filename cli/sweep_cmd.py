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
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from cli.broker_cost_opts import broker_endpoints, broker_metrics_option
from cli.consume_opts import consume_options, consuming
from cli.dashboard import dashboard_option, finish_dashboard, open_dashboard, sweep_hooks
from cli.errors import friendly_errors
from cli.options import lab_options, lab_shape, workload_from_flags, workload_options
from cli.output_paths import writable_dir
from cli.render import console, out
from cli.results_tables import _duration, sweep_table
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
from producer_core.config import MODES, parse_assignment
from producer_core.distributed.plan import MASTER_FORMS, MAX_WORKERS
from producer_core.errors import UsageError
from producer_core.measure.per_run import run_targets

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
