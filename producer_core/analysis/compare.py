"""Run one workload under several modes, interleaved, and summarise them side by side.

Every mode gets a fresh topic with the same layout and the same message sequence (same
seed); repeats are interleaved (A B A B, not A A B B) so slow drift of a noisy machine
falls on every mode alike. The summary is the median of each metric, with min and max.
"""

from __future__ import annotations

import statistics
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from producer_core.config import ProducerSettings, build_settings
from producer_core.engine.drivers.engine import Progress, run
from producer_core.engine.modes import mode as mode_spec
from producer_core.engine.modes import mode_problem
from producer_core.engine.modes.versions import base_mode, topic_part
from producer_core.errors import UsageError
from producer_core.results.metric_catalog import (
    SUMMARY,
    SUMMARY_METRICS,
    Change,
    summary_metric,
)
from producer_core.results.metrics import SCHEMA_VERSION
from producer_core.results.run_facts import RunFacts, run_document
from producer_core.workload.workload import Workload


@dataclass(frozen=True)
class ModeRun:
    """One mode with its own settings (common -X plus its --mode-config overrides)."""

    mode: str
    settings: ProducerSettings


def parse_mode_configs(
    modes: Sequence[str], common: Sequence[tuple[str, str]], per_mode: Sequence[str],
    linger_ms: int | None = None,
) -> list[ModeRun]:
    """Build each mode's settings; `per_mode` items look like `broker:broker.linger.ms=500`.

    `linger_ms`, when given, sets the mode's own linger knob (`linger.ms`,
    `broker.linger.ms` for the broker collector, `bruce.combined.max.delay.ms` for bruce)
    so one value compares like with like; modes `adaptive` and `aimd` choose their window
    themselves and get nothing.
    """
    overrides: dict[str, list[tuple[str, str]]] = {mode: [] for mode in modes}
    for item in per_mode:
        mode, sep, assignment = item.partition(":")
        key, eq, value = assignment.partition("=")
        if not sep or not eq or not key.strip() or not value.strip():
            raise UsageError(
                f"Malformed --mode-config {item!r}: expected MODE:KEY=VALUE, for example "
                "--mode-config partition:linger.ms=500."
            )
        if mode not in overrides:
            raise UsageError(
                f"--mode-config {item!r} names mode {mode!r}, which is not in --modes "
                f"({', '.join(modes)})."
            )
        overrides[mode].append((key.strip(), value.strip()))
    runs = []
    for mode in modes:
        knob: list[tuple[str, str]] = []
        name = linger_knob(mode)
        if linger_ms is not None and name is not None:
            knob = [(name, str(linger_ms))]
        runs.append(ModeRun(mode, build_settings([*knob, *common, *overrides[mode]], mode=mode)))
    return runs


def linger_knob(mode: str) -> str | None:
    """The setting that holds a mode's linger window (None: the mode chooses it itself);
    declared per mode in `producer_core.engine.modes`."""
    return mode_spec(mode).window


def parse_modes(text: str, known: Sequence[str]) -> list[str]:
    modes = [m.strip() for m in text.split(",") if m.strip()]
    unknown = [m for m in modes if m not in known and base_mode(m) not in known]
    if not modes or unknown:
        raise UsageError(
            f"Unknown mode(s) in --modes {text!r}: {', '.join(unknown) or '(none given)'}. "
            f"Allowed modes: {', '.join(known)}."
        )
    for label in modes:  # a version: only where the mode takes one, well formed
        problem = mode_problem(label)
        if problem is not None:
            raise UsageError(f"--modes {text!r}: {problem}")
    if len(set(modes)) != len(modes):
        raise UsageError(f"--modes {text!r} names a mode twice.")
    return modes


def compare(
    workload: Workload,
    mode_runs: list[ModeRun],
    bootstrap: str,
    repeat: int = 1,
    on_start: Callable[[str, int], Callable[[Progress], None] | None] | None = None,
    run_one: Callable[..., Any] = run,
    stop: threading.Event | None = None,
    facts: RunFacts | None = None,
    files: bool = False,
) -> dict[str, Any]:
    """Run every mode `repeat` times, interleaved; return the comparison document
    (``files``: for a results directory, see `comparison_document`).

    Setting `stop` ends the current run early (its results say `complete: false`) and
    starts no further run. Where the facts are known only after the runs (a cluster's
    faults), run them with `run_modes` and build with `comparison_document`."""
    rounds = run_modes(workload, mode_runs, bootstrap, repeat, on_start, run_one, stop)
    return comparison_document(workload, mode_runs, repeat, rounds, facts, files=files)


def run_modes(
    workload: Workload,
    mode_runs: list[ModeRun],
    bootstrap: str,
    repeat: int = 1,
    on_start: Callable[[str, int], Callable[[Progress], None] | None] | None = None,
    run_one: Callable[..., Any] = run,
    stop: threading.Event | None = None,
) -> list[tuple[int, Any]]:
    """Run every mode `repeat` times, interleaved; each run's round (from 1) and Results."""
    rounds: list[tuple[int, Any]] = []
    extra = {"stop": stop} if stop is not None else {}
    for round_index in range(repeat):
        for mode_run in mode_runs:
            if stop is not None and stop.is_set():
                break
            suffix = f"-{topic_part(mode_run.mode)}-{round_index + 1}"
            progress = on_start(mode_run.mode, round_index) if on_start else None
            results = run_one(workload.with_topic_suffix(suffix),
                              mode_run.settings.with_topic_suffix(suffix),
                              mode_run.mode, bootstrap, progress, **extra)
            rounds.append((round_index + 1, results))
    return rounds


def comparison_document(workload: Workload, mode_runs: list[ModeRun], repeat: int,
                        rounds: list[tuple[int, Any]], facts: RunFacts | None = None,
                        stopped: bool = False, files: bool = False) -> dict[str, Any]:
    """The comparison document of `run_modes`' runs, with the run's facts when given;
    ``stopped``: a signal ended the comparison, so it is not complete; ``files``: for a
    results directory, each run names its companion files."""
    runs = [run_document(results, facts, round=round_number, files=files)
            for round_number, results in rounds]
    complete = not stopped and len(runs) == repeat * len(mode_runs) and all(
        run.get("complete", True) for run in runs)
    document = {
        "schema_version": SCHEMA_VERSION,
        "kind": "comparison",
        "modes": [m.mode for m in mode_runs],
        "repeat": repeat,
        "complete": complete,
        "workload": workload.as_dict(),
        "summary": summarise(runs, [m.mode for m in mode_runs]),
        "runs": runs,
    }
    return document | facts.grouped_fields(runs) if facts is not None else document


def summarise(runs: list[dict[str, Any]], modes: list[str]) -> dict[str, Any]:
    """Per mode and metric: median, min and max over the repeats (modes that ran)."""
    summary: dict[str, Any] = {}
    for mode in modes:
        mine = [r for r in runs if r["mode"] == mode]
        if not mine:  # a comparison stopped by a signal before this mode ran
            continue
        summary[mode] = {}
        for name, get in SUMMARY_METRICS.items():
            if SUMMARY[name].optional:  # measured in some runs only
                values = [float(v) for v in optional_values(get, mine) if v is not None]
                if not values:
                    continue
            else:
                values = [float(get(r)) for r in mine]
            summary[mode][name] = {
                "median": statistics.median(values), "min": min(values), "max": max(values),
            }
    return summary


def optional_values(get: Any, runs: list[dict[str, Any]]) -> list[Any]:
    """An optional metric's value in each run (None where the run lacks it)."""
    values = []
    for document in runs:
        try:
            values.append(get(document))
        except (KeyError, TypeError):
            values.append(None)
    return values


def change_text(metric: str, base: float, value: float) -> str:
    """How `value` compares with `base`, in the words of the seed's Improvement Summary
    (each summary metric's wording is declared in `metric_catalog`)."""
    declared = summary_metric(metric)
    change = declared.change if declared is not None else Change.PERCENT
    if change is Change.DELTA_MS:
        delta = value - base
        return f"{delta:+,.1f} ms"
    if change is Change.DELTA_S:
        return f"{value - base:+,.1f} s"
    if base == 0:
        return "-" if value == 0 else "new"
    ratio = value / base
    if change is Change.FEWER_MORE:
        if value <= base:
            return f"{(1 - ratio) * 100:.1f}% fewer"
        return f"{(ratio - 1) * 100:.1f}% more"
    if change is Change.TIMES:
        return f"{ratio:,.1f}x"
    return f"{(ratio - 1) * 100:+.1f}%"


def summary_rows(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Flat rows (metric, mode, median, min, max, change vs first mode) for tables."""
    summary = document["summary"]
    modes = [mode for mode in document["modes"] if mode in summary]  # a stopped run: fewer
    if not modes:
        return []
    first = modes[0]
    rows = []
    for metric in present_metrics(summary, modes):
        for mode in modes:
            cell = summary[mode][metric]
            change = "" if mode == first else change_text(
                metric, summary[first][metric]["median"], cell["median"])
            rows.append({"metric": metric, "mode": mode, **cell, "change": change})
    return rows


def present_metrics(summary: Mapping[str, Any], modes: list[str]) -> list[str]:
    """The summary rows every mode has, in the catalog's order (optional figures only where
    every mode measured them; older results lack some rows too)."""
    return [name for name in SUMMARY_METRICS if all(name in summary[mode] for mode in modes)]
