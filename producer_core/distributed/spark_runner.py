"""`--runner spark`: one workload as N shares, each one Spark task running the engine.

The driver (this process) plans (`plan`): checks the master, creates the topics, splits
the workload into shares with one common start instant. The shares run as one *barrier*
stage, so Spark launches all of them at once or none (a share waiting for a free slot
would start late and break the common schedule), with task retries off (a retried share
would produce its messages twice). Each task calls `producer_core.engine.drivers.engine.run`
on its share as a library and returns its Results as a payload of plain values (`merge.to_payload`:
counters, encoded HdrHistograms, request log rows); the driver merges them exactly
(`merge.merge_results`).

A task never raises: it returns its error (type, message, share, host) as data, and the
driver raises a KbatchError with that text, so no Java stack trace reaches the user.
Failures of Spark itself are reduced to their one-line cause (`describe_spark_error`).

While the tasks run, the driver polls Spark's status tracker (tasks finished) and
listens on a UDP port for the tasks' progress (messages acknowledged so far): each task
sends a small datagram every 0.25 s, and losing one costs nothing but a stale figure.

pyspark is imported lazily, inside functions: importing this module does not need it.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from producer_core.config import ProducerSettings
from producer_core.distributed.merge import (
    from_payload,
    merge_results,
    share_summary,
    to_payload,
)
from producer_core.distributed.plan import (
    DEFAULT_START_LEAD_S,
    Master,
    check_slots,
    create_topics,
    plan_shares,
    start_instant,
)
from producer_core.distributed.session import (
    SparkSessionHandle,
    describe_spark_error,
    start_session,
)
from producer_core.errors import KbatchError, UsageError
from producer_core.results.metrics import Results
from producer_core.workload.workload import Workload

POLL_INTERVAL_S = 0.25
LATE_START_WARN_S = 0.25
"""A share that began this much after the common start instant is reported."""


@dataclass(frozen=True)
class ShareTask:
    """Everything one Spark task needs (pickled to the worker)."""

    index: int
    count: int
    workload: Workload
    settings: ProducerSettings
    mode: str
    bootstrap: str
    start_at: float
    progress_to: tuple[str, int] | None = None


@dataclass(frozen=True)
class SparkProgress:
    """A snapshot of a distributed run for live displays."""

    elapsed_s: float
    """Seconds since the common start instant (negative: the shares have not started)."""
    tasks_total: int
    tasks_done: int
    tasks_running: int
    generated: int
    acknowledged: int
    failed: int
    requests_sent: int
    target_messages: int | None
    shares_reporting: int


@dataclass
class DistributedRun:
    """The merged Results, and each share's own (for checks and reports)."""

    results: Results
    shares: list[Results] = field(default_factory=list)


# ------------------------------------------------------------------ inside a task


class _ProgressSender:
    """The engine's on_progress inside a task: one UDP datagram per progress tick."""

    def __init__(self, address: tuple[str, int] | None, index: int) -> None:
        self.address = address
        self.index = index
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM) if address else None
        self.began: float | None = None
        """Wall-clock start of the engine's schedule, from its progress ticks."""

    def __call__(self, progress: Any) -> None:
        if progress.elapsed_s > 0:
            began = time.time() - progress.elapsed_s
            self.began = began if self.began is None else min(self.began, began)
        if self.sock is None or self.address is None:
            return
        data = json.dumps([self.index, progress.generated, progress.acknowledged,
                           progress.failed, progress.requests_sent]).encode()
        with contextlib.suppress(OSError):  # progress is a nicety; the run goes on
            self.sock.sendto(data, self.address)

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()


def run_share(task: ShareTask) -> dict[str, Any]:
    """Run one share with the engine; return its payload, or its error as data."""
    sender = _ProgressSender(task.progress_to, task.index)
    host = socket.gethostname()
    try:
        from producer_core.engine.drivers.engine import run

        results = run(task.workload, task.settings, task.mode, task.bootstrap, sender)
        began = sender.began  # the engine's schedule start, wall clock
        if began is None:  # shorter than one progress tick: the end minus the duration
            began = time.time() - results.duration_s
        payload = to_payload(results)
        payload["share"] = {"index": task.index, "host": host, "pid": os.getpid(),
                            "start_offset_s": began - task.start_at}
        return {"payload": payload}
    except BaseException as exc:  # noqa: BLE001 - reported to the driver as data
        return {"error": {
            "index": task.index, "host": host, "type": type(exc).__name__,
            "message": str(exc) or type(exc).__name__, "usage": isinstance(exc, UsageError),
            "traceback": traceback.format_exc(),
        }}
    finally:
        sender.close()


def _run_partition(tasks: Iterable[ShareTask]) -> Iterator[dict[str, Any]]:
    for task in tasks:
        yield run_share(task)


# ------------------------------------------------------------------ on the driver


class _ProgressListener:
    """Receives the tasks' progress datagrams; keeps the latest per share."""

    def __init__(self, bind_host: str, advertise_host: str) -> None:
        self.latest: dict[int, list[int]] = {}
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((bind_host, 0))
        self.sock.settimeout(0.2)
        self.address = (advertise_host, self.sock.getsockname()[1])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="kbatch-progress", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                data = self.sock.recv(512)
            except (TimeoutError, OSError):
                continue
            try:
                index, *figures = json.loads(data)
                self.latest[int(index)] = [int(x) for x in figures]
            except (ValueError, TypeError):
                continue

    def totals(self) -> tuple[list[int], int]:
        values = list(self.latest.values())
        return [sum(v[i] for v in values) for i in range(4)], len(values)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(1.0)
        self.sock.close()


class SparkRunner:
    """Runs workloads as N shares on Spark; call it like `producer_core.engine.drivers.engine.run`.

    Use as a context manager (or `start()`/`stop()`): the Spark session lives as long as
    the runner, so compare-modes runs every mode on one session.
    """

    def __init__(self, master: Master, workers: int,
                 start_lead_s: float = DEFAULT_START_LEAD_S,
                 conf: Mapping[str, str] | None = None) -> None:
        check_slots(master, workers)
        start_instant(0.0, start_lead_s)  # validates the lead
        self.master = master
        self.workers = workers
        self.start_lead_s = start_lead_s
        self.conf = dict(conf or {})
        self.session: SparkSessionHandle | None = None
        self._keep_log = False

    def start(self) -> SparkRunner:
        if self.session is None:
            self.session = start_session(self.master.url, "kbatch produce",
                                         self.master.on_this_machine, self.conf)
        return self

    def stop(self) -> None:
        session, self.session = self.session, None
        if session is not None:
            session.stop()
            if not self._keep_log:  # a failure's message names the log: keep it
                session.log_path.unlink(missing_ok=True)

    def __enter__(self) -> SparkRunner:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __call__(self, workload: Workload, settings: ProducerSettings, mode: str,
                 bootstrap: str, on_progress: Callable[[SparkProgress], None] | None = None,
                 deliveries: list[Any] | None = None) -> Results:
        if deliveries is not None:
            raise ValueError("the Spark runner does not collect per-batch deliveries")
        return self.run_distributed(workload, settings, mode, bootstrap, on_progress).results

    run = __call__

    def run_distributed(self, workload: Workload, settings: ProducerSettings, mode: str,
                        bootstrap: str,
                        on_progress: Callable[[SparkProgress], None] | None = None,
                        ) -> DistributedRun:
        """Plan, run the shares as one barrier stage, and merge what they measured."""
        session = self.start().session
        assert session is not None
        create_topics(workload, settings, bootstrap)
        listener = self._listener(session)
        try:
            start_at = start_instant(time.time(), self.start_lead_s)
            shares = plan_shares(workload, self.workers, start_at)
            tasks = [ShareTask(i, self.workers, share, settings, mode, bootstrap, start_at,
                               listener.address if listener else None)
                     for i, share in enumerate(shares)]
            outputs = self._run_job(session, tasks, on_progress, listener, start_at,
                                    workload.total_messages)
        finally:
            if listener is not None:
                listener.close()
        _raise_failures(outputs, self.workers, session)
        payloads = [output["payload"] for output in outputs]
        share_results = [from_payload(payload) for payload in payloads]
        merged = merge_results(share_results, workload.as_dict())
        self._describe(merged, payloads, start_at)
        return DistributedRun(merged, share_results)

    # -------------------------------------------------------------- internals
    def _listener(self, session: SparkSessionHandle) -> _ProgressListener | None:
        try:
            if self.master.on_this_machine:
                return _ProgressListener("127.0.0.1", "127.0.0.1")
            host = session.context.getConf().get("spark.driver.host") or socket.gethostname()
            return _ProgressListener("0.0.0.0", host)
        except OSError:
            return None  # no acknowledged-so-far figures; tasks finished still shown

    def _run_job(self, session: SparkSessionHandle, tasks: list[ShareTask],
                 on_progress: Callable[[SparkProgress], None] | None,
                 listener: _ProgressListener | None, start_at: float,
                 target: int | None) -> list[dict[str, Any]]:
        sc = session.context
        group = f"kbatch-{uuid.uuid4().hex[:12]}"
        outcome: dict[str, Any] = {}

        def job() -> None:
            try:
                sc.setJobGroup(group, f"kbatch: {len(tasks)} shares", interruptOnCancel=True)
                rdd = sc.parallelize(tasks, len(tasks)).barrier().mapPartitions(_run_partition)
                outcome["value"] = rdd.collect()
            except BaseException as exc:  # noqa: BLE001 - re-raised on the driver's thread
                outcome["error"] = exc

        thread = threading.Thread(target=job, name="kbatch-spark-job", daemon=True)
        thread.start()
        try:
            while thread.is_alive():
                thread.join(POLL_INTERVAL_S)
                if on_progress is not None:
                    on_progress(_snapshot(sc, group, len(tasks), listener, start_at, target))
        except BaseException:  # Ctrl-C: stop the shares before leaving
            sc.cancelJobGroup(group)
            thread.join(30)
            raise
        if "error" in outcome:
            self._keep_log = True
            exc = outcome["error"]
            raise KbatchError(
                f"The Spark job failed: {describe_spark_error(exc)}. Spark's log: "
                f"{session.log_path}.") from None
        return outcome["value"]

    def _describe(self, merged: Results, payloads: list[dict[str, Any]],
                  start_at: float) -> None:
        shares = []
        for payload, share in zip(payloads, map(from_payload, payloads), strict=True):
            info = payload["share"]
            offset = info["start_offset_s"]
            shares.append({"index": info["index"], "host": info["host"],
                           "start_offset_ms": round(offset * 1000, 1), **share_summary(share)})
            if offset > LATE_START_WARN_S:
                merged.warnings.append(
                    f"Share {info['index']} started {offset:.2f} s after the common start "
                    "instant, so its schedule is shifted by that much against the others; "
                    f"raise --spark-start-lead (now {self.start_lead_s:g} s).")
        merged.runner = {
            "name": "spark",
            "master": self.master.url,
            "workers": self.workers,
            "start_lead_s": self.start_lead_s,
            "start_at": datetime.fromtimestamp(start_at, UTC).isoformat(
                timespec="milliseconds").replace("+00:00", "Z"),
            "shares": shares,
        }


def _snapshot(sc: Any, group: str, total: int, listener: _ProgressListener | None,
              start_at: float, target: int | None) -> SparkProgress:
    done = running = 0
    try:
        tracker = sc.statusTracker()
        for job_id in tracker.getJobIdsForGroup(group):
            job = tracker.getJobInfo(job_id)
            for stage_id in job.stageIds if job else ():
                stage = tracker.getStageInfo(stage_id)
                if stage is not None:
                    done += stage.numCompletedTasks
                    running += stage.numActiveTasks
    except Exception:  # noqa: BLE001 - the tracker is best effort while Spark shuts down
        pass
    figures, reporting = listener.totals() if listener else ([0, 0, 0, 0], 0)
    return SparkProgress(
        elapsed_s=time.time() - start_at, tasks_total=total, tasks_done=done,
        tasks_running=running, generated=figures[0], acknowledged=figures[1],
        failed=figures[2], requests_sent=figures[3], target_messages=target,
        shares_reporting=reporting)


def _raise_failures(outputs: list[dict[str, Any]], count: int,
                    session: SparkSessionHandle) -> None:
    errors = [output["error"] for output in outputs if "error" in output]
    if not errors:
        return
    first = errors[0]
    more = f" ({len(errors) - 1} more shares failed too)" if len(errors) > 1 else ""
    text = (f"Share {first['index']} of {count} failed on {first['host']}: "
            f"{first['type']}: {first['message'].rstrip('.')}{more}.")
    if first["usage"]:
        raise UsageError(text)
    raise KbatchError(text)
