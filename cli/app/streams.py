"""Standard streams a careless environment hands kbatch: closed, or unable to encode.

Run with stdout closed (`kbatch ... >&-`), Python has ``sys.stdout = None`` and the first
print fails deep inside rich; in a C/POSIX locale without UTF-8 mode, stdout is ASCII and
the first "—" or "±" in a table fails. Neither is the user's input being wrong: a closed
stream is treated as /dev/null (the exit code and --json/--out still tell the outcome),
and characters the stream cannot encode are replaced, not fatal. Runs on import of the
`cli` package, before rich creates its consoles.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import sys
import threading
from types import FrameType


def _usable(stream: io.TextIOBase | None) -> bool:
    if stream is None:
        return False
    try:
        stream.fileno()
    except (OSError, ValueError, io.UnsupportedOperation):
        return not getattr(stream, "closed", False)
    return True


def harden_streams() -> None:
    """Give None/closed stdout or stderr a /dev/null stand-in; replace unencodable text."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if not _usable(stream):
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115
            continue
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
        if encoding != "utf8" and hasattr(stream, "reconfigure"):
            with contextlib.suppress(ValueError, io.UnsupportedOperation):
                stream.reconfigure(errors="replace")


# ------------------------------------------------------------------ signals at start-up

_STARTUP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _startup_signal(signum: int, frame: FrameType | None) -> None:
    """A signal while kbatch imports its modules (a second or two): nothing runs yet, so
    exit at once with 128 + the signal and one line, not a KeyboardInterrupt traceback
    from the middle of an import."""
    name = signal.Signals(signum).name
    with contextlib.suppress(Exception):
        sys.stderr.write(f"Interrupted by {name} while starting: nothing was done.\n")
    raise SystemExit(128 + signum)


def guard_startup_signals() -> None:
    """Install the start-up handlers (main thread only; only over Python's defaults)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in _STARTUP_SIGNALS:
        if signal.getsignal(sig) in (signal.SIG_DFL, signal.default_int_handler):
            signal.signal(sig, _startup_signal)


def end_startup_signals() -> None:
    """Give the signals back to Python's defaults once the command is ready to run."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig, default in ((signal.SIGINT, signal.default_int_handler),
                         (signal.SIGTERM, signal.SIG_DFL)):
        if signal.getsignal(sig) is _startup_signal:
            signal.signal(sig, default)


def _late_signal(signum: int, frame: FrameType | None) -> None:
    """A signal after the command is done, while the interpreter shuts down: its results are
    written, so leave at once with 128 + the signal instead of a KeyboardInterrupt in the
    middle of the teardown (Python then kills itself with the signal: exit status -2)."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(128 + signum)


def guard_shutdown_signals() -> None:
    """Install `_late_signal` for the teardown after a command (main thread only)."""
    if threading.current_thread() is threading.main_thread():
        for sig in _STARTUP_SIGNALS:
            signal.signal(sig, _late_signal)


def ignore_signals_at_the_end() -> None:
    """Registered first, so the last exit handler to run: from here Python's finalization
    would put Python handlers back to SIG_DFL, and a signal would kill the finished process
    (-2); an ignored signal stays ignored for the last milliseconds."""
    import atexit

    def ignore() -> None:
        if threading.current_thread() is threading.main_thread():
            for sig in _STARTUP_SIGNALS:
                signal.signal(sig, signal.SIG_IGN)

    atexit.register(ignore)


# ------------------------------------------------------------------ client libraries' logs


def quiet_client_logs() -> None:
    """Third-party client log lines to a file, and one line about them at exit."""
    import atexit

    from producer_core.engine.transport.client_logs import capture_client_logs, client_log_summary

    capture_client_logs()

    def say() -> None:
        summary = client_log_summary()
        if summary:
            with contextlib.suppress(Exception):
                sys.stderr.write(summary + "\n")

    atexit.register(say)
