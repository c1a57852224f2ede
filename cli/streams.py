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
import sys


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
