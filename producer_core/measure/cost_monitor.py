"""Samples the brokers' and the client's cost beside a run, on a thread of its own.

Every ``sample_s`` (and once before and once after the run) it reads each broker
process's CPU from /proc, kbatch's own CPU (its threads, the children it has reaped, and
its live child processes that are not brokers: a kafka-java JVM), and scrapes each
metrics endpoint. The snapshots go to ``broker_cost.section``. A scrape takes a few
milliseconds on loopback; an endpoint that fails is remembered (one warning per run,
named by its redacted URL) and retried at the next sample.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType

from producer_core.measure.broker_cost import Snapshot
from producer_core.measure.kafka_metrics import reading
from producer_core.measure.metrics_endpoint import Endpoint, ScrapeError, scrape
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
                 clock: Callable[[], float] = time.monotonic, own_pid: int | None = None
                 ) -> None:
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
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def snapshot(self) -> Snapshot:
        pids = dict(self._broker_pids())
        self.pids.update(pids)
        snap = Snapshot(self._clock())
        snap.broker_cpu = {node: read_cpu(pid) for node, pid in pids.items()}
        snap.client_cpu = client_cpu(self._own, set(pids.values()) | set(self._other_pids()))
        for endpoint in self._endpoints:
            try:
                snap.kafka[endpoint.node] = reading(scrape(endpoint))
            except ScrapeError as exc:
                snap.errors[endpoint.node] = str(exc)
                self.failed.setdefault(endpoint.node, str(exc))
        with self._lock:
            self.snapshots.append(snap)
        return snap

    def _loop(self) -> None:
        while not self._stop.wait(self.sample_s):
            self.snapshot()

    def __enter__(self) -> CostMonitor:
        self.snapshot()
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
