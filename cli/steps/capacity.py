"""What `kbatch capacity` does once its options are parsed (its options: cli.commands.capacity).

Imported by the command's body, not by its declaration: the engine, the brokers and the
results writers are not for --help (cli/app/lazy_group.py)."""

from __future__ import annotations

import inspect
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from cli.app.output_paths import writable_dir, writable_file
from cli.app.stopping import StopOnSignal
from cli.dashboard.server import dashboard_progress, finish_dashboard, open_dashboard
from cli.options.client import ClientInputs, client_inputs, finish_settings
from cli.options.common import lab_shape
from cli.options.output_mode import apply, output_from_flags
from cli.options.settings_checks import check_fits, check_setting_texts
from cli.options.spark import Runner
from cli.render.results_tables import METRIC, capacity_table
from cli.render.tables import console, out
from cli.steps.pipeline import install_clients, run_pipeline
from producer_core.analysis.capacity import (
    Capacity,
    Criteria,
    Probe,
    SearchPlan,
    capacity_warnings,
    find_capacity,
)
from producer_core.analysis.compare import ModeRun, parse_mode_configs, parse_modes
from producer_core.analysis.sweep import parse_slo
from producer_core.config import MODES
from producer_core.engine.modes import topic_part
from producer_core.errors import UsageError
from producer_core.results.results_io import write_json
from producer_core.results.run_facts import RunFacts, run_document
from producer_core.workload.workload import Workload


def probe_line(mode: str, index: int, probe: Probe) -> str:
    verdict = "sustained" if probe.ok else "not sustained"
    return (f"[{mode}] probe {index} ({probe.phase}): {probe.rate:,.0f} msg/s "
            f"{verdict}: {probe.reason}")


def bracket_line(mode: str, result: dict[str, Any]) -> str:
    """A mode's bracket and the probes that decided it (numbered as printed, from 1)."""
    lo, hi = result["bracket"]
    ends = " to ".join("-" if b is None else f"{b:,.0f}" for b in (lo, hi))
    deciding = result.get("deciding_probes", [])
    probes = result["probes"]
    named = ", ".join(f"{i + 1} ({probes[i]['rate']:,.0f} "
                      f"{'ok' if probes[i]['ok'] else 'failed'})" for i in deciding)
    state = "confirmed from both sides" if result.get("confirmed") else "not confirmed"
    return f"  bracket {ends} msg/s, {state}; deciding probes: {named or 'none'}"


def capacity_document(results: dict[str, Capacity], criteria: Criteria,
                      plan: SearchPlan, rounds: list[tuple[int, Any]],
                      facts: RunFacts) -> dict[str, Any]:
    """The results JSON: the search per mode, and every probe as a run (for gate and
    report), each run stamped with its mode's answer so `MODE.max_sustainable_msgs_per_s`
    is a gate metric; ``rounds``: each probe's number within its mode and its Results."""
    answers = {mode: found.max_sustainable_msgs_per_s for mode, found in results.items()}
    # METRIC is none of run_document's own keywords: it lands in **extra (a null answer:
    # no sustainable rate was found, which gate reads as missing)
    probe_runs = [run_document(
        result, facts, round=count,
        **{METRIC: answers.get(result.mode)})  # type: ignore[arg-type]  # see above
                  for count, result in rounds]
    workload = dict(probe_runs[0]["workload"]) if probe_runs else {}
    workload.update(rate=None, topic=None)  # the probes' rates are the search's
    return {
        "schema_version": 1, "kind": "capacity",
        "modes": list(results), "workload": workload,
        "capacity": {
            "slo": criteria.slo_text, "achieved_ratio": criteria.achieved_ratio,
            "max_lag_ms": criteria.max_lag_ms,
            "plan": {"start_rate": plan.start_rate, "max_rate": plan.max_rate,
                     "precision": plan.precision, "repeats": plan.repeats,
                     "max_probes": plan.max_probes},
            "modes": {mode: found.as_dict() for mode, found in results.items()},
            "warnings": capacity_warnings(results),
        },
        "runs": probe_runs,
    } | facts.grouped_fields(probe_runs, broker=False)


@dataclass(frozen=True)
class CapacityJob:
    """A capacity search, checked and ready to run: what `capacity`'s options asked."""

    modes: list[str]
    mode_runs: list[ModeRun]
    client: ClientInputs
    shape: Any
    criteria: Criteria
    plan: SearchPlan
    slo_text: str
    probe_shape: Workload
    """Every probe's workload but its topic and rate."""


@dataclass
class SearchOutcome:
    """What the search found per mode, every probe (as run documents and Results), the
    run facts, and the signal that stopped it, if one did."""

    found: dict[str, Capacity] = field(default_factory=dict)
    probe_runs: list[dict[str, Any]] = field(default_factory=list)
    rounds: list[tuple[int, Any]] = field(default_factory=list)
    """Each probe's number within its mode, and its Results."""
    facts: RunFacts | None = None
    stopper: StopOnSignal | None = None


def plan_capacity(modes_text: str, slo_text: str, start_rate: float, max_rate: float,
                  precision: float, repeats: int, max_probes: int, max_lag_ms: float,
                  duration: float, warmup: float, partitions: int, message_size: int,
                  keys: int, seed: int, overrides: tuple[str, ...],
                  mode_configs: tuple[str, ...], linger_ms: int | None,
                  bootstrap_servers: str | None, command_config: Path | None,
                  replication_factor: int | None, topic_configs: tuple[str, ...],
                  flags: dict[str, Any]) -> CapacityJob:
    """The options checked and turned into a search: a usage error for bad input, before
    anything starts."""
    shape = lab_shape(flags)
    slo = parse_slo(slo_text)
    if start_rate > max_rate:
        raise UsageError(f"--start-rate {start_rate:g} is above --max-rate {max_rate:g}.")
    if warmup >= duration:
        raise UsageError("--warmup must be shorter than --duration (each probe's length).")
    modes = parse_modes(modes_text, MODES)
    check_setting_texts([*overrides, *mode_configs])
    client = client_inputs(command_config, overrides, bootstrap_servers, modes,
                           replication_factor, topic_configs)
    mode_runs = [replace(run, settings=finish_settings(run.settings, client)) for run in
                 parse_mode_configs(modes, client.assignments, mode_configs, linger_ms)]
    for mode_run in mode_runs:
        for warning in mode_run.settings.warnings:
            console.print(f"[yellow]Warning ({mode_run.mode}):[/yellow] {warning}",
                          soft_wrap=True)
    job = CapacityJob(
        modes, mode_runs, client, shape,
        Criteria(slo.metric, slo.limit_ms, slo.strict, slo.text, max_lag_ms),
        SearchPlan(start_rate=start_rate, max_rate=max_rate, precision=precision,
                   repeats=repeats, max_probes=max_probes),
        slo.text,
        Workload(topic="kbatch-capacity", partitions=partitions, rate=start_rate,
                 duration_s=duration, messages=None, message_size=message_size, keys=keys,
                 seed=seed, warmup_s=warmup))
    for mode_run in mode_runs:
        check_fits(job.probe_shape, mode_run.settings)
    return job


def search(job: CapacityJob, progress: bool) -> SearchOutcome:
    """Each mode's search, one probe after another on one broker target; a signal ends it
    with what was probed kept."""
    stamp = int(time.time() * 1000)
    plan = job.plan
    outcome = SearchOutcome()
    probe_runs = outcome.probe_runs
    runner = Runner()
    with StopOnSignal() as stopper, run_pipeline(runner, stopper, job.client.bootstrap,
                                                 job.shape, announce=False) as setup:
        outcome.stopper = stopper
        target = setup.target
        console.print(f"Searching the highest rate within {job.slo_text} for "
                      f"{', '.join(job.modes)} on {target.description}: probes of "
                      f"{job.probe_shape.duration_s:g} s from {plan.start_rate:,.0f} msg/s.",
                      soft_wrap=True)
        for mode_run in job.mode_runs:
            mode = mode_run.mode
            count = 0

            def probe(rate: float, mode: str = mode, settings: Any = mode_run.settings
                      ) -> dict[str, Any]:
                nonlocal count
                count += 1
                if stopper.signum is not None:
                    raise SearchStopped
                label = f"[{mode} {rate:,.0f}/s]"
                dashboard_progress(len(probe_runs), plan.max_probes * len(job.mode_runs),
                                   None, f"{mode} at {rate:,.0f} msg/s")
                workload = replace(job.probe_shape, rate=rate, topic=(
                    f"kbatch-capacity-{stamp}-{topic_part(mode)}-{count}"))
                with runner.progress(label, progress) as on_progress:
                    results = setup.run(workload, settings, mode, target.bootstrap,
                                        on_progress, **setup.stop)
                outcome.rounds.append((count, results))
                document = run_document(results, round=count)
                probe_runs.append(document)
                if stopper.signum is not None:  # a cut-short probe is kept, not judged
                    raise SearchStopped
                return document

            def on_probe(result: Probe, mode: str = mode) -> None:
                index = sum(1 for r in probe_runs if r["mode"] == mode)
                console.print(probe_line(mode, index, result), soft_wrap=True,
                              highlight=False, markup=False)

            try:
                outcome.found[mode] = find_capacity(probe, job.criteria, plan, on_probe)
            except SearchStopped:
                outcome.found[mode] = Capacity(None, (None, None),
                                               stopped=f"interrupted by {stopper.name}")
                break
            value = outcome.found[mode].max_sustainable_msgs_per_s
            console.print(f"[bold]{mode}[/bold]: "
                          + ("no rate sustained" if value is None else
                             f"{value:,.0f} msg/s sustained")
                          + f" ({outcome.found[mode].stopped}).", soft_wrap=True)
    outcome.facts = setup.facts()
    return outcome


def show_capacity(document: dict[str, Any]) -> None:
    """The table, each mode's answer and bracket, and the warnings."""
    out.print(capacity_table(document))
    for mode, result in document["capacity"]["modes"].items():
        value = result[METRIC]
        out.print(f"{mode}: max_sustainable_msgs_per_s "
                  f"{'none' if value is None else f'{value:.0f}'}", highlight=False)
        out.print(bracket_line(mode, result), highlight=False, soft_wrap=True)
    for warning in document["capacity"]["warnings"]:
        console.print(f"[yellow]Warning:[/yellow] {warning}", soft_wrap=True)


def write_capacity(document: dict[str, Any], json_path: Path | None,
                   out_dir: Path | None) -> None:
    """--json's file, and --out's capacity.json and chart."""
    if json_path is not None:
        write_json(json_path, document)
        console.print(f"Results written to {json_path}.")
    if out_dir is not None:
        from cli.charts.capacity import capacity_chart

        out_dir.mkdir(parents=True, exist_ok=True)
        write_json(out_dir / "capacity.json", document)
        chart = capacity_chart(document, out_dir / "capacity.png")
        console.print(f"Results written to {out_dir / 'capacity.json'} and {chart}.")


def capacity(json_path: Path | None, out_dir: Path | None, progress: bool,
             **options: Any) -> None:
    """The body of `kbatch capacity` (its options: cli.commands.capacity): check the
    options, search, show and write the results."""
    flags = {name: options.pop(name) for name in list(options)
             if name not in PLAN_OPTIONS}
    dashboard_spec = flags.pop("dashboard")
    output = output_from_flags(flags, json_path)
    check_outputs(json_path, out_dir)
    if not output.interval_explicit:  # one line per probe, as sweep: intervals if asked
        apply(replace(output, report_interval_s=0.0))
    job = plan_capacity(**options, flags=flags)
    install_clients(job.modes)
    open_dashboard(dashboard_spec, "kbatch capacity")
    outcome = search(job, progress)
    assert outcome.facts is not None and outcome.stopper is not None
    document = capacity_document(outcome.found, job.criteria, job.plan, outcome.rounds,
                                  outcome.facts)
    show_capacity(document)
    write_capacity(document, json_path, out_dir)
    finish_dashboard(document["runs"], out_dir)
    stopper = outcome.stopper
    if stopper.signum is not None:
        written = json_path is not None or out_dir is not None
        probes = len(outcome.probe_runs)
        console.print(f"Interrupted by {stopper.name}: the capacity search stopped after "
                      f"{probes} probe{'' if probes == 1 else 's'}"
                      f"{'; partial results written' if written else ''} (the interrupted "
                      "mode's answer is none: its search did not end).", soft_wrap=True)
        sys.exit(stopper.exit_code)


PLAN_OPTIONS = frozenset(inspect.signature(plan_capacity).parameters) - {"flags"}
"""The options `plan_capacity` takes; the others are output and lab flags."""


class SearchStopped(Exception):  # noqa: N818 - a signal, not an error
    """A signal arrived: the search ends here, what was probed is kept."""


def check_outputs(json_path: Path | None, out_dir: Path | None) -> None:
    """--json and --out are written after the whole search: proven writable before it."""
    if json_path is not None:
        writable_file(json_path, "--json")
    if out_dir is not None:
        writable_dir(out_dir, "--out")
