"""The state file of a running `kbatch lab up`, so `lab down|status|restart` can find it.

One lab per user: ``$KBATCH_LAB_STATE`` if set, else ``$XDG_RUNTIME_DIR/kbatch-lab/lab.json``
when that directory exists, else ``/tmp/kbatch-lab-<uid>/lab.json``. The file lives in a
directory only this user can write (created 0700, checked on every use), is written
atomically with mode 0600, and is removed by the process that wrote it when it exits.

The file is not trusted: `lab down` signals a process only when the process itself proves
it is the one the lab started (``owned_process``): a pid of 2 or more, the same start time
as recorded (from ``/proc/PID/stat``, so a recycled pid fails), the same user, and a
command line with the marker kbatch fixes for that role (never one taken from the file).
A file that is not a regular file of this user's, too large, or not a lab state document
is refused with ``LabStateError`` naming it and how to remove it.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import secrets
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from producer_core.errors import KbatchError

STATE_ENV_VAR = "KBATCH_LAB_STATE"
MAX_STATE_BYTES = 1024 * 1024
"""A lab state document is a few kB; anything larger was not written by kbatch."""

UP_MARKER = "lab up"
"""What the command line of a `kbatch lab up` process contains."""
BACKEND_MARKERS = {"tansu": "tansu", "kafka": "kafka.Kafka", "docker": "kafka.Kafka"}
"""Broker kind -> what its node processes' command lines contain (fixed here, not read).
A docker lab's nodes are containers: the state names them, never a pid to signal."""


class LabStateError(KbatchError):
    """The lab state file or its directory cannot be trusted (exit code 1)."""


def state_path() -> Path:
    override = os.environ.get(STATE_ENV_VAR)
    if override:
        return Path(override).expanduser()
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime).is_dir() and os.access(runtime, os.W_OK):
        return Path(runtime) / "kbatch-lab" / "lab.json"
    return Path(tempfile.gettempdir()) / f"kbatch-lab-{os.getuid()}" / "lab.json"


def _remove_hint(path: Path, directory: bool = False) -> str:
    if directory:
        return (f"Point {STATE_ENV_VAR} at a file name (e.g. {path / 'lab.json'}), or "
                f"remove the directory if it is not yours to keep.")
    return (f"If no `kbatch lab up` of yours is running, remove it with `rm -f {path}`; "
            "otherwise stop that lab with Ctrl-C in its terminal first.")


def ensure_private_dir(directory: Path) -> None:
    """Create ``directory`` (0700) if missing; refuse one that others can write or own."""
    with contextlib.suppress(FileExistsError):
        directory.mkdir(mode=0o700, parents=True)
    try:
        info = os.stat(directory)
    except OSError as exc:
        raise LabStateError(f"The lab state directory {directory} cannot be used: "
                            f"{exc.strerror or exc}.") from None
    if not stat.S_ISDIR(info.st_mode):
        raise LabStateError(f"The lab state directory {directory} is not a directory.")
    if info.st_uid != os.getuid() or info.st_mode & 0o022:
        raise LabStateError(
            f"The lab state directory {directory} can be written by another user (owner uid "
            f"{info.st_uid}, mode {oct(info.st_mode & 0o777)}), so a lab state file there "
            f"could name any process. Point {STATE_ENV_VAR} at a file in a directory only "
            "you can write (e.g. one made with `mkdir -m 700`)."
        )


def write_state(document: dict[str, Any], path: Path | None = None) -> Path:
    path = path or state_path()
    ensure_private_dir(path.parent)
    if path.is_dir() and not path.is_symlink():
        raise LabStateError(f"The lab state file {path} is a directory. "
                            f"{_remove_hint(path, directory=True)}")
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(document, f, indent=2)
        tmp.replace(path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise LabStateError(f"The lab state file {path} cannot be written: "
                            f"{exc.strerror or exc}. {_remove_hint(path)}") from None
    return path


def read_state(path: Path | None = None) -> dict[str, Any] | None:
    """The state document, or None if there is none; LabStateError if it is not one."""
    path = path or state_path()
    if not path.parent.exists():
        return None
    ensure_private_dir(path.parent)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise LabStateError(f"The lab state file {path} cannot be read: "
                            f"{exc.strerror or exc}. {_remove_hint(path)}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):  # checked on the descriptor: fdopen refuses a dir
        os.close(fd)
        raise LabStateError(f"The lab state file {path} is not a regular file"
                            f"{' but a directory' if stat.S_ISDIR(info.st_mode) else ''}. "
                            f"{_remove_hint(path, stat.S_ISDIR(info.st_mode))}")
    with os.fdopen(fd, "rb") as f:
        if info.st_uid != os.getuid() or info.st_mode & 0o077:
            raise LabStateError(
                f"The lab state file {path} was not written by kbatch for you (owner uid "
                f"{info.st_uid}, mode {oct(info.st_mode & 0o777)}; kbatch writes 0600). "
                f"{_remove_hint(path)}")
        data = f.read(MAX_STATE_BYTES + 1)
    if len(data) > MAX_STATE_BYTES:
        raise LabStateError(f"The lab state file {path} is larger than "
                            f"{MAX_STATE_BYTES} bytes, so kbatch did not write it. "
                            f"{_remove_hint(path)}")
    try:
        document = json.loads(data.decode("utf-8"))
        return validate_state(document)
    except (ValueError, TypeError, KeyError) as exc:
        raise LabStateError(f"The lab state file {path} is damaged ({exc}). "
                            f"{_remove_hint(path)}") from None


def _is_pid(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 2 <= value < 2 ** 31


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2 ** 63


def validate_state(document: Any) -> dict[str, Any]:
    """The document if it has the shape kbatch writes; ValueError saying what is wrong."""
    if not isinstance(document, dict):
        raise ValueError("not a JSON object")
    if not _is_pid(document.get("pid")) or not _is_count(document.get("pid_start")):
        raise ValueError("'pid' and 'pid_start' must be a process id of 2 or more and its "
                         "start time")
    if not isinstance(document.get("bootstrap"), str):
        raise ValueError("'bootstrap' must be a string")
    if document.get("broker", "tansu") not in BACKEND_MARKERS:
        raise ValueError(f"'broker' must be one of {sorted(BACKEND_MARKERS)}")
    nodes = document.get("nodes", [])
    if not isinstance(nodes, list):
        raise ValueError("'nodes' must be a list")
    for node in nodes:
        if not isinstance(node, dict) or not _is_count(node.get("node_id")):
            raise ValueError("every node needs a 'node_id'")
        pid = node.get("pid")
        if pid is not None and (not _is_pid(pid) or not _is_count(node.get("start"))):
            raise ValueError(f"node {node['node_id']}: 'pid' must be a process id of 2 or "
                             "more with its 'start' time")
    for key in ("brokers", "rtt_ms", "jitter_ms"):
        value = document.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, int | float) or not (
                0 <= value < 1e9):
            raise ValueError(f"{key!r} must be a number from 0")
    return document


def remove_state(pid: int | None = None, path: Path | None = None) -> None:
    """Remove the state file; with ``pid``, only if it still describes that process."""
    path = path or state_path()
    if pid is not None:
        try:
            document = read_state(path)
        except LabStateError:
            return
        if document is not None and document.get("pid") != pid:
            return
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


# ---------------------------------------------------------------- process identity


def start_time(pid: int) -> int | None:
    """Start time of ``pid`` in clock ticks since boot (/proc/PID/stat field 22), or None."""
    if not _is_pid(pid):
        return None
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def identity(pid: int) -> dict[str, int]:
    """What the state file records of a process kbatch started: its pid and start time."""
    start = start_time(pid)
    if start is None:
        raise LabStateError(f"Process {pid} ended before the lab could record it.")
    return {"pid": pid, "start": start}


def owned_process(pid: Any, start: Any, marker: str) -> bool:
    """True only if ``pid`` is the very process recorded: safe to signal.

    Never a pid below 2 (``kill(-1)``, ``kill(0)`` and init), the recorded start time (a
    recycled pid has another), this user's, and a command line containing ``marker``.
    """
    if not _is_pid(pid) or not _is_count(start) or start_time(pid) != start:
        return False
    proc = Path(f"/proc/{pid}")
    try:
        if os.stat(proc).st_uid != os.getuid():
            return False
        cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return False
    return marker in cmdline


def lab_process_alive(document: dict[str, Any]) -> bool:
    """Whether the `lab up` process the document names still runs (and is that process)."""
    return owned_process(document.get("pid"), document.get("pid_start"), UP_MARKER)


def node_records(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [n for n in document.get("nodes", []) if isinstance(n, dict)]


def backend_marker(document: dict[str, Any]) -> str:
    return BACKEND_MARKERS[document.get("broker", "tansu")]


def process_alive(pid: int, marker: str | None = None) -> bool:
    """True if ``pid`` runs (not a zombie) and, if given, its command line has ``marker``.

    For a liveness view only; before signalling use ``owned_process``.
    """
    if start_time(pid) is None:
        return False
    if marker is None:
        return True
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return False
    return marker in cmdline.decode(errors="replace")


# ---------------------------------------------------------------- restart requests


def restart_request_path(path: Path | None = None) -> Path:
    path = path or state_path()
    return path.with_name(path.stem + "-restart.json")


@dataclass(frozen=True)
class RestartRequest:
    """What a `kbatch lab restart` asked of the running lab: which node, how long the node
    may take to serve again (its --timeout), and the request's own id, so the answer the
    lab writes back is known to be this request's and not an older one's."""

    node_id: int
    timeout_s: float | None = None
    request: str = ""


def request_restart(node_id: int, timeout_s: float | None = None,
                    path: Path | None = None) -> str:
    """Ask the running `lab up` to start node ``node_id`` again (it polls for this file);
    returns the request's id, which the lab writes back beside the node's outcome."""
    request = secrets.token_hex(8)
    target = restart_request_path(path)
    ensure_private_dir(target.parent)
    tmp = target.with_name(target.name + f".{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump({"node_id": node_id, "timeout_s": timeout_s, "request": request}, f)
    tmp.replace(target)
    return request


def take_restart_request(path: Path | None = None) -> RestartRequest | None:
    """The restart a `lab restart` asked for (the request is consumed), or None."""
    target = restart_request_path(path)
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if stat.S_ISREG(info.st_mode) and info.st_uid == os.getuid():
            with os.fdopen(fd, "rb") as f:
                data = f.read(4096)
        else:
            os.close(fd)
            data = b""
    finally:
        with contextlib.suppress(OSError):
            target.unlink()
    try:
        fields = json.loads(data.decode("utf-8"))
        node_id = fields["node_id"]
    except (ValueError, TypeError, KeyError):
        return None
    if not _is_count(node_id):
        return None
    timeout = fields.get("timeout_s")
    timeout_s = float(timeout) if isinstance(timeout, int | float) and not isinstance(
        timeout, bool) and math.isfinite(timeout) and 0 < timeout <= 3600 else None
    request = fields.get("request")
    return RestartRequest(node_id, timeout_s,
                          request if isinstance(request, str) and len(request) <= 64 else "")
