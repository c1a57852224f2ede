"""Samples the brokers' and the client's cost beside a run, on a thread of its own.

Every ``sample_s`` (and once before and once after the run) it reads each broker
process's CPU from /proc, kbatch's own CPU (its threads, the children it has reaped, and
its live child processes that are not brokers: a kafka-java JVM), and scrapes each
metrics endpoint. The snapshots go to ``broker_cost.section``. A scrape takes a few
milliseconds on loopback; all endpoints are read at once within ``metrics_fetch``'s
deadline (a stop event ends the wait: the run's, before it; the monitor's own, during it).
An endpoint that fails is remembered (named by its redacted URL, in one warning for the
run) and retried at the next sample.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType

from producer_core.measure.broker_cost import Snapshot
from producer_core.measure.kafka_metrics import reading
from producer_core.measure.metrics_endpoint import Endpoint
from producer_core.measure.metrics_fetch import ScrapeError, scrape_all
from producer_core.measure.process_cost import (
    CpuReading,
    MemoryReading,
    children_of,
    read_cpu,
    read_memory,
)

DEFAULT_SAMPLE_S = 1.0


def client_cpu(own_pid: int, exclude: set[int]) -> CpuReading | None:
    """kbatch's CPU: its process (all threads, reaped children) and its live children that
    are not in ``exclude`` (the brokers it started), with their own reaped children."""
    own = read_cpu(own_pid)
    if own is None:
        return None
    user, system, children = own.user_s, own.system_s, own.children_s
    for child in children_of(own_pid):
        if child in exclude:
            continue
        reading_ = read_cpu(child)
        if reading_ is not None:
            children += reading_.total_s
    return CpuReading(user, system, children)


class CostMonitor:
    """``with CostMonitor(...) as monitor: run()``; then ``monitor.snapshots``."""

    def __init__(self, broker_pids: Callable[[], Mapping[str, int]],
                 endpoints: Sequence[Endpoint] = (), other_pids: Callable[[], Sequence[int]]
                 = tuple, sample_s: float = DEFAULT_SAMPLE_S,
                 clock: Callable[[], float] = time.monotonic, own_pid: int | None = None,
                 stop: threading.Event | None = None) -> None:
        self._broker_pids = broker_pids
        self._endpoints = list(endpoints)
        self._other_pids = other_pids
        self.sample_s = sample_s
        self._clock = clock
        self._own = own_pid or os.getpid()
        self.snapshots: list[Snapshot] = []
        self.failed: dict[str, str] = {}
        """node -> the first scrape error of that endpoint (redacted)."""
        self.broker_memory: dict[str, MemoryReading | None] = {}
        self.client_memory: MemoryReading | None = None
        self.pids: dict[str, int] = {}
        self._stop = threading.Event()
        self._run_stop = stop
        """The run's stop event (a signal): ends the first scrape's wait at once."""
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def snapshot(self, stop: threading.Event | None = None) -> Snapshot:
        pids = dict(self._broker_pids())
        self.pids.update(pids)
        snap = Snapshot(self._clock())
        snap.broker_cpu = {node: read_cpu(pid) for node, pid in pids.items()}
        snap.client_cpu = client_cpu(self._own, set(pids.values()) | set(self._other_pids()))
        scraped = scrape_all(self._endpoints, stop=stop) if self._endpoints else {}
        for node, outcome in scraped.items():
            if isinstance(outcome, ScrapeError):
                if stop is not None and stop.is_set():
                    continue  # cut short by the stop, not the endpoint's fault
                snap.errors[node] = str(outcome)
                self.failed.setdefault(node, str(outcome))
            else:
                snap.kafka[node] = reading(outcome)
        with self._lock:
            self.snapshots.append(snap)
        return snap

    def _loop(self) -> None:
        while not self._stop.wait(self.sample_s):
            self.snapshot(self._stop)

    def __enter__(self) -> CostMonitor:
        self.snapshot(self._run_stop)
        self._thread = threading.Thread(target=self._loop, name="kbatch-cost-monitor",
                                        daemon=True)
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10.0)
        if exc_type is None:
            self.snapshot()
            self.broker_memory = {node: read_memory(pid) for node, pid in self.pids.items()}
            self.client_memory = read_memory(self._own)
