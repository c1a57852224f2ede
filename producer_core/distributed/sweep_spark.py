"""`kbatch sweep --runner spark --workers N`: the sweep's cells as Spark tasks, N at a time.

Unlike `produce --runner spark` (one workload split into shares that must start together),
a sweep's cells are independent runs: each task runs one whole cell with the engine, either
against the cluster the user named or against its own embedded broker (or lab) that it
starts and stops itself, so cells running at the same time never share a broker. Cells go
out in waves of N tasks; after every wave the driver writes the results directory, so an
interrupted sweep resumes from the last finished wave.

A task never raises: it returns its payload (`distributed.merge.to_payload`, rebuilt
exactly on the driver with `from_payload`) or its error as data, and a failed cell is
marked failed like a local one. pyspark is imported lazily.
"""

from __future__ import annotations

import time
import traceback
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from producer_core.analysis.sweep import Cell
from producer_core.config import ProducerSettings
from producer_core.distributed.merge import from_payload, to_payload
from producer_core.distributed.plan import Master
from producer_core.distributed.session import (
    SparkSessionHandle,
    describe_spark_error,
    start_session,
)
from producer_core.errors import KbatchError
from producer_core.workload.workload import Workload


@dataclass(frozen=True)
class CellTask:
    """One (cell, round), pickled to a Spark worker."""

    cell_id: str
    round_index: int
    workload: Workload
    settings: ProducerSettings
    mode: str
    bootstrap: str | None
    """None: the task starts its own embedded broker (or lab of `shape`)."""
    shape: Mapping[str, Any] = field(default_factory=dict)


def run_cell(task: CellTask) -> dict[str, Any]:
    """Run one cell in a Spark task; its payload, or its error as data."""
    import socket

    from producer_core.brokers.target import broker_target
    from producer_core.engine.drivers.engine import run
    from producer_core.results.results_io import utc_now

    try:
        with broker_target(task.bootstrap, **task.shape) as target:
            started_at = utc_now()
            results = run(task.workload, task.settings, task.mode, target.bootstrap, None)
            results.started_at = started_at
            results.broker = (target.description if task.bootstrap else
                              f"{target.description} (the task's own, on "
                              f"{socket.gethostname()})")
        return {"cell": task.cell_id, "round": task.round_index,
                "payload": to_payload(results)}
    except BaseException as exc:  # noqa: BLE001 - reported to the driver as data
        return {"cell": task.cell_id, "round": task.round_index,
                "error": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc()}


class SparkCells:
    """Runs a sweep's units as Spark tasks, `workers` at a time (see `SweepRunner`)."""

    def __init__(self, master: Master, workers: int, conf: Mapping[str, str] | None = None,
                 shape: Mapping[str, Any] | None = None) -> None:
        self.master = master
        self.workers = workers
        self.conf = dict(conf or {})
        self.shape = dict(shape or {})
        self.session: SparkSessionHandle | None = None

    @property
    def description(self) -> str:
        return f", cells as Spark tasks, {self.workers} at a time on {self.master.url}"

    def __enter__(self) -> SparkCells:
        self.session = start_session(self.master.url, "kbatch sweep", self.master.local,
                                     self.conf)
        return self

    def __exit__(self, *exc: object) -> None:
        session, self.session = self.session, None
        if session is not None:
            session.stop()
            session.log_path.unlink(missing_ok=True)

    def __call__(self, runner: Any, pending: list[tuple[Cell, int]]
                 ) -> Iterator[tuple[Cell, int, Any, str | None, float]]:
        assert self.session is not None, "use SparkCells as a context manager"
        bootstrap = runner.bootstrap or None
        for start in range(0, len(pending), self.workers):
            wave = pending[start:start + self.workers]
            tasks = []
            for index, (cell, round_index) in enumerate(wave):
                if runner.on_start:
                    runner.on_start(cell, round_index, start + index, len(pending))
                settings, workload = runner.unit(cell, round_index)
                tasks.append(CellTask(cell.id, round_index, workload, settings, cell.mode,
                                      bootstrap, self.shape))
            began = time.monotonic()
            outputs = self._run_wave(tasks)
            seconds = (time.monotonic() - began) / max(1, len(wave))
            by_unit = {(o["cell"], o["round"]): o for o in outputs}
            for cell, round_index in wave:
                output = by_unit[(cell.id, round_index)]
                if "error" in output:
                    yield cell, round_index, None, f"round {round_index}: {output['error']}", \
                        seconds
                else:
                    yield cell, round_index, from_payload(output["payload"]), None, seconds

    def _run_wave(self, tasks: list[CellTask]) -> list[dict[str, Any]]:
        assert self.session is not None
        sc = self.session.context
        group = f"kbatch-sweep-{uuid.uuid4().hex[:12]}"
        sc.setJobGroup(group, f"kbatch sweep: {len(tasks)} cells", interruptOnCancel=True)
        try:
            return sc.parallelize(tasks, len(tasks)).map(run_cell).collect()
        except KeyboardInterrupt:
            sc.cancelJobGroup(group)
            raise
        except Exception as exc:  # noqa: BLE001 - Spark's own failure, in one line
            raise KbatchError(f"The Spark job failed: {describe_spark_error(exc)}. Spark's "
                              f"log: {self.session.log_path}.") from None
