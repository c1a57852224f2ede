"""What `kbatch sweep` does once its options are parsed (its options: cli.commands.sweep).

Imported by the command's body, not by its declaration: the engine, the brokers, the
Spark planner, rich's progress bar and the results writers come in here, which `--help`
does not need (cli/app/lazy_group.py). The runs go through cli.steps.pipeline, as produce's and
compare-modes' do. A signal stops the cell in progress and ends the sweep: the cells that
finished are on disk, and `--resume` runs the rest (the one cut short among them).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from cli.app.errors import EXIT_RUNTIME
from cli.app.output_paths import writable_dir
from cli.app.stopping import StopOnSignal
from cli.dashboard.server import finish_dashboard, open_dashboard, sweep_hooks
from cli.options.broker_cost import broker_endpoints
from cli.options.closed_loop import closed_loop_from_flags, with_closed_loop
from cli.options.common import lab_shape, workload_from_flags
from cli.options.spark import Runner, checked_spark_target
from cli.render.results_tables import duration_text, sweep_table
from cli.render.tables import console, out
from cli.steps.pipeline import install_clients, run_pipeline
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
from producer_core.config import MODES, parse_assignment
from producer_core.errors import Interrupted, UsageError


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
    from producer_core.distributed.sweep_spark import SparkCells

    master, workers, conf = checked_spark_target(workers, master_url, conf_items, bootstrap,
                                                 own_brokers=True)
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
        return duration_text(eta_s(self.seconds, remaining, self.estimate_s / self.parallel))

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


def sweep(modes_text: str, windows_text: str, rates_text: str | None,
          axes_text: tuple[str, ...], overrides: tuple[str, ...], repeats: int,
          slo_texts: tuple[str, ...], reference_mode: str, minimize: str,
          bootstrap_servers: str | None,
          runner: str, workers: int | None, spark_master: str | None,
          spark_conf: tuple[str, ...], out_dir: Path, resume: bool, chart: bool,
          progress: bool, consume: Any = None, **workload_flags: Any) -> None:
    """The body of `kbatch sweep` (its options: cli.commands.sweep)."""
    dashboard_spec = workload_flags.pop("dashboard")
    shape = lab_shape(workload_flags)
    endpoints = broker_endpoints(workload_flags, bootstrap_servers)
    plan = plan_sweep(modes_text, windows_text, rates_text, axes_text, overrides, repeats,
                      slo_texts, reference_mode, minimize, runner, consume, workload_flags)
    modes, cells = plan.grid["modes"], plan.cells
    writable_dir(out_dir, "--out")  # before any cell runs, not after the first one
    install_clients(modes)
    spark = spark_cells(runner, workers, spark_master, spark_conf, bootstrap_servers, shape)
    open_dashboard(dashboard_spec, f"kbatch sweep {','.join(modes)}")
    own_brokers = ("its own embedded broker per cell"  # every Spark task starts its own
                   if spark is not None and not bootstrap_servers else None)
    # Locally a signal stops the cell in progress (kept out of the results, it runs again
    # on --resume); Spark's waves cannot take the stop event, so there it interrupts at once.
    with StopOnSignal() as stopper, \
            run_pipeline(Runner(), stopper, bootstrap_servers, shape, endpoints,
                         consume=consume, announce=False, graceful=spark is None,
                         own_brokers=own_brokers) as setup, ExitStack() as stack:
        target = setup.target
        if spark is not None:
            console.print(f"Starting Spark ({spark.master.url})...")
            stack.enter_context(spark)
        sweeper = SweepRunner(plan, out_dir, target.bootstrap, setup.run, target.description,
                              target.embedded, execute=spark,
                              implementation=target.implementation, version=target.version,
                              stop=setup.stop.get("stop"))
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
            if stopper.signum is not None:  # exit 128 + the signal that stopped it
                raise Interrupted(stopper.signum) from None
            raise
    show_sweep(document, plan, out_dir, chart)


def plan_sweep(modes_text: str, windows_text: str, rates_text: str | None,
               axes_text: tuple[str, ...], overrides: tuple[str, ...], repeats: int,
               slo_texts: tuple[str, ...], reference_mode: str, minimize: str, runner: str,
               consume: Any, workload_flags: dict[str, Any]) -> SweepPlan:
    """The options checked and expanded into the sweep's cells: a usage error for bad
    input, before anything starts."""
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
            click.get_current_context().get_parameter_source("rate") == \
            click.core.ParameterSource.COMMANDLINE:
        raise UsageError("--rate and --rates cannot be combined: --rates gives the rates.")
    cells = expand_grid(modes, windows, rates, axes)
    check_cells(cells, common)
    if rates_text and workload_flags.get("closed_loop") is not None:
        raise UsageError("--rates and --closed-loop cannot be combined: a closed loop's "
                         "rate is an outcome, not an input.")
    loop = closed_loop_from_flags(workload_flags)
    workload = with_closed_loop(workload_from_flags(**workload_flags), loop)
    grid = {"modes": modes, "windows": windows, "rates": rates,
            "axes": {k: v for k, v in axes}, "settings": {k: v for k, v in common}}
    return SweepPlan(cells, repeats, workload, common, grid, slo, reference_mode, minimize)


def show_sweep(document: dict[str, Any], plan: SweepPlan, out_dir: Path, chart: bool) -> None:
    """The table, failed cells, the recommendation and the chart; exit EXIT_RUNTIME when a
    cell could not run."""
    repeats = plan.repeats
    out.print(sweep_table(document))
    failed = [c["id"] for c in document["sweep"]["cells"] if c["status"] == "failed"]
    if failed:
        console.print(f"[red]{len(failed)} cell(s) failed:[/red] {', '.join(failed)}.")
    unrun = [c["id"] for c in document["sweep"]["cells"]
             if c["status"] == "failed" and c["repeats_done"] < repeats]
    recommendation = document["sweep"].get("recommendation")
    if recommendation:
        slo_text = plan.slo.text if plan.slo else None
        out.print(f"Recommendation for {slo_text}: {recommendation['text']}", highlight=False)
    if chart and document["modes"]:
        from cli.charts.sweep import frontier_chart

        console.print(f"Chart written to {frontier_chart(document, out_dir / 'frontier.png')}.")
    console.print(f"Results written to {out_dir / 'results.json'}.")
    finish_dashboard(out_dir / "results.json", out_dir)
    if unrun:  # a run that raised is a runtime failure, as in produce and compare-modes
        console.print(f"[red]{len(unrun)} cell(s) could not run (see their reason above): "
                      f"{', '.join(unrun)}; exit {EXIT_RUNTIME}.[/red]", soft_wrap=True)
        sys.exit(EXIT_RUNTIME)
