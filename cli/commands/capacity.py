"""`kbatch capacity`: the highest rate each mode sustains within an SLO.

For each mode of `--modes`, a bracketing search (`producer_core.analysis.capacity`) runs
short probes at chosen rates on the same workload shape, each on a fresh topic (and, on
the embedded broker, a fresh broker), and prints a line per probe as it ends, so a long
search shows where it is. The answer per mode is `max_sustainable_msgs_per_s`: in the
table, in the results JSON (`--json`, kind `capacity`, every probe a run), as a gate
metric (`MODE.max_sustainable_msgs_per_s`), and as a chart (`--out DIR`: capacity.png).
Its options; what it does is in cli.steps.capacity.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from cli.app.errors import friendly_errors
from cli.app.lazy_group import guarded_import
from cli.app.once import one_value
from cli.dashboard.options import dashboard_option
from cli.options.bounded import FiniteFloat
from cli.options.client import client_options
from cli.options.common import lab_options
from cli.options.output_mode import output_options
from producer_core import bounds
from producer_core.analysis.capacity import DEFAULT_MAX_LAG_MS


@click.command("capacity")
@click.option("--modes", "modes_text", default="partition", show_default=True,
              help="Comma-separated modes; each gets its own search.")
@click.option("--slo", "slo_text", required=True, metavar="METRIC<=LIMIT", multiple=True,
              callback=one_value,
              help="Latency objective every probe must meet, e.g. 'p99<=100ms' (ack "
                   "latency; end-to-end latency too when the run measures it).")
@click.option("--start-rate", type=FiniteFloat(bounds.MIN_RATE, bounds.MAX_RATE,
                                               unit="msg/s"), default=1000.0,
              show_default=True, help="First probe's rate; doubled (or halved) until the "
                                      "boundary is bracketed.")
@click.option("--max-rate", type=FiniteFloat(bounds.MIN_RATE, bounds.MAX_RATE, unit="msg/s"),
              default=1_000_000.0, show_default=True, help="Highest rate to probe.")
@click.option("--precision", type=FiniteFloat(0.001, 1.0), default=0.05,
              show_default=True, help="Stop bisecting once the bracket is this narrow "
                                      "(0.05: the upper end within 5% of the lower).")
@click.option("--repeats", type=click.IntRange(0, 10), default=2, show_default=True,
              help="Extra probes of the boundary rate; one failure moves it down.")
@click.option("--max-probes", type=click.IntRange(1, 200), default=25, show_default=True,
              help="Probes per mode at most.")
@click.option("--max-lag-ms", type=FiniteFloat(0, 3_600_000, unit="ms"),
              default=DEFAULT_MAX_LAG_MS, show_default=True,
              help="Generator lag p99 a probe may show (above it the producer did not keep "
                   "up, and its latency was not measured at the rate).")
@click.option("--duration", type=FiniteFloat(0.1, bounds.MAX_DURATION_S, unit="seconds"),
              default=5.0, show_default=True, help="Seconds per probe.")
@click.option("--warmup", type=FiniteFloat(0, bounds.MAX_DURATION_S, unit="seconds"),
              default=1.0, show_default=True,
              help="Seconds of each probe left out of its latency.")
@click.option("--partitions", type=click.IntRange(1, 100_000), default=16, show_default=True)
@click.option("--message-size", type=click.IntRange(0, 64 * 1024 * 1024), default=100,
              show_default=True)
@click.option("--keys", type=click.IntRange(0, bounds.MAX_KEYS), default=0, show_default=True)
@click.option("--seed", type=click.IntRange(0, bounds.MAX_SEED), default=1, show_default=True)
@click.option("-X", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Producer setting for every mode (see kbatch produce --help).")
@click.option("--mode-config", "mode_configs", multiple=True, metavar="MODE:KEY=VALUE",
              help="A setting for one mode only. Repeatable.")
@click.option("--linger-ms", type=click.IntRange(0, 900_000), default=None,
              help="One linger window for every mode (as compare-modes' --linger-ms).")
@click.option("--bootstrap-servers", "--bootstrap-server", "bootstrap_servers", default=None,
              metavar="HOST:PORT[,...]", help="Kafka cluster to use. Default: an embedded "
                                              "Tansu broker started afresh for each probe.")
@client_options
@lab_options
@output_options
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="Write the search and every probe as JSON to this file.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="Write capacity.json and the chart capacity.png here.")
@click.option("--progress/--no-progress", default=True, show_default=True,
              help="Live progress display of each probe (only shown on a terminal).")
@dashboard_option
@friendly_errors
def capacity(**arguments: Any) -> None:
    """Find the highest rate each mode sustains within --slo.

    A probe sustains its rate when it achieves it within 1%, its generator lag p99 stays
    under --max-lag-ms, every message is acknowledged, and the SLO holds. Example:

    kbatch capacity --modes partition,broker --slo 'p99<=100ms' --partitions 16
    """
    # the engine, brokers and results: imported to run, not for --help
    guarded_import("cli.steps.capacity").capacity(**arguments)
