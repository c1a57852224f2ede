"""SIGINT and SIGTERM during a run: stop producing, keep what was done, then exit.

The first signal sets a `threading.Event` the engine watches (it stops generating, gives
in-flight requests a short grace and returns Results marked `complete: false`); the CLI
then writes the partial results, stops the embedded broker and exits 128 + the signal.
A second signal raises KeyboardInterrupt at once: the `with` blocks still stop the broker.
A run callable that cannot take a stop event (the Spark runner) is interrupted at once.
"""

from __future__ import annotations

import inspect
import signal
import threading
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

from cli.app.errors import Interrupted

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopOnSignal:
    """Context manager installing the handlers; `signum` is the first signal received."""

    def __init__(self, stoppable: bool = True) -> None:
        self.event = threading.Event()
        self.signum: int | None = None
        self.stoppable = stoppable
        self._saved: dict[int, Any] = {}

    @property
    def exit_code(self) -> int | None:
        return None if self.signum is None else 128 + self.signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name if self.signum is not None else ""

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is not None or not self.stoppable:
            self.signum = self.signum or signum
            raise Interrupted(self.signum)
        self.signum = signum
        self.event.set()

    def __enter__(self) -> StopOnSignal:
        if threading.current_thread() is threading.main_thread():
            for sig in SIGNALS:
                self._saved[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        for sig, handler in self._saved.items():
            signal.signal(sig, handler)
        self._saved.clear()


def accepts_stop(run: Callable[..., Any]) -> bool:
    """Whether an engine `run` callable takes the `stop` event."""
    try:
        return "stop" in inspect.signature(run).parameters
    except (TypeError, ValueError):
        return False
