"""`kbatch produce`: its options; what it does is in cli.steps.run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from cli.app.errors import friendly_errors
from cli.app.lazy_group import guarded_import
from cli.dashboard.options import dashboard_option
from cli.options.broker_cost import broker_metrics_option
from cli.options.client import client_options
from cli.options.client_build import client_build_options
from cli.options.closed_loop import closed_loop_options
from cli.options.common import (
    lab_options,
    workload_options,
)
from cli.options.consume import consume_options
from cli.options.mode import ModeChoice
from cli.options.payload import payload_options
from cli.options.perf_test import (
    PerfTestArgs,
    perf_test_options,
)
from cli.options.run import (
    delivery_options,
    output_options,
    results_dir_options,
    runner_options,
)
from cli.options.txn import transaction_options
from producer_core.config import settings_help
from producer_core.engine.modes import mode_help


@click.command(cls=PerfTestArgs, epilog="Producer settings (-X key=value):\n\n" +
             settings_help().replace("\n", "\n\n"))
@click.option("--mode", type=ModeChoice(), default="partition", show_default=True,
              help=mode_help())
@workload_options
@closed_loop_options
@client_build_options
@payload_options
@click.option("-X", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Producer setting with Kafka's name, e.g. -X linger.ms=10 -X acks=all. "
                   "Repeatable. See the list below.")
@click.option("--bootstrap-servers", "--bootstrap-server", "bootstrap_servers", default=None,
              metavar="HOST:PORT[,...]",
              help="Kafka cluster to use. Default: start an embedded Tansu broker for this run.")
@client_options
@lab_options
@runner_options
@output_options
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="Write the results JSON to this file ('-': to stdout, "
                                 "and everything else to stderr).")
@results_dir_options
@perf_test_options
@transaction_options
@delivery_options
@dashboard_option
@broker_metrics_option
@friendly_errors
@consume_options
def produce(**arguments: Any) -> None:
    """Produce a workload in one linger mode and report what it cost.

    Example: kbatch produce --partitions 64 --rate 20000 --duration 10 -X linger.ms=50
    """
    # the engine, brokers and results: imported to run, not for --help
    guarded_import("cli.steps.run").produce(**arguments)
