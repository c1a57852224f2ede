"""Running the `kbatch` CLI in-process with a time bound, for the bad-input sweep and the
property-based tests: every outcome is an exit code, the output, and the time it took."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from click.testing import CliRunner

from cli.main import cli


class TookTooLong(BaseException):  # noqa: N818 - BaseException: commands must not catch it
    """The command ran past its time bound (a hang or a busy loop)."""


@dataclass
class Outcome:
    exit_code: int | None
    output: str
    seconds: float
    timed_out: bool = False

    @property
    def internal_error(self) -> bool:
        return "Internal error" in self.output or "Traceback" in self.output

    def describe(self) -> str:
        what = "timed out" if self.timed_out else f"exit {self.exit_code}"
        return f"{what} after {self.seconds:.1f} s: {self.output[-600:]}"


@contextmanager
def time_bound(seconds: float) -> Iterator[None]:
    """Raise TookTooLong in the main thread once `seconds` have passed."""
    def expire(signum: int, frame: object) -> None:
        raise TookTooLong(f"more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_kbatch(args: Sequence[str], seconds: float = 20.0) -> Outcome:
    """`kbatch ARGS` in this process; stdout and stderr together in `output`."""
    runner = CliRunner()
    began = time.monotonic()
    try:
        with time_bound(seconds):
            result = runner.invoke(cli, list(args), catch_exceptions=True)
    except TookTooLong:
        return Outcome(None, "", time.monotonic() - began, timed_out=True)
    output = result.output
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        output += f"\nTraceback: {type(result.exception).__name__}: {result.exception}"
    return Outcome(result.exit_code, output, time.monotonic() - began)
