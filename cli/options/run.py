"""Option declarations that `produce` and `compare-modes` share, light to import.

Declarations only (no rich, engine or Spark planner): the commands' `--help` reads them.
What the flags do is in cli.options.output_mode, cli.options.spark and cli.steps.run.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from cli.options.bounded import FiniteFloat
from producer_core.bounds import MAX_DURATION_S, MAX_START_LEAD_S
from producer_core.distributed.limits import DEFAULT_START_LEAD_S, MASTER_FORMS, MAX_WORKERS
from producer_core.results.metric_catalog import DEFAULT_INTERVAL_S

OUT_HELP = ("Write a results directory: results.json (schema v1), and per run the latency "
            ".hgrm, the encoded histogram and the per-request log (Parquet). "
            "See docs/reference/results.md.")


def results_dir_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """`--out DIR`, `--overwrite` and `--progress/--no-progress`, shared by `produce` and
    `compare-modes` (declared once so their help stays the same)."""
    options = [
        click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
                     default=None, help=OUT_HELP),
        click.option("--overwrite", is_flag=True, default=False,
                     help="Let --out replace a results directory that holds another mode's "
                          "or kind's results (without it, such a directory is refused)."),
        click.option("--progress/--no-progress", default=True, show_default=True,
                     help="Live progress display (only shown on a terminal)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def delivery_options(func: Any) -> Any:
    """`--verify` and `--allow-failures`, shared by `produce` and `compare-modes`."""
    func = click.option(
        "--allow-failures", is_flag=True,
        help="Exit 0 even when messages failed or have an unknown outcome (runs that "
             "expect faults); they are still reported. --verify problems still exit 4.")(func)
    return click.option(
        "--verify", is_flag=True,
        help="After the run, read every produced partition back from the offsets the run "
             "started at and report present / missing / duplicated / out-of-order messages "
             "per topic (results JSON 'verify'). Exit 4 when an acknowledged message is "
             "missing, or on a duplicate or reorder with idempotence on.")(func)


OUTPUT_FLAGS = ("report_interval", "quiet")


def output_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """`--report-interval S` and `--quiet`, shared by `produce` and `compare-modes`."""
    options = [
        click.option("--report-interval", type=FiniteFloat(0, MAX_DURATION_S, unit="seconds"),
                     default=DEFAULT_INTERVAL_S,
                     show_default=True, metavar="SECONDS",
                     help="Report each interval of this many seconds (messages/s, MB/s, "
                          "requests/s, msgs/req, p50/p99, failures): live on a terminal, "
                          "plain lines otherwise; also the results JSON's `intervals`. 0: no "
                          "lines (the JSON keeps 5 s intervals)."),
        click.option("--quiet", is_flag=True, default=False,
                     help="Print nothing but errors (the exit code and --json/--out still "
                          "tell the outcome)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


RUNNER_FLAGS = ("runner", "workers", "spark_master", "spark_start_lead", "spark_conf")


def runner_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The runner flags, shared by `produce` and `compare-modes`."""
    options = [
        click.option("--runner", type=click.Choice(["local", "spark"]), default="local",
                     show_default=True,
                     help="'local': one engine in this process. 'spark': the workload split "
                          "into --workers shares, each a Spark task running the engine; the "
                          "results merged exactly. Needs pip install 'kbatch[spark]'."),
        click.option("--workers", type=click.IntRange(1, MAX_WORKERS), default=None,
                     help="Shares of a --runner spark run (default 2); their rates add up "
                          "to the target."),
        click.option("--spark-master", default=None, metavar="URL",
                     help=f"Spark master for --runner spark (default local[N] for --workers "
                          f"N: this machine, no cluster). Forms: {MASTER_FORMS}."),
        click.option("--spark-start-lead", default=None,
                     type=FiniteFloat(0, MAX_START_LEAD_S, unit="seconds"),
                     metavar="SECONDS",
                     help=f"Seconds between planning and the shares' common start instant "
                          f"(default {DEFAULT_START_LEAD_S:g}); must cover Spark's task "
                          "launch."),
        click.option("--spark-conf", multiple=True, metavar="KEY=VALUE",
                     help="A Spark setting, e.g. --spark-conf spark.executor.memory=2g. "
                          "Repeatable."),
    ]
    for option in reversed(options):
        func = option(func)
    return func
