"""What a first-use client install shows while it runs (``librdkafka@VERSION``'s wheel).

`producer_core` reports an install as lines (``progress(text)``) and, while a download
runs, as bytes (``progress.on_transfer(done, total, what)``, `drivers.pip_install`). On a
terminal the bytes are a rich bar that goes when the download ends; elsewhere (CI logs, a
pipe) a line every few seconds and one when it is complete, so a log shows it moved."""

from __future__ import annotations

import threading
import time
from types import TracebackType

from rich.markup import escape
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from cli.render.tables import console

LOG_EVERY_S = 2.0


class InstallProgress:
    """The `progress` callback of `producer_core.modes.install_clients`, drawn with rich."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._bar: Progress | None = None
        self._task: TaskID | None = None
        self._logged_at = -LOG_EVERY_S
        self._finished: set[str] = set()

    def __call__(self, text: str) -> None:
        with self._lock:
            console.print(escape(text), soft_wrap=True)

    def on_transfer(self, done: int, total: int | None, what: str) -> None:
        with self._lock:
            if console.is_terminal:
                self._draw(done, total, what)
            else:
                self._log(done, total, what)

    def _draw(self, done: int, total: int | None, what: str) -> None:
        if self._bar is None:
            self._bar = Progress(TextColumn("  {task.description}"), BarColumn(),
                                 DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn(),
                                 console=console, transient=True)
            self._bar.start()
            self._task = self._bar.add_task(" ".join(what.split("-")[:2]), total=total)
        assert self._task is not None
        self._bar.update(self._task, completed=done, total=total)
        if total is not None and done >= total:
            self._stop()
            self._log(done, total, what)

    def _log(self, done: int, total: int | None, what: str) -> None:
        complete = total is not None and done >= total
        now = time.monotonic()
        if what in self._finished or (not complete and now - self._logged_at < LOG_EVERY_S):
            return
        self._logged_at = now
        if complete:
            self._finished.add(what)
        of = f" of {total / 1e6:.1f} MB" if total is not None else " MB"
        console.print(f"  downloaded {done / 1e6:.1f}{of} ({escape(what)})", soft_wrap=True,
                      highlight=False)

    def _stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
            self._task = None

    def __enter__(self) -> InstallProgress:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        with self._lock:
            self._stop()
