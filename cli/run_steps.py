"""What `kbatch produce` and `kbatch compare-modes` do once their options are parsed.

Imported by the commands' bodies, not by their declarations (cli/produce_cmd.py,
cli/compare_cmd.py): this is where the engine, the brokers, rich's tables and the results
writers come in, which `--help` does not need (cli/lazy_group.py).
"""

from __future__ import annotations

import sys
import warnings
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.markup import escape

from cli.broker_cost_opts import broker_endpoints
from cli.broker_cost_render import broker_cost_notes
from cli.client_opts import client_inputs, finish_settings
from cli.consume_opts import check_consume, consuming
from cli.consume_render import consumers_tables
from cli.container_facts import add_container_facts, aim_faults
from cli.dashboard import dashboard_warn, finish_dashboard, open_dashboard
from cli.options import (
    lab_shape,
    workload_from_flags,
)
from cli.outcome import exit_code
from cli.output_mode import emit_json, output_from_flags
from cli.output_paths import check_run_outputs, clear_results_dir
from cli.payload_opts import payload_from_flags, with_payload
from cli.perf_test_opts import (
    metric_lines,
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
from cli.settings_checks import check_fits, check_setting_texts, other_mode_warnings
from cli.spark_opts import Runner, runner_from_flags
from cli.stopping import StopOnSignal, accepts_stop
from producer_core.analysis.compare import compare, parse_mode_configs, parse_modes
from producer_core.brokers import BrokerTarget
from producer_core.brokers.target import broker_target
from producer_core.config import MODES, build_settings
from producer_core.errors import UsageError
from producer_core.measure.per_run import run_targets, with_cost
from producer_core.measure.verify_read import VerifyingRun, verify_unsupported
from producer_core.results.results_io import RunRecorder, add_facts, write_json, write_results_dir
from producer_core.workload.workload import Workload


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


def produce(mode: str, overrides: tuple[str, ...], bootstrap_servers: str | None,
            command_config: tuple[Path, ...], replication_factor: int | None,
            topic_configs: tuple[str, ...], json_path: Path | None, out_dir: Path | None,
            progress: bool, overwrite: bool, verify: bool, allow_failures: bool,
            consume: Any = None, **workload_flags: Any) -> None:
    """The body of `kbatch produce` (its options: cli.produce_cmd)."""
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




def compare_modes(modes_text: str, mode_configs: tuple[str, ...], linger_ms: int | None,
                  overrides: tuple[str, ...], repeat: int, bootstrap_servers: str | None,
                  command_config: tuple[Path, ...], replication_factor: int | None,
                  topic_configs: tuple[str, ...], json_path: Path | None,
                  out_dir: Path | None, progress: bool, overwrite: bool,
                  verify: bool, allow_failures: bool, consume: Any = None,
                  **workload_flags: Any) -> None:
    """The body of `kbatch compare-modes` (its options: cli.compare_cmd)."""
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
