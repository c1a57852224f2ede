"""Turn anticipated failures into one clear paragraph and an exit code, never a traceback."""

from __future__ import annotations

import functools
import os
import signal
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from producer_core.errors import Interrupted, KbatchError, UsageError

F = TypeVar("F", bound=Callable[..., Any])

EXIT_RUNTIME = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
"""128 + SIGINT; a SIGTERM exits 143 (128 + 15), see `cli.app.stopping`."""


__all__ = ["EXIT_INTERRUPTED", "EXIT_RUNTIME", "EXIT_USAGE", "Interrupted", "friendly_errors"]


def friendly_errors(func: F) -> F:
    """Wrap a command: usage errors exit 2, runtime failures exit 1, Ctrl-C exits 130
    (SIGTERM 143)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except UsageError as exc:
            click.echo(f"Error: {exc}", err=True)
            sys.exit(EXIT_USAGE)
        except KbatchError as exc:
            click.echo(f"Error: {exc}", err=True)
            sys.exit(EXIT_RUNTIME)
        except KeyboardInterrupt as exc:
            signum = getattr(exc, "signum", signal.SIGINT)
            click.echo(f"Interrupted by {signal.Signals(signum).name}: the run was stopped at "
                       "once, without results (any broker kbatch started was shut down).", err=True)
            sys.exit(128 + signum)
        except Exception as exc:  # a bug, not bad input: say so in one paragraph
            if os.environ.get("KBATCH_DEBUG"):
                raise
            click.echo(
                f"Internal error: {type(exc).__name__}: {exc}. This is a bug in kbatch, not in "
                "your input; run again with KBATCH_DEBUG=1 to see the traceback, and report it.",
                err=True,
            )
            sys.exit(EXIT_RUNTIME)

    return wrapper  # type: ignore[return-value]  # wraps: same call as func
