"""`kbatch produce`: its options; what it does is in cli.run_steps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from cli.broker_cost_opts import broker_metrics_option
from cli.client_build_opts import client_build_options
from cli.client_opts import client_options
from cli.closed_loop_opts import closed_loop_options
from cli.consume_opts import consume_options
from cli.dashboard_opts import dashboard_option
from cli.errors import friendly_errors
from cli.lazy_group import guarded_import
from cli.mode_opts import ModeChoice
from cli.options import (
    lab_options,
    workload_options,
)
from cli.payload_opts import payload_options
from cli.perf_test_opts import (
    PerfTestArgs,
    perf_test_options,
)
from cli.run_opts import (
    delivery_options,
    output_options,
    results_dir_options,
    runner_options,
)
from cli.txn_opts import transaction_options
from producer_core.config import settings_help
from producer_core.modes import mode_help


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
    guarded_import("cli.run_steps").produce(**arguments)
