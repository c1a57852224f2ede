"""The `kbatch` command line: parsing, validation messages, and wiring to the engine."""

from __future__ import annotations

import json
import warnings
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import click

from cli.analyze_cmd import analyze
from cli.errors import friendly_errors
from cli.gate_cmd import gate
from cli.lab_cmd import lab
from cli.options import (
    lab_options,
    lab_shape,
    settings_from_flags,
    workload_from_flags,
    workload_options,
)
from cli.render import (
    comparison_table,
    console,
    describe_topics,
    out,
    print_warnings,
    summary_table,
    topics_table,
)
from cli.report_cmd import report
from cli.spark_opts import runner_from_flags, runner_options
from producer_core.brokers import BrokerTarget, broker_target
from producer_core.compare import compare, parse_mode_configs, parse_modes
from producer_core.config import MODES, parse_assignment, settings_help
from producer_core.results_io import RunRecorder, add_facts, write_results_dir

OUT_HELP = ("Write a results directory: results.json (schema v1), and per run the latency "
            ".hgrm, the encoded histogram and the per-request log (Parquet). "
            "See README, 'Results directory'.")


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="kbatch")
def cli() -> None:
    """kbatch: measure what a Kafka producer batching (linger) policy really costs.

    Drives a rate-controlled workload through kbatch's producer engine against real
    brokers (an embedded Tansu broker unless --bootstrap-servers is given) and reports
    requests_sent, msgs_per_req and latency percentiles measured from each message's
    intended send time.
    """


def announce_start(target: BrokerTarget) -> None:
    """Say how long starting the broker took (it is most of a short run's wall time)."""
    if target.started_in_s is not None:
        console.print(f"Started {target.description} in {target.started_in_s:.1f} s.")


def write_json(path: Path, payload: Any) -> None:
    """Write results atomically, so a CI job never reads half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(payload, indent=2, sort_keys=False) + "\n")
    tmp.replace(path)


@cli.command(epilog="Producer settings (-X key=value):\n\n" + settings_help().replace(
    "\n", "\n\n"))
@click.option("--mode", type=click.Choice(MODES), default="partition", show_default=True,
              help="Mode: 'partition' = per-partition linger.ms, a request carries the "
                   "partitions ready at that moment; 'java' = the Java producer, a broker is "
                   "ready when any of its partitions is and then sends all of them; 'broker' "
                   "= broker-level collector (broker.linger.ms); 'none' = linger 0; "
                   "'adaptive' = KIP-1224's adaptive linger, a broker's collection is flushed "
                   "behind the work pending in the engine; 'aimd' = broker-level collector "
                   "whose window adapts per broker (aimd.*); 'bruce' = Bruce's per-topic "
                   "and combined batches, late partition choice and rate limits (bruce.*); "
                   "'librdkafka' = the real client (confluent-kafka) on the same workload; "
                   "'kafka-java' = Apache Kafka's Java producer (kafka-clients, needs a JDK) "
                   "on the same workload.")
@workload_options
@click.option("-X", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Producer setting with Kafka's name, e.g. -X linger.ms=10 -X acks=all. "
                   "Repeatable. See the list below.")
@click.option("--bootstrap-servers", default=None, metavar="HOST:PORT[,...]",
              help="Kafka cluster to use. Default: start an embedded Tansu broker for this run.")
@lab_options
@runner_options
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="Write the results JSON to this file.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              default=None, help=OUT_HELP)
@click.option("--progress/--no-progress", default=True, show_default=True,
              help="Live progress display (only shown on a terminal).")
@friendly_errors
def produce(mode: str, overrides: tuple[str, ...], bootstrap_servers: str | None,
            json_path: Path | None, out_dir: Path | None, progress: bool,
            **workload_flags: Any) -> None:
    """Produce a workload in one linger mode and report what it cost.

    Example: kbatch produce --partitions 64 --rate 20000 --duration 10 -X linger.ms=50
    """
    shape = lab_shape(workload_flags)
    runner = runner_from_flags(workload_flags, bootstrap_servers)
    settings = settings_from_flags(overrides, mode)
    workload = workload_from_flags(**workload_flags)
    with broker_target(bootstrap_servers, **shape) as target, runner.open() as engine_run:
        announce_start(target)
        console.print(f"Producing to {target.description}, {describe_topics(workload)}, "
                      f"mode {mode}{runner.description}.")
        with runner.progress(f"[{mode}]", progress) as on_progress, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results = RunRecorder(engine_run)(workload, settings, mode, target.bootstrap,
                                              on_progress)
        results.broker = target.description
    payload = results.to_dict()
    add_facts(payload, target.embedded, implementation=target.implementation,
              version=target.version)
    out.print(summary_table(payload))
    if len(payload.get("topics", {})) > 1:
        out.print(topics_table(payload))
    print_warnings(payload)
    if json_path is not None:
        write_json(json_path, payload)
        console.print(f"Results written to {json_path}.")
    if out_dir is not None:
        console.print(f"Results written to {write_results_dir(out_dir, payload, [results])}.")


@cli.command("compare-modes")
@click.option("--modes", "modes_text", default="librdkafka,partition,java,broker",
              show_default=True,
              help="Comma-separated modes to compare; the first is the baseline of the "
                   "change columns (by default librdkafka, the client run today).")
@click.option("--mode-config", "mode_configs", multiple=True, metavar="MODE:KEY=VALUE",
              help="A setting for one mode only, e.g. --mode-config partition:linger.ms=500 "
                   "--mode-config broker:broker.linger.ms=500. Repeatable.")
@click.option("--linger-ms", type=click.IntRange(0, 900_000), default=None,
              help="One linger window for every mode: sets linger.ms (librdkafka, "
                   "partition, java, none), broker.linger.ms for mode broker, or "
                   "bruce.combined.max.delay.ms for mode bruce; modes "
                   "adaptive and aimd choose their own window and get none. "
                   "--mode-config still wins.")
@workload_options
@click.option("-X", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Producer setting applied to every mode (see kbatch produce --help).")
@click.option("--repeat", type=click.IntRange(1, 100), default=1, show_default=True,
              help="Run the modes interleaved this many times; report median (min-max).")
@click.option("--bootstrap-servers", default=None, metavar="HOST:PORT[,...]",
              help="Kafka cluster to use. Default: one embedded Tansu broker for all modes.")
@lab_options
@runner_options
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="Write every run and the summary as JSON to this file.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              default=None, help=OUT_HELP)
@click.option("--progress/--no-progress", default=True, show_default=True,
              help="Live progress display (only shown on a terminal).")
@friendly_errors
def compare_modes(modes_text: str, mode_configs: tuple[str, ...], linger_ms: int | None,
                  overrides: tuple[str, ...], repeat: int, bootstrap_servers: str | None,
                  json_path: Path | None, out_dir: Path | None, progress: bool,
                  **workload_flags: Any) -> None:
    """Run one workload under several modes and show them side by side.

    Each mode runs on a fresh topic with the same partitions and the same message sequence
    (same seed). Example, the broker-level linger benchmark:

    kbatch compare-modes --partitions 1000 --rate 20000 --duration 30 --linger-ms 500
    """
    shape = lab_shape(workload_flags)
    runner = runner_from_flags(workload_flags, bootstrap_servers)
    modes = parse_modes(modes_text, MODES)
    common = [parse_assignment(text) for text in overrides]
    mode_runs = parse_mode_configs(modes, common, mode_configs, linger_ms)
    for mode_run in mode_runs:
        for warning in mode_run.settings.warnings:
            console.print(f"[yellow]Warning ({mode_run.mode}):[/yellow] {warning}")
    workload = workload_from_flags(**workload_flags)
    stack = ExitStack()

    def on_start(mode: str, round_index: int):
        stack.close()
        console.print(f"Running mode {mode}" + (f", round {round_index + 1}/{repeat}"
                                                 if repeat > 1 else "") + ".")
        return stack.enter_context(runner.progress(f"[{mode}]", progress))

    with broker_target(bootstrap_servers, **shape) as target, runner.open() as engine_run, \
            stack, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        announce_start(target)
        console.print(f"Comparing {', '.join(modes)} on {target.description}"
                      f"{runner.description}.")
        recorder = RunRecorder(engine_run)
        document = compare(workload, mode_runs, target.bootstrap, repeat, on_start,
                           run_one=recorder)
        document["broker"] = target.description
    add_facts(document, target.embedded, target.description,
              implementation=target.implementation, version=target.version)
    out.print(comparison_table(document))
    for run_document in document["runs"]:
        for warning in run_document.get("warnings", []):
            console.print(f"[yellow]Warning ({run_document['mode']}):[/yellow] {warning}")
    if json_path is not None:
        write_json(json_path, document)
        console.print(f"Results written to {json_path}.")
    if out_dir is not None:
        path = write_results_dir(out_dir, document, recorder.results)
        console.print(f"Results written to {path}.")


cli.add_command(report)
cli.add_command(gate)
cli.add_command(lab)
cli.add_command(analyze)


def main() -> None:
    cli(prog_name="kbatch")


if __name__ == "__main__":
    main()
