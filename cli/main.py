"""The `kbatch` command line: parsing, validation messages, and wiring to the engine."""

from __future__ import annotations

import sys
import warnings
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from cli.analyze_cmd import analyze
from cli.broker_cost_opts import broker_endpoints, broker_metrics_option
from cli.broker_cost_render import broker_cost_notes
from cli.capacity_cmd import capacity
from cli.client_opts import client_inputs, client_options, finish_settings
from cli.consume_opts import check_consume, consume_options, consuming
from cli.consume_render import consumers_tables
from cli.container_facts import add_container_facts, aim_faults
from cli.dashboard import dashboard_option, dashboard_warn, finish_dashboard, open_dashboard
from cli.errors import friendly_errors
from cli.gate_cmd import gate
from cli.image_cmd import image
from cli.lab_cmd import lab
from cli.options import (
    lab_options,
    lab_shape,
    workload_from_flags,
    workload_options,
)
from cli.outcome import exit_code
from cli.output_mode import emit_json, output_from_flags, output_options
from cli.output_paths import check_run_outputs, clear_results_dir
from cli.payload_opts import payload_from_flags, payload_options, with_payload
from cli.perf_test_cmd import perf_test
from cli.perf_test_opts import (
    PerfTestArgs,
    metric_lines,
    perf_test_options,
    print_metrics_requested,
)
from cli.render import (
    comparison_table,
    console,
    describe_topics,
    out,
    print_warnings,
    summary_table,
    topics_table,
    verify_table,
)
from cli.report_cmd import report
from cli.settings_checks import check_fits, check_setting_texts, other_mode_warnings
from cli.spark_opts import Runner, runner_from_flags, runner_options
from cli.stopping import StopOnSignal, accepts_stop
from cli.streams import end_startup_signals, guard_shutdown_signals
from cli.sweep_cmd import sweep
from cli.txn_opts import transaction_options
from producer_core.analysis.compare import compare, parse_mode_configs, parse_modes
from producer_core.brokers import BrokerTarget
from producer_core.brokers.target import broker_target
from producer_core.config import MODES, build_settings, settings_help
from producer_core.errors import UsageError
from producer_core.measure.per_run import run_targets, with_cost
from producer_core.measure.verify_read import VerifyingRun, verify_unsupported
from producer_core.modes import mode_help
from producer_core.results.results_io import RunRecorder, add_facts, write_json, write_results_dir
from producer_core.workload.workload import Workload

OUT_HELP = ("Write a results directory: results.json (schema v1), and per run the latency "
            ".hgrm, the encoded histogram and the per-request log (Parquet). "
            "See docs/reference/results.md.")


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="kbatch")
def cli() -> None:
    """kbatch: measure what a Kafka producer batching (linger) policy really costs.

    Drives a rate-controlled workload through kbatch's producer engine against real
    brokers (an embedded Tansu broker unless --bootstrap-servers is given) and reports
    requests_sent, msgs_per_req and latency percentiles measured from each message's
    intended send time.
    """


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


def check_verify(verify: bool, runner: Runner, workload: Workload) -> None:
    """Refuse --verify where it cannot say the truth, before any broker starts."""
    if not verify:
        return
    if runner.master is not None:
        raise UsageError("--verify is not available with --runner spark: the shares' "
                         "deliveries stay on the workers. Verify a --runner local run.")
    reason = verify_unsupported(workload)
    if reason:
        raise UsageError(reason)


def engine_call(engine_run: Any, verify: bool, stopper: StopOnSignal,
                consume: Any = None) -> tuple[Any, dict]:
    """The run callable (reading back with --verify, or with --consume's consumers, whose
    read-back then is the verify) and its keyword arguments."""
    stopper.stoppable = accepts_stop(engine_run)
    if consume is not None:
        run = consuming(engine_run, consume, verify, lambda text: console.print(
            f"[yellow]{escape(text)}[/yellow]", soft_wrap=True))
    else:
        run = VerifyingRun(engine_run) if verify else engine_run
    return run, ({"stop": stopper.event} if stopper.stoppable else {})


def conclude(stopper: StopOnSignal, runs: list[dict[str, Any]], allow_failures: bool,
             written: bool) -> None:
    """Exit with the code the runs deserve; after a signal, say what was kept."""
    if stopper.signum is not None:
        acked = sum(run["messages"]["acknowledged"] for run in runs)
        sent = sum(run["messages"]["sent"] for run in runs)
        console.print(
            f"Interrupted by {stopper.name}: stopped producing after {sent:,} messages "
            f"({acked:,} acknowledged){', partial results written' if written else ''} "
            "(complete: false); the broker was shut down.", soft_wrap=True)
        sys.exit(stopper.exit_code)
    code, reasons = exit_code(runs, allow_failures)
    for reason in reasons:
        console.print(f"[{'red' if code else 'yellow'}]{reason}[/]", soft_wrap=True)
    if code:
        sys.exit(code)


def announce_start(target: BrokerTarget) -> None:
    """Say how long starting the broker took (it is most of a short run's wall time)."""
    if target.started_in_s is not None:
        console.print(f"Started {target.description} in {target.started_in_s:.1f} s.")


@cli.command(cls=PerfTestArgs, epilog="Producer settings (-X key=value):\n\n" +
             settings_help().replace("\n", "\n\n"))
@click.option("--mode", type=click.Choice(MODES), default="partition", show_default=True,
              help=mode_help())
@workload_options
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
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              default=None, help=OUT_HELP)
@click.option("--overwrite", is_flag=True, default=False,
              help="Let --out replace a results directory that holds another mode's or "
                   "kind's results (without it, such a directory is refused).")
@click.option("--progress/--no-progress", default=True, show_default=True,
              help="Live progress display (only shown on a terminal).")
@perf_test_options
@transaction_options
@delivery_options
@dashboard_option
@broker_metrics_option
@friendly_errors
@consume_options
def produce(mode: str, overrides: tuple[str, ...], bootstrap_servers: str | None,
            command_config: tuple[Path, ...], replication_factor: int | None,
            topic_configs: tuple[str, ...], json_path: Path | None, out_dir: Path | None,
            progress: bool, overwrite: bool, verify: bool, allow_failures: bool,
            consume: Any = None, **workload_flags: Any) -> None:
    """Produce a workload in one linger mode and report what it cost.

    Example: kbatch produce --partitions 64 --rate 20000 --duration 10 -X linger.ms=50
    """
    dashboard_spec = workload_flags.pop("dashboard")
    output_from_flags(workload_flags, json_path)
    shape = lab_shape(workload_flags)
    endpoints = broker_endpoints(workload_flags, bootstrap_servers)
    check_setting_texts(overrides)
    client = client_inputs(command_config, overrides, bootstrap_servers, [mode],
                           replication_factor, topic_configs)
    bootstrap_servers = client.bootstrap
    runner = runner_from_flags(workload_flags, bootstrap_servers)
    settings = other_mode_warnings(
        finish_settings(build_settings(client.assignments, mode=mode), client), mode)
    payload = payload_from_flags(workload_flags)
    workload = with_payload(workload_from_flags(**workload_flags), payload)
    check_fits(workload, settings)
    check_verify(verify, runner, workload)
    check_consume(consume, runner.master, workload)
    check_run_outputs(json_path, out_dir, overwrite, "run", [mode])
    open_dashboard(dashboard_spec, f"kbatch produce — mode {mode}")
    with StopOnSignal() as stopper:
        with broker_target(bootstrap_servers, **shape) as target, runner.open() as engine_run:
            announce_start(target)
            aim_faults(target, workload)
            console.print(f"Producing to {target.description}, {describe_topics(workload)}, "
                          f"mode {mode}{runner.description}.")
            run, stop = engine_call(engine_run, verify, stopper, consume)
            run = with_cost(run, target, endpoints)
            with runner.progress(f"[{mode}]", progress) as on_progress, \
                    warnings.catch_warnings():
                warnings.simplefilter("ignore")
                results = RunRecorder(run)(workload, settings, mode, target.bootstrap,
                                           on_progress, **stop)
            results.broker = target.description
        payload = results.to_dict()
        if stopper.signum is not None:
            payload["complete"] = False
        add_facts(payload, target.embedded, implementation=target.implementation,
                  version=target.version)
        add_container_facts(payload, target)
        out.print(summary_table(payload))
        if len(payload.get("topics", {})) > 1:
            out.print(topics_table(payload))
        for table in consumers_tables(payload):
            out.print(table)
        if "verify" in payload:
            out.print(verify_table(payload["verify"]))
        print_warnings(payload)
        if print_metrics_requested():
            out.print("\n".join(metric_lines(payload)), highlight=False, soft_wrap=True)
        emit_json(json_path, payload, write_json)
        if out_dir is not None:
            clear_results_dir(out_dir)
            console.print(
                f"Results written to {write_results_dir(out_dir, payload, [results])}.")
        for warning in payload.get("warnings", []):
            dashboard_warn(f"{mode}: {warning}")
        finish_dashboard(payload, out_dir)
    conclude(stopper, [payload], allow_failures, json_path is not None or out_dir is not None)


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
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              default=None, help=OUT_HELP)
@click.option("--overwrite", is_flag=True, default=False,
              help="Let --out replace a results directory that holds another mode's or "
                   "kind's results (without it, such a directory is refused).")
@click.option("--progress/--no-progress", default=True, show_default=True,
              help="Live progress display (only shown on a terminal).")
@transaction_options
@delivery_options
@dashboard_option
@broker_metrics_option
@friendly_errors
@consume_options
def compare_modes(modes_text: str, mode_configs: tuple[str, ...], linger_ms: int | None,
                  overrides: tuple[str, ...], repeat: int, bootstrap_servers: str | None,
                  command_config: tuple[Path, ...], replication_factor: int | None,
                  topic_configs: tuple[str, ...], json_path: Path | None,
                  out_dir: Path | None, progress: bool, overwrite: bool,
                  verify: bool, allow_failures: bool, consume: Any = None,
                  **workload_flags: Any) -> None:
    """Run one workload under several modes and show them side by side.

    Each mode runs on a fresh topic with the same partitions and the same message sequence
    (same seed). Example, the broker-level linger benchmark:

    kbatch compare-modes --partitions 1000 --rate 20000 --duration 30 --linger-ms 500
    """
    dashboard_spec = workload_flags.pop("dashboard")
    output_from_flags(workload_flags, json_path)
    shape = lab_shape(workload_flags)
    endpoints = broker_endpoints(workload_flags, bootstrap_servers)
    modes = parse_modes(modes_text, MODES)
    check_setting_texts([*overrides, *mode_configs])
    client = client_inputs(command_config, overrides, bootstrap_servers, modes,
                           replication_factor, topic_configs)
    bootstrap_servers = client.bootstrap
    runner = runner_from_flags(workload_flags, bootstrap_servers)
    mode_runs = [replace(run, settings=finish_settings(run.settings, client)) for run in
                 parse_mode_configs(modes, client.assignments, mode_configs, linger_ms)]
    for mode_run in mode_runs:
        for warning in mode_run.settings.warnings:
            console.print(f"[yellow]Warning ({mode_run.mode}):[/yellow] {warning}")
    payload = payload_from_flags(workload_flags)
    workload = with_payload(workload_from_flags(**workload_flags), payload)
    for mode_run in mode_runs:
        check_fits(workload, mode_run.settings)
    check_verify(verify, runner, workload)
    check_consume(consume, runner.master, workload)
    check_run_outputs(json_path, out_dir, overwrite, "comparison", modes)
    open_dashboard(dashboard_spec, f"kbatch compare-modes {','.join(modes)}")
    for mode_run in mode_runs:
        for warning in mode_run.settings.warnings:
            dashboard_warn(f"{mode_run.mode}: {warning}")
    stack = ExitStack()
    stopper = StopOnSignal()

    def on_start(mode: str, round_index: int):
        stack.close()
        if recorder.results:  # the run before this one has ended: its warnings now
            previous = recorder.results[-1]
            for warning in previous.warnings:
                dashboard_warn(f"{previous.mode}: {warning}")
        console.print(f"Running mode {mode}" + (f", round {round_index + 1}/{repeat}"
                                                 if repeat > 1 else "") + ".")
        return stack.enter_context(runner.progress(f"[{mode}]", progress))

    with stopper, run_targets(bootstrap_servers, shape, endpoints) as (target, on_its_broker), \
            runner.open() as engine_run, stack, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        announce_start(target)
        aim_faults(target, workload)
        console.print(f"Comparing {', '.join(modes)} on {target.description}"
                      f"{runner.description}.")
        run, stop = engine_call(engine_run, verify, stopper, consume)
        recorder = RunRecorder(on_its_broker(run))
        document = compare(workload, mode_runs, target.bootstrap, repeat, on_start,
                           run_one=recorder, stop=stop.get("stop"))
        document["broker"] = target.description
        stack.close()  # the last progress display, before the broker stops
    with stopper:  # a signal while writing the results: stop at once (the broker is down)
        if stopper.signum is not None:
            document["complete"] = False
        add_facts(document, target.embedded, target.description,
                  implementation=target.implementation, version=target.version)
        add_container_facts(document, target)
        out.print(comparison_table(document))
        for note in broker_cost_notes(document["runs"]):
            console.print(note)
        for run_document in document["runs"]:
            for table in consumers_tables(run_document, f"mode {run_document['mode']}, "
                                                        f"round {run_document['round']}"):
                out.print(table)
            if "verify" in run_document:
                out.print(verify_table(run_document["verify"],
                                       f"mode {run_document['mode']}, round "
                                       f"{run_document['round']}"))
            for warning in run_document.get("warnings", []):
                console.print(f"[yellow]Warning ({run_document['mode']}):[/yellow] {warning}")
        emit_json(json_path, document, write_json)
        if out_dir is not None:
            clear_results_dir(out_dir)
            path = write_results_dir(out_dir, document, recorder.results)
            console.print(f"Results written to {path}.")
        if recorder.results:
            for warning in recorder.results[-1].warnings:
                dashboard_warn(f"{recorder.results[-1].mode}: {warning}")
        finish_dashboard(document, out_dir)
    conclude(stopper, document["runs"], allow_failures,
             json_path is not None or out_dir is not None)


cli.add_command(report)
cli.add_command(gate)
cli.add_command(lab)
cli.add_command(analyze)
cli.add_command(sweep)
cli.add_command(perf_test)
cli.add_command(capacity)
cli.add_command(image)


def main() -> None:
    try:
        cli(prog_name="kbatch")
    finally:
        guard_shutdown_signals()


end_startup_signals()  # every module is imported: signals reach the commands again


if __name__ == "__main__":
    main()
