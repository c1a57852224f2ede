"""What a first-use client install or build shows while it runs (``librdkafka@VERSION``'s
wheel, a Go driver, a patched librdkafka).

`producer_core` reports it as lines of text (``progress(text)``: a line ending in "..." is a
step that goes on; a line starting "Compiling " updates the running step's count) and, while
a download runs, as bytes (``progress.on_transfer(done, total, what)``,
`drivers.pip_install`). On a terminal the running step is a spinner with its elapsed time
and the bytes a bar (rich), each gone when it ends, each step's first line kept; elsewhere
(CI logs, a pipe) every line is printed as it comes and the bytes as a line every few
seconds and one when complete, so a log says what took the time."""

from __future__ import annotations

import threading
import time
from types import TracebackType

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from cli.render.tables import console

LOG_EVERY_S = 2.0
COUNTING_PREFIX = "Compiling "
"""Lines that update a running step's count (not a new step): not printed on a terminal."""


class InstallProgress:
    """The `progress` callback of `producer_core.engine.modes.install_clients`, drawn with rich."""

    def __init__(self, out: Console | None = None) -> None:
        self.console = out or console
        self._lock = threading.Lock()
        self._bar: Progress | None = None
        self._task: TaskID | None = None
        self._step: Progress | None = None
        self._step_task: TaskID | None = None
        self._logged_at = -LOG_EVERY_S
        self._finished: set[str] = set()

    def __call__(self, text: str) -> None:
        with self._lock:
            if not self.console.is_terminal:
                self.console.print(escape(text), soft_wrap=True, highlight=False)
                return
            if text.startswith(COUNTING_PREFIX) and self._step is not None:
                assert self._step_task is not None  # the running step's count, same clock
                self._step.update(self._step_task, description=escape(text), refresh=True)
                return
            self._stop_step()
            self.console.print(escape(text), soft_wrap=True, highlight=False)
            if text.endswith("..."):  # a step that goes on: a spinner and its own clock
                self._step = Progress(SpinnerColumn(), TextColumn("{task.description}"),
                                      TimeElapsedColumn(), console=self.console, transient=True)
                self._step.start()
                self._step_task = self._step.add_task(escape(text), total=None)

    def on_transfer(self, done: int, total: int | None, what: str) -> None:
        with self._lock:
            if self.console.is_terminal:
                self._draw(done, total, what)
            else:
                self._log(done, total, what)

    def _draw(self, done: int, total: int | None, what: str) -> None:
        if self._bar is None:
            self._stop_step()
            self._bar = Progress(TextColumn("  {task.description}"), BarColumn(),
                                 DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn(),
                                 console=self.console, transient=True)
            self._bar.start()
            self._task = self._bar.add_task(" ".join(what.split("-")[:2]), total=total)
        assert self._task is not None
        self._bar.update(self._task, completed=done, total=total)
        if total is not None and done >= total:
            self._stop_bar()
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
        self.console.print(f"  downloaded {done / 1e6:.1f}{of} ({escape(what)})", soft_wrap=True,
                      highlight=False)

    def _stop_bar(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
            self._task = None

    def _stop_step(self) -> None:
        if self._step is not None:
            self._step.stop()
            self._step = None
            self._step_task = None

    def __enter__(self) -> InstallProgress:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        with self._lock:
            self._stop_bar()
            self._stop_step()
