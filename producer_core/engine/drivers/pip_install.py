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
from dataclasses import dataclass, field
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
    subprocess.TimeoutExpired after `timeout_s` (pip killed).

    A download's progress is reported before the line pip writes after it (a local
    index can serve a wheel and pip install it between two samples), so the user reads
    them in the order they happened."""
    tmp.mkdir(parents=True, exist_ok=True)
    transfer: Transfer | None = getattr(progress, "on_transfer", None)
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            stdin=subprocess.DEVNULL, env={**os.environ, "TMPDIR": str(tmp)})
    assert proc.stdout is not None
    lines: list[str] = []
    state = _Download(tmp, transfer)

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            text = line.strip()
            if text.startswith(SHOWN):
                with state.lock:
                    state.finish()  # pip has moved on from the wheel it was downloading
                    if text.startswith("Downloading"):
                        state.start(text)
                    progress(text)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + timeout_s
    try:
        while proc.poll() is None:
            if time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                raise subprocess.TimeoutExpired(args, timeout_s)
            with state.lock:
                state.sample()
            time.sleep(POLL_S)
    finally:
        reader.join(5)
    if proc.returncode == 0:
        with state.lock:
            state.finish()  # all of it
    return proc.returncode, "".join(lines)


@dataclass
class _Download:
    """The wheel pip said it is downloading, its announced size, and what was reported
    of it; the reader's and the sampler's calls go under `lock`, in order."""

    tmp: Path
    transfer: Transfer | None
    what: str = ""
    total: int | None = None
    most: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self, line: str) -> None:
        self.what, self.total, self.most = line.split()[1], announced_size(line), 0

    def sample(self) -> None:
        """The bytes so far of the wheel being downloaded, never backwards (pip removes
        the wheel once installed)."""
        if self.transfer is None or not self.what:
            return
        self.most = max(self.most, downloaded(self.tmp))
        total = None if self.total is None else max(self.total, self.most)  # (rounded)
        self.transfer(self.most, total, self.what)

    def finish(self) -> None:
        """The wheel is down: report all of it, once."""
        if self.transfer is not None and self.what:
            done = max(self.most, downloaded(self.tmp), self.total or 0)
            self.transfer(done, done, self.what)
        self.what = ""
