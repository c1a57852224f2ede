"""pip, run so that a first-use install shows what it is doing while it does it.

``librdkafka@VERSION`` installs a confluent-kafka wheel with pip (`librdkafka_versions`):
a few MB that take seconds on a fast link and minutes on a slow one. pip's own bar draws
only on a terminal it owns, so kbatch runs pip with its output piped and reports it
itself: each line pip writes (``Collecting``, ``Downloading ... (3.9 MB)``,
``Installing``) goes to the `progress` callback as it comes, and while a wheel downloads
(pip writes it under its temporary directory, which kbatch chooses) the bytes so far
go to the callback's optional ``on_transfer(done, total, what)`` (total: pip's own
figure, None if it gave none) about four times a second. The CLI draws that as a bar.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

POLL_S = 0.25
SIZE = re.compile(r"\((\d+(?:\.\d+)?)\s*(kB|MB|GB|B)\)")
UNITS = {"B": 1, "kB": 1_000, "MB": 1_000_000, "GB": 1_000_000_000}
SHOWN = ("Collecting", "Downloading", "Using cached", "Installing", "Successfully")
"""The lines of pip's output that say where it is (the rest stays in the error text)."""


class Transfer(Protocol):
    def __call__(self, done: int, total: int | None, what: str) -> None: ...


def announced_size(line: str) -> int | None:
    """The size pip announces on a ``Downloading x.whl (3.9 MB)`` line, in bytes."""
    match = SIZE.search(line)
    return None if match is None else round(float(match.group(1)) * UNITS[match.group(2)])


def downloaded(tmp: Path) -> int:
    """Bytes of wheels pip has written under `tmp` so far."""
    total = 0
    for directory, _, names in os.walk(tmp):
        for name in names:
            if name.endswith((".whl", ".tar.gz", ".zip")):
                with contextlib.suppress(OSError):  # renamed or removed meanwhile
                    total += (Path(directory) / name).stat().st_size
    return total


def run_pip(args: list[str], tmp: Path, progress: Callable[[str], None], timeout_s: float
            ) -> tuple[int, str]:
    """Run pip (`args`: the whole command) with its temporary files under `tmp`, telling
    `progress` as it goes (see the module); its exit code and its whole output.
    subprocess.TimeoutExpired after `timeout_s` (pip killed)."""
    tmp.mkdir(parents=True, exist_ok=True)
    transfer: Transfer | None = getattr(progress, "on_transfer", None)
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            stdin=subprocess.DEVNULL, env={**os.environ, "TMPDIR": str(tmp)})
    assert proc.stdout is not None
    lines: list[str] = []
    state = _Download()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            text = line.strip()
            if text.startswith(SHOWN):
                if text.startswith("Downloading"):
                    state.total, state.what = announced_size(text), text.split()[1]
                progress(text)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + timeout_s
    most = 0
    try:
        while proc.poll() is None:
            if time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                raise subprocess.TimeoutExpired(args, timeout_s)
            if transfer is not None and state.what:
                most = max(most, downloaded(tmp))  # never backwards (pip removes the wheel)
                total = None if state.total is None else max(state.total, most)  # (rounded)
                transfer(most, total, state.what)
            time.sleep(POLL_S)
    finally:
        reader.join(5)
    if transfer is not None and state.what and proc.returncode == 0:  # all of it
        done = max(most, downloaded(tmp), state.total or 0)
        transfer(done, done, state.what)
    return proc.returncode, "".join(lines)


@dataclass
class _Download:
    """The wheel pip said it is downloading, and its announced size."""

    what: str = ""
    total: int | None = None
