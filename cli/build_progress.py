"""How a first-use build looks in a terminal: the engine says each step as a line of text
(`ModeSpec.install`'s ``progress``; a line ending in "..." is a step that goes on), and
this draws it. On a terminal the running step is a spinner with its elapsed time (rich),
each step's first line stays printed; elsewhere (CI logs, pipes) every line is printed as
it comes, so the log says what took the time."""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.markup import escape
from rich.progress import Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

COUNTING_PREFIX = "Compiling "
"""Lines that update a running step's count (not a new step): not printed on a terminal."""


class BuildProgress:
    """The ``progress`` callable for `install_clients`, as a context manager."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._live: Progress | None = None
        self._task: TaskID | None = None

    def __call__(self, text: str) -> None:
        if not self.console.is_terminal:
            self.console.print(escape(text), soft_wrap=True, highlight=False)
            return
        if text.startswith(COUNTING_PREFIX) and self._live is not None:
            assert self._task is not None  # the running step's count: same step, same clock
            self._live.update(self._task, description=escape(text), refresh=True)
            return
        self._stop()
        self.console.print(escape(text), soft_wrap=True, highlight=False)
        if text.endswith("..."):  # a step that goes on: a spinner and its own clock
            self._live = Progress(SpinnerColumn(), TextColumn("{task.description}"),
                                  TimeElapsedColumn(), console=self.console, transient=True)
            self._live.start()
            self._task = self._live.add_task(escape(text), total=None)

    def _stop(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def __enter__(self) -> BuildProgress:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._stop()
