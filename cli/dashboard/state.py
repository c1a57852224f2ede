"""What the live dashboard knows about a command that is running: its runs (interval rows
and the latest progress snapshot), a sweep's progress, warnings and, at the end, the HTML
report. Written by the run (engine callbacks, CLI hooks), read by the dashboard's HTTP
threads (cli/dashboard/server.py).

The writers are the run's own thread and event loop, so every write is O(1) under a lock
held for an append: the run never waits on a page being drawn. Readers take a snapshot
(shallow copies) and build figures and text outside the lock.
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

MAX_WARNINGS = 200


@dataclass
class LiveRun:
    """One run (a mode, a round, a sweep cell) as the dashboard sees it."""

    label: str
    mode: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    progress: dict[str, Any] | None = None
    done: bool = False

    def totals(self) -> dict[str, float]:
        """Generated, acknowledged, failed and requests so far: the live snapshot (fresher
        than the last interval) or the intervals' sum (complete once the run has ended),
        whichever is higher."""
        progress = self.progress or {}
        sums = {key: float(sum(r.get(key, 0) for r in self.rows))
                for key in ("generated", "acknowledged", "failed", "requests")}
        return {
            "generated": max(sums["generated"], progress.get("generated", 0)),
            "acknowledged": max(sums["acknowledged"], progress.get("acknowledged", 0)),
            "failed": max(sums["failed"], progress.get("failed", 0)),
            "requests": max(sums["requests"], progress.get("requests_sent", 0)),
        }


@dataclass
class SweepStatus:
    done: int
    total: int
    eta_s: float | None
    current: str


@dataclass
class Snapshot:
    """A consistent copy of the state for one page or /metrics answer."""

    title: str
    version: int
    figures_version: int
    elapsed_s: float
    runs: list[LiveRun]
    sweep: SweepStatus | None
    warnings: list[str]
    finished: bool
    report: Path | None
    sweep_document: Path | None


class DashboardState:
    """The shared state; every method may be called from any thread."""

    def __init__(self, title: str) -> None:
        self.title = title
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._version = 0
        self._figures_version = 0
        self._runs: list[LiveRun] = []
        self._sweep: SweepStatus | None = None
        self._warnings: list[str] = []
        self._finished = False
        self._report: Path | None = None
        self._sweep_document: Path | None = None
        self.warnings_total = 0

    # ----------------------------------------------------------------- writers (the run)
    def begin_run(self, label: str, mode: str) -> LiveRun:
        with self._lock:
            for run in self._runs:  # a second round of a mode gets its own line
                if run.label == label:
                    rounds = sum(1 for r in self._runs if r.label.split(" #")[0] == label)
                    label = f"{label} #{rounds + 1}"
                    break
            for run in self._runs:
                run.done = True
            live = LiveRun(label, mode)
            self._runs.append(live)
            self._bump(figures=True)
        return live

    def interval(self, run: LiveRun, row: dict[str, Any]) -> None:
        with self._lock:
            run.rows.append(row)
            self._bump(figures=True)
        if row.get("failed"):
            self.warn(f"{run.label}: {row['failed']:,} messages failed in "
                      f"{row['start_s']:.1f}-{row['end_s']:.1f} s")

    def progress(self, run: LiveRun, progress: Any) -> None:
        snapshot = asdict(progress) if hasattr(progress, "__dataclass_fields__") else dict(
            progress)
        with self._lock:
            run.progress = snapshot
            self._bump()

    def warn(self, text: str) -> None:
        with self._lock:
            self.warnings_total += 1
            if len(self._warnings) < MAX_WARNINGS:
                self._warnings.append(text)
            self._bump()

    def sweep_progress(self, done: int, total: int, eta_s: float | None, current: str,
                       document: Path | None = None) -> None:
        with self._lock:
            self._sweep = SweepStatus(done, total, eta_s, current)
            if document is not None:
                self._sweep_document = document
            self._bump(figures=True)

    def finish(self, report: Path | None) -> None:
        with self._lock:
            self._finished = True
            self._report = report
            for run in self._runs:
                run.done = True
            self._bump(figures=True)

    def _bump(self, figures: bool = False) -> None:
        self._version += 1
        if figures:
            self._figures_version += 1

    # ----------------------------------------------------------------- readers (HTTP)
    @property
    def finished(self) -> bool:
        return self._finished

    def snapshot(self) -> Snapshot:
        with self._lock:
            runs = [LiveRun(r.label, r.mode, list(r.rows), r.progress, r.done)
                    for r in self._runs]
            return Snapshot(self.title, self._version, self._figures_version,
                            time.monotonic() - self._started, runs, self._sweep,
                            list(self._warnings), self._finished, self._report,
                            self._sweep_document)
