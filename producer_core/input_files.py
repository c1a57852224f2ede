"""Reading a file the user named (properties, payload, workload, gates): regular files only.

`Path.read_bytes()` on a FIFO waits for a writer forever, on /dev/zero reads until memory
runs out, and a multi-GB file named by mistake takes minutes before any error. So every
input file is opened without blocking, must be a regular file, and may not exceed its cap;
each problem is one sentence naming the file and what kbatch accepts.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from producer_core.errors import KbatchError, UsageError


def read_regular_file(path: str | Path, what: str, max_bytes: int,
                      error: type[KbatchError] = UsageError) -> bytes:
    """The bytes of ``path``; ``error`` if it is missing, not a regular file, or too large."""
    shown = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise error(f"Cannot read {what} {shown!r}: it does not exist.") from None
    except OSError as exc:
        raise error(f"Cannot read {what} {shown!r}: it cannot be read "
                    f"({exc.strerror or exc}).") from None
    try:
        info = os.fstat(fd)
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
        os.close(fd)
        if stat.S_ISDIR(info.st_mode):
            raise error(f"Cannot read {what} {shown!r}: it is a directory; give a file.")
        if not stat.S_ISREG(info.st_mode):
            raise error(f"Cannot read {what} {shown!r}: it is not a regular file (a device, "
                        "FIFO or socket); kbatch reads only regular files, so copy the "
                        "content to one.")
        raise error(f"Cannot read {what} {shown!r}: it is {info.st_size:,} bytes, and at "
                    f"most {max_bytes:,} are accepted.")
    with os.fdopen(fd, "rb") as f:
        try:
            data = f.read(max_bytes + 1)
        except OSError as exc:
            raise error(f"Cannot read {what} {shown!r}: it cannot be read "
                        f"({exc.strerror or exc}).") from None
    if len(data) > max_bytes:  # it grew while we read it
        raise error(f"Cannot read {what} {shown!r}: it is more than {max_bytes:,} bytes, "
                    "the most accepted.")
    return data
