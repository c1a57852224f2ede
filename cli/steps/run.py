"""What `kbatch produce` and `kbatch compare-modes` do once their options are parsed.

Imported by the commands' bodies, not by their declarations (cli/commands/produce.py,
cli/commands/compare.py): this is where the engine, the brokers, rich's tables and the results
writers come in, which `--help` does not need (cli/app/lazy_group.py).
"""

from __future__ import annotations

import sys
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

from cli.app.output_paths import check_run_outputs, clear_results_dir
from cli.app.stopping import StopOnSignal
from cli.dashboard.server import dashboard_warn, finish_dashboard, open_dashboard
from cli.options.broker_cost import broker_endpoints
from cli.options.client import client_inputs, finish_settings
from cli.options.client_build import apply_client_builds, built_mode_configs
from cli.options.closed_loop import closed_loop_from_flags, with_closed_loop
from cli.options.common import (
    lab_shape,
    workload_from_flags,
)
from cli.options.consume import check_consume
from cli.options.output_mode import emit_json, output_from_flags
from cli.options.payload import payload_from_flags, with_payload
from cli.options.perf_test import (
    metric_lines,
    print_metrics_requested,
)
from cli.options.settings_checks import check_fits, check_setting_texts, other_mode_warnings
from cli.options.spark import Runner, runner_from_flags
from cli.render.broker_cost import broker_cost_notes
from cli.render.consume import consumers_tables
from cli.render.outcome import exit_code
from cli.render.tables import (
    comparison_table,
    console,
    describe_topics,
    out,
    print_warnings,
    summary_table,
    topics_table,
    verify_table,
)
from cli.steps.pipeline import install_clients, run_pipeline
from producer_core.analysis.compare import (
    comparison_document,
    parse_mode_configs,
    parse_modes,
    run_modes,
)
from producer_core.config import MODES, build_settings
from producer_core.errors import UsageError
from producer_core.measure.verify_read import verify_unsupported
from producer_core.results.results_io import write_json, write_results_dir
from producer_core.results.run_facts import run_document
from producer_core.workload.workload import Workload


def _notice(text: str) -> None:
    console.print(text, soft_wrap=True, highlight=False, markup=False)


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


def check_faults(shape: dict[str, Any], workload: Any, runs: int = 1) -> None:
    """--fault that could never apply (no such partition; at or after the end of the
    ``runs`` runs, each the workload's duration, one after the other): refused before any
    broker starts."""
    if shape.get("faults"):
        from producer_core.brokers.faults.spec import check_against_run, parse_faults

        first = workload.topic_specs()[0]
        duration = workload.duration_s * runs if workload.messages is None and \
            workload.duration_s is not None else None
        check_against_run(parse_faults(shape["faults"]), first.partitions, duration)


def conclude(stopper: StopOnSignal, runs: list[dict[str, Any]], allow_failures: bool,
             written: bool, own_broker: bool = True) -> None:
    """Exit with the code the runs deserve; after a signal, say what was kept (and that
    the broker was shut down only when kbatch started one: not for --bootstrap-servers)."""
    if stopper.signum is not None:
        acked = sum(run["messages"]["acknowledged"] for run in runs)
        sent = sum(run["messages"]["sent"] for run in runs)
        console.print(
            f"Interrupted by {stopper.name}: stopped producing after {sent:,} messages "
            f"({acked:,} acknowledged){', partial results written' if written else ''} "
            "(complete: false)"
            + ("; the broker was shut down." if own_broker else
               "; the cluster at --bootstrap-servers was left as it was."), soft_wrap=True)
        sys.exit(stopper.exit_code)
    code, reasons = exit_code(runs, allow_failures)
    for reason in reasons:
        console.print(f"[{'red' if code else 'yellow'}]{reason}[/]", soft_wrap=True)
    if code:
        sys.exit(code)


def produce(mode: str, overrides: tuple[str, ...], bootstrap_servers: str | None,
            command_config: tuple[Path, ...], replication_factor: int | None,
            topic_configs: tuple[str, ...], json_path: Path | None, out_dir: Path | None,
            progress: bool, overwrite: bool, verify: bool, allow_failures: bool,
            consume: Any = None, **workload_flags: Any) -> None:
    """The body of `kbatch produce` (its options: cli.commands.produce)."""
    mode = apply_client_builds(workload_flags.pop("client_builds", ()), [mode], _notice)[0]
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
    payload_spec = payload_from_flags(workload_flags)
    loop = closed_loop_from_flags(workload_flags)
    workload = with_closed_loop(
        with_payload(workload_from_flags(**workload_flags), payload_spec), loop)
    check_fits(workload, settings)
    check_verify(verify, runner, workload)
    check_consume(consume, runner.master, workload)
    check_faults(shape, workload)
    check_run_outputs(json_path, out_dir, overwrite, "run", [mode])
    install_clients([mode])
    open_dashboard(dashboard_spec, f"kbatch produce — mode {mode}")
    with StopOnSignal() as stopper:
        with run_pipeline(runner, stopper, bootstrap_servers, shape, endpoints, shared=True,
                          workload=workload, verify=verify, consume=consume) as setup:
            target = setup.target
            console.print(f"Producing to {target.description}, {describe_topics(workload)}, "
                          f"mode {mode}{runner.description}.")
            with runner.progress(f"[{mode}]", progress) as on_progress:
                results = setup.run(workload, settings, mode, target.bootstrap,
                                    on_progress, **setup.stop)
            results.broker = target.description
        facts = setup.facts()
        payload = run_document(results, facts, stopped=setup.stopped)
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
        saved = payload
        if out_dir is not None:  # the directory's document names its companion files
            saved = run_document(results, facts, stopped=setup.stopped, files=True)
            clear_results_dir(out_dir)
            console.print(
                f"Results written to {write_results_dir(out_dir, saved, [results])}.")
        for warning in payload.get("warnings", []):
            dashboard_warn(f"{mode}: {warning}")
        finish_dashboard(saved, out_dir)
    conclude(stopper, [payload], allow_failures, json_path is not None or out_dir is not None,
             own_broker=not bootstrap_servers)




def compare_modes(modes_text: str, mode_configs: tuple[str, ...], linger_ms: int | None,
                  overrides: tuple[str, ...], repeat: int, bootstrap_servers: str | None,
                  command_config: tuple[Path, ...], replication_factor: int | None,
                  topic_configs: tuple[str, ...], json_path: Path | None,
                  out_dir: Path | None, progress: bool, overwrite: bool,
                  verify: bool, allow_failures: bool, consume: Any = None,
                  **workload_flags: Any) -> None:
    """The body of `kbatch compare-modes` (its options: cli.commands.compare)."""
    dashboard_spec = workload_flags.pop("dashboard")
    output_from_flags(workload_flags, json_path)
    shape = lab_shape(workload_flags)
    endpoints = broker_endpoints(workload_flags, bootstrap_servers)
    given = parse_modes(modes_text, MODES)
    modes = apply_client_builds(workload_flags.pop("client_builds", ()), given, _notice)
    mode_configs = built_mode_configs(mode_configs, given, modes)
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
    loop = closed_loop_from_flags(workload_flags)
    workload = with_closed_loop(with_payload(workload_from_flags(**workload_flags), payload),
                                loop)
    for mode_run in mode_runs:
        check_fits(workload, mode_run.settings)
    check_verify(verify, runner, workload)
    check_consume(consume, runner.master, workload)
    check_faults(shape, workload, len(mode_runs) * repeat)
    check_run_outputs(json_path, out_dir, overwrite, "comparison", modes)
    install_clients(modes)
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

    with stopper, run_pipeline(runner, stopper, bootstrap_servers, shape, endpoints,
                               workload=workload, verify=verify, consume=consume) as setup, \
            stack:
        recorder = setup.run
        console.print(f"Comparing {', '.join(modes)} on {setup.target.description}"
                      f"{runner.description}.")
        rounds = run_modes(workload, mode_runs, setup.target.bootstrap, repeat, on_start,
                           run_one=recorder, stop=setup.stop.get("stop"))
        stack.close()  # the last progress display, before the broker stops
    with stopper:  # a signal while writing the results: stop at once (the broker is down)
        facts = setup.facts()
        document = comparison_document(workload, mode_runs, repeat, rounds, facts,
                                       stopped=setup.stopped)
        show_comparison(document)
        emit_json(json_path, document, write_json)
        saved = document
        if out_dir is not None:  # the directory's document names its companion files
            saved = comparison_document(workload, mode_runs, repeat, rounds, facts,
                                        stopped=setup.stopped, files=True)
            clear_results_dir(out_dir)
            path = write_results_dir(out_dir, saved, recorder.results)
            console.print(f"Results written to {path}.")
        if recorder.results:
            for warning in recorder.results[-1].warnings:
                dashboard_warn(f"{recorder.results[-1].mode}: {warning}")
        finish_dashboard(saved, out_dir)
    conclude(stopper, document["runs"], allow_failures,
             json_path is not None or out_dir is not None, own_broker=not bootstrap_servers)


def show_comparison(document: dict[str, Any]) -> None:
    """The comparison table, the broker cost notes, and per run its consumers', --verify's
    tables and warnings."""
    out.print(comparison_table(document))
    for note in broker_cost_notes(document["runs"]):
        console.print(note)
    for run_doc in document["runs"]:
        label = f"mode {run_doc['mode']}, round {run_doc['round']}"
        for table in consumers_tables(run_doc, label):
            out.print(table)
        if "verify" in run_doc:
            out.print(verify_table(run_doc["verify"], label))
        for warning in run_doc.get("warnings", []):
            console.print(f"[yellow]Warning ({run_doc['mode']}):[/yellow] {warning}")
