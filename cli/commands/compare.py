"""`kbatch compare-modes`: its options; what it does is in cli.steps.run."""

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
from cli.options.payload import payload_options
from cli.options.run import (
    delivery_options,
    output_options,
    results_dir_options,
    runner_options,
)
from cli.options.txn import transaction_options


@click.command("compare-modes")
@click.option("--modes", "modes_text", default="librdkafka,partition,java,broker",
              show_default=True,
              help="Comma-separated modes to compare; the first is the baseline of the "
                   "change columns (by default librdkafka, the client run today).")
@click.option("--mode-config", "mode_configs", multiple=True, metavar="MODE:KEY=VALUE",
              help="A setting for one mode only, e.g. --mode-config partition:linger.ms=500 "
                   "--mode-config broker:broker.linger.ms=500. Repeatable.")
@click.option("--linger-ms", type=click.IntRange(0, 900_000), default=None,
              help="One linger window for every mode: sets linger.ms (librdkafka, "
                   "partition, java, none), broker.linger.ms for modes broker and "
                   "librdkafka-broker, or "
                   "bruce.combined.max.delay.ms for mode bruce; modes "
                   "adaptive and aimd choose their own window and get none. "
                   "--mode-config still wins.")
@workload_options
@closed_loop_options
@client_build_options
@payload_options
@click.option("-X", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Producer setting applied to every mode (see kbatch produce --help).")
@click.option("--repeat", type=click.IntRange(1, 100), default=1, show_default=True,
              help="Run the modes interleaved this many times; report median (min-max).")
@click.option("--bootstrap-servers", default=None, metavar="HOST:PORT[,...]",
              help="Kafka cluster to use. Default: an embedded Tansu broker started afresh "
                   "for each run (Tansu's cost per idempotent batch grows with every "
                   "producer it has seen; --broker kafka is one cluster for all runs).")
@client_options
@lab_options
@runner_options
@output_options
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="Write every run and the summary as JSON to this file "
                                 "('-': to stdout, and everything else to stderr).")
@results_dir_options
@transaction_options
@delivery_options
@dashboard_option
@broker_metrics_option
@friendly_errors
@consume_options
def compare_modes(**arguments: Any) -> None:
    """Run one workload under several modes and show them side by side.

    Each mode runs on a fresh topic with the same partitions and the same message sequence
    (same seed). Example, the broker-level linger benchmark:

    kbatch compare-modes --partitions 1000 --rate 20000 --duration 30 --linger-ms 500
    """
    # the engine, brokers and results: imported to run, not for --help
    guarded_import("cli.steps.run").compare_modes(**arguments)
