"""The `kbatch` command line: parsing, validation messages, and wiring to the engine."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import click

from cli.errors import friendly_errors
from cli.options import settings_from_flags, workload_from_flags, workload_options
from cli.render import console, live_progress, out, print_warnings, summary_table
from producer_core.brokers import broker_target
from producer_core.config import MODES, settings_help
from producer_core.engine import run


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="kbatch")
def cli() -> None:
    """kbatch: measure what a Kafka producer batching (linger) policy really costs.

    Drives a rate-controlled workload through kbatch's producer engine against real
    brokers (an embedded Tansu broker unless --bootstrap-servers is given) and reports
    requests_sent, msgs_per_req and latency percentiles measured from each message's
    intended send time.
    """


def write_json(path: Path, payload: Any) -> None:
    """Write results atomically, so a CI job never reads half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(payload, indent=2, sort_keys=False) + "\n")
    tmp.replace(path)


@cli.command(epilog="Producer settings (-X key=value):\n\n" + settings_help().replace(
    "\n", "\n\n"))
@click.option("--mode", type=click.Choice(MODES), default="partition", show_default=True,
              help="Linger mode: 'partition' = per-partition linger.ms (librdkafka/Java); "
                   "'none' = send whatever is queued as soon as a request slot is free.")
@workload_options
@click.option("-X", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Producer setting with Kafka's name, e.g. -X linger.ms=10 -X acks=all. "
                   "Repeatable. See the list below.")
@click.option("--bootstrap-servers", default=None, metavar="HOST:PORT[,...]",
              help="Kafka cluster to use. Default: start an embedded Tansu broker for this run.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="Write the results JSON to this file.")
@click.option("--progress/--no-progress", default=True, show_default=True,
              help="Live progress display (only shown on a terminal).")
@friendly_errors
def produce(mode: str, overrides: tuple[str, ...], bootstrap_servers: str | None,
            json_path: Path | None, progress: bool, **workload_flags: Any) -> None:
    """Produce a workload in one linger mode and report what it cost.

    Example: kbatch produce --partitions 64 --rate 20000 --duration 10 -X linger.ms=50
    """
    settings = settings_from_flags(overrides, mode)
    workload = workload_from_flags(**workload_flags)
    with broker_target(bootstrap_servers) as target:
        console.print(f"Producing to {target.description}, topic {workload.topic!r}, "
                      f"mode {mode}.")
        with live_progress(f"[{mode}]", progress) as on_progress, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results = run(workload, settings, mode, target.bootstrap, on_progress)
        results.broker = target.description
    payload = results.to_dict()
    out.print(summary_table(payload))
    print_warnings(payload)
    if json_path is not None:
        write_json(json_path, payload)
        console.print(f"Results written to {json_path}.")


def main() -> None:
    cli(prog_name="kbatch")


if __name__ == "__main__":
    main()
