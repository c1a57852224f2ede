"""Running a sweep: every (cell, round) on a fresh topic, the results directory rewritten
after each one so an interrupted sweep loses at most the run in progress and `--resume`
continues from what is on disk. No click, no rich: the CLI passes callbacks.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from producer_core.analysis.compare import summarise
from producer_core.analysis.sweep import (
    Cell,
    CellResult,
    Slo,
    done_units,
    frontiers,
    pending_units,
    recommend,
    resume_key,
)
from producer_core.config import ProducerSettings, build_settings
from producer_core.errors import UsageError
from producer_core.results.metrics import SCHEMA_VERSION, Results
from producer_core.results.results_io import (
    RESULTS_FILE,
    RunRecorder,
    load_results,
    write_document,
    write_run_files,
)
from producer_core.results.run_facts import RunFacts, run_document
from producer_core.workload.workload import Workload

Outcome = tuple[Cell, int, Results | None, str | None, float]
"""(cell, round, its Results or None, the error if it failed, seconds it took)."""


@dataclass
class SweepPlan:
    """What to run: the cells, the repeats, the workload and the settings of every cell."""

    cells: list[Cell]
    repeats: int
    workload: Workload
    common: list[tuple[str, str]] = field(default_factory=list)
    grid: dict[str, Any] = field(default_factory=dict)
    slo: Slo | None = None
    reference_mode: str = "partition"
    minimize: str = "requests"
    """What the recommendation minimises (sweep.OBJECTIVES)."""

    def __post_init__(self) -> None:
        if self.workload.topics and any(c.rate is not None for c in self.cells):
            raise UsageError("--rates needs the one-topic options: a workload file gives "
                             "every topic its own rate profile. Sweep the file's rates by "
                             "editing it, or drop --workload.")

    @property
    def key(self) -> dict[str, Any]:
        return json.loads(json.dumps(resume_key(
            {**self.grid, "repeats": self.repeats}, self.workload.as_dict())))

    def cell_workload(self, cell: Cell, round_index: int) -> Workload:
        workload = self.workload if cell.rate is None else replace(self.workload,
                                                                   rate=cell.rate)
        return workload.with_topic_suffix(f"-{cell.id}-{round_index}")

    def estimate_s(self) -> float:
        """A cell's length before any has run: its duration (or messages at its rate)
        plus a few seconds for topic creation and the drain."""
        w = self.workload
        if w.duration_s is not None:
            return w.duration_s + 3.0
        if w.messages is not None and w.rate:
            return w.messages / w.rate + 3.0
        return 10.0


def cell_results(plan: SweepPlan, runs: Sequence[dict[str, Any]],
                 errors: dict[str, list[str]]) -> list[CellResult]:
    by_cell: dict[str, CellResult] = {c.id: CellResult(c) for c in plan.cells}
    for run in runs:
        if run.get("cell") in by_cell:
            by_cell[run["cell"]].runs.append(run)
    for cell_id, messages in errors.items():
        by_cell[cell_id].errors.extend(messages)
    return list(by_cell.values())


def build_document(plan: SweepPlan, runs: list[dict[str, Any]],
                   errors: dict[str, list[str]]) -> dict[str, Any]:
    """The sweep document: a comparison keyed by cell, plus the `sweep` object."""
    results = cell_results(plan, runs, errors)
    with_runs = [r.cell.id for r in results if r.runs]
    latency = plan.slo.metric if plan.slo else "p99_ms"
    cells = []
    for result in results:
        cells.append({**result.cell.as_dict(), "status": result.status,
                      "reason": result.reason(), "repeats_done": len(result.runs),
                      "figures": result.spread()})
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "sweep",
        "modes": with_runs,
        "repeat": plan.repeats,
        "workload": plan.workload.as_dict(),
        "summary": summarise([{**r, "mode": r["cell"]} for r in runs], with_runs),
        "runs": runs,
        "sweep": {
            "grid": plan.grid,
            "cells": cells,
            "frontier": {"latency": latency, **frontiers(results, latency)},
            "slo": plan.slo.text if plan.slo else None,
            "recommendation": (recommend(results, plan.slo, plan.reference_mode,
                                         plan.minimize) if plan.slo else None),
            "resume_key": plan.key,
        },
    }


def load_previous(out_dir: Path, plan: SweepPlan) -> list[dict[str, Any]]:
    """The runs of an earlier, interrupted invocation of the same sweep in `out_dir`."""
    if not (out_dir / RESULTS_FILE).is_file():
        return []
    document = load_results(out_dir).document
    if document.get("kind") != "sweep":
        raise UsageError(f"--resume: {out_dir} holds a {document.get('kind', 'run')}, not a "
                         "sweep; give the --out directory of the sweep to continue.")
    if document["sweep"].get("resume_key") != plan.key:
        raise UsageError(f"--resume: the sweep in {out_dir} was started with a different "
                         "grid, repeats or workload; run the same command again to resume it, "
                         "or use a new --out directory.")
    return list(document["runs"])


@dataclass
class SweepRunner:
    """Runs the pending units of a plan and keeps `out_dir` current after each."""

    plan: SweepPlan
    out_dir: Path
    bootstrap: str
    run_one: Callable[..., Any]
    """The engine's run on the sweep's broker; a `RunRecorder` (cli.steps.pipeline's) is
    used as it is, any other callable is recorded here (each Results stamped)."""
    broker: str = ""
    embedded: bool = True
    implementation: str | None = None  # the BrokerTarget's, e.g. kafka or docker
    version: str | None = None
    on_start: Callable[[Cell, int, int, int], Any] | None = None
    on_end: Callable[[Cell, int, str | None, float], None] | None = None
    execute: Callable[[SweepRunner, list[tuple[Cell, int]]], Iterator[Outcome]] | None = None
    """How units run: `run_here` (default) or a Spark executor
    (producer_core.distributed.sweep_spark)."""
    runs: list[dict[str, Any]] = field(default_factory=list)
    errors: dict[str, list[str]] = field(default_factory=dict)
    stop: threading.Event | None = None
    """Set by a signal: the unit in progress ends early and is not kept (it runs again on
    --resume), no other starts, and the sweep ends with KeyboardInterrupt (`run_here`)."""

    def write(self) -> dict[str, Any]:
        document = build_document(self.plan, self.runs, self.errors) | \
            self.facts.grouped_fields(self.runs)
        write_document(self.out_dir, document)
        return document

    @property
    def facts(self) -> RunFacts:
        """The facts every run of the sweep and its document carry."""
        return RunFacts(self.broker, self.embedded, self.implementation, self.version)

    def run(self, resume: bool) -> dict[str, Any]:
        if resume:
            self.runs = load_previous(self.out_dir, self.plan)
        elif (self.out_dir / RESULTS_FILE).is_file():
            raise UsageError(f"{self.out_dir} already holds results; give --resume to continue "
                             "that sweep, or a new --out directory.")
        pending = pending_units(self.plan.cells, self.plan.repeats, done_units(self.runs))
        self.write()
        execute = self.execute or SweepRunner.run_here
        for cell, round_index, results, error, seconds in execute(self, pending):
            if error is not None:
                self.errors.setdefault(cell.id, []).append(error)
            else:
                assert results is not None  # an outcome without an error has results
                run = run_document(results, round=round_index, cell=cell.id, files=True)
                write_run_files(self.out_dir, run, results)
                self.runs.append(self.facts.finish(run))  # its files, then its facts
            self.write()
            if self.on_end:
                self.on_end(cell, round_index, error, seconds)
        return self.write()

    def unit(self, cell: Cell, round_index: int) -> tuple[ProducerSettings, Workload]:
        """A cell's settings and workload for one round, on topics of its own."""
        settings = build_settings([*self.plan.common, *cell.assignments()], mode=cell.mode)
        suffix = f"-{cell.id}-{round_index}"
        return settings.with_topic_suffix(suffix), self.plan.cell_workload(cell, round_index)

    def run_here(self, pending: list[tuple[Cell, int]]) -> Iterator[Outcome]:
        """The local executor: one unit after the other in this process."""
        recorder = self.run_one if isinstance(self.run_one, RunRecorder) \
            else RunRecorder(self.run_one)
        stop = {"stop": self.stop} if self.stop is not None else {}
        for index, (cell, round_index) in enumerate(pending):
            self.check_stop()
            progress = self.on_start(cell, round_index, index, len(pending)) \
                if self.on_start else None
            settings, workload = self.unit(cell, round_index)
            started = time.monotonic()
            try:
                results = recorder(workload, settings, cell.mode, self.bootstrap, progress,
                                   **stop)
            except Exception as exc:  # one cell failing must not lose the others
                yield (cell, round_index, None,
                       f"round {round_index}: {type(exc).__name__}: {exc}",
                       time.monotonic() - started)
            else:
                self.check_stop()  # a unit the signal cut short is not a finished one
                yield cell, round_index, results, None, time.monotonic() - started

    def check_stop(self) -> None:
        """End the sweep here once `stop` is set; what finished is on disk already."""
        if self.stop is not None and self.stop.is_set():
            raise KeyboardInterrupt("the sweep was stopped by a signal")
