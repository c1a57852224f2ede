"""Turn anticipated failures into one clear paragraph and an exit code, never a traceback."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from producer_core.errors import KbatchError, UsageError

F = TypeVar("F", bound=Callable[..., Any])

EXIT_RUNTIME = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def friendly_errors(func: F) -> F:
    """Wrap a command: usage errors exit 2, runtime failures exit 1, Ctrl-C exits 130."""

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
        except KeyboardInterrupt:
            click.echo("Interrupted: the run was stopped and its broker shut down.", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except Exception as exc:  # a bug, not bad input: say so in one paragraph
            if os.environ.get("KBATCH_DEBUG"):
                raise
            click.echo(
                f"Internal error: {type(exc).__name__}: {exc}. This is a bug in kbatch, not in "
                "your input; run again with KBATCH_DEBUG=1 to see the traceback, and report it.",
                err=True,
            )
            sys.exit(EXIT_RUNTIME)

    return wrapper  # type: ignore[return-value]
