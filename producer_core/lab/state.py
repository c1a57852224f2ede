"""The state file of a running `kbatch lab up`, so `kbatch lab down` can find and stop it.

One lab per user: ``$KBATCH_LAB_STATE`` if set, else ``$XDG_RUNTIME_DIR/kbatch-lab.json``
when that directory exists, else ``/tmp/kbatch-lab-<uid>.json``. The file holds the pid of
the `lab up` process, its bootstrap servers, and the pids of its backends; it is written
atomically (mode 0600) and removed by the process that wrote it when it exits.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

STATE_ENV_VAR = "KBATCH_LAB_STATE"


def state_path() -> Path:
    override = os.environ.get(STATE_ENV_VAR)
    if override:
        return Path(override).expanduser()
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime).is_dir() and os.access(runtime, os.W_OK):
        return Path(runtime) / "kbatch-lab.json"
    return Path(tempfile.gettempdir()) / f"kbatch-lab-{os.getuid()}.json"


def write_state(document: dict[str, Any], path: Path | None = None) -> Path:
    path = path or state_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(document, f, indent=2)
    tmp.replace(path)
    return path


def read_state(path: Path | None = None) -> dict[str, Any] | None:
    """The state document, or None if there is none (or it is unreadable)."""
    path = path or state_path()
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return document if isinstance(document, dict) and "pid" in document else None


def remove_state(pid: int | None = None, path: Path | None = None) -> None:
    """Remove the state file; with ``pid``, only if it still describes that process."""
    path = path or state_path()
    if pid is not None:
        document = read_state(path)
        if document is not None and document.get("pid") != pid:
            return
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def process_alive(pid: int, marker: str | None = None) -> bool:
    """True if ``pid`` runs (not a zombie) and, if given, its command line has ``marker``.

    The marker guards against a recycled pid: we only ever signal a process whose command
    line still looks like the one that wrote the state file.
    """
    proc = Path(f"/proc/{pid}")
    try:
        stat = (proc / "stat").read_text()
    except OSError:
        try:
            os.kill(pid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return marker is None
    if stat.rsplit(")", 1)[1].split()[0] in ("Z", "X"):
        return False
    if marker is None:
        return True
    try:
        cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return False
    return marker in cmdline
