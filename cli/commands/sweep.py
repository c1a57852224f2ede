"""`kbatch sweep`: a grid of modes × windows (× rates × any -X axis), one results
directory, the Pareto frontier, and the setting that meets a latency SLO with the fewest
requests. Its options; what it does is in cli.steps.sweep (the logic in
producer_core.analysis.sweep, pure, and producer_core.analysis.sweep_run)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from cli.app.errors import friendly_errors
from cli.app.lazy_group import guarded_import
from cli.app.once import one_value
from cli.dashboard.options import dashboard_option
from cli.options.broker_cost import broker_metrics_option
from cli.options.closed_loop import closed_loop_options
from cli.options.common import lab_options, workload_options
from cli.options.consume import consume_options
from producer_core.config import MODES
from producer_core.distributed.limits import MASTER_FORMS, MAX_WORKERS

DEFAULT_WINDOWS = "0,1,2,5,10,20,50,100,200,500"


@click.command("sweep")
@click.option("--modes", "modes_text", default="partition,broker", show_default=True,
              help="Comma-separated modes to sweep.")
@click.option("--windows", "windows_text", default=DEFAULT_WINDOWS, show_default=True,
              metavar="MS[,MS...]",
              help="Linger windows, each applied to the mode's own window setting: "
                   "linger.ms (partition, java, librdkafka), broker.linger.ms (broker, "
                   "librdkafka-broker), "
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
@closed_loop_options
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
              default=("requests",), show_default=True, multiple=True, callback=one_value,
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
def sweep(**arguments: Any) -> None:
    """Sweep linger modes and windows; find the setting that meets a latency SLO with the
    fewest requests.

    Each cell (a mode with one value per axis) runs on a fresh topic with the same
    message sequence (same seed). Example, seed 000's next steps:

    kbatch sweep --partitions 1000 --rate 20000 --duration 10 --modes partition,broker
    --windows 5,20,50,100,200,500 --axis broker.batch.max.partitions=-1,100 --slo 'p99<=500ms'
    --out sweep-out
    """
    # the engine, brokers, Spark planner and results: imported to run, not for --help
    guarded_import("cli.steps.sweep").sweep(**arguments)
