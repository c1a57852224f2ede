"""Output paths are checked before any work starts, so a run's results are never lost to
a typo or a read-only directory found only at the end (`--json`, `--out`, `--markdown`).

Each check creates the directories it needs and creates and deletes a probe file there:
as root, permission bits say little (root may write anywhere but /proc, read-only mounts,
paths under a file), so only a real write tells. `--out DIR` also refuses a directory
that already holds results of another mode or kind, which would mix two runs' files,
unless `--overwrite` is given; then the old results are removed before the new ones
are written.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from producer_core.errors import UsageError

RUNS_DIR = "runs"


def _fail(option: str, path: Path, why: str) -> UsageError:
    return UsageError(f"{option} {path}: {why}. Choose a path in a directory you can write "
                      "to; nothing was run.")


def writable_dir(directory: Path, option: str, shown: Path | None = None) -> None:
    """Create `directory` (and parents) and prove a file can be written in it."""
    shown = shown or directory
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise _fail(option, shown, f"{directory} exists and is not a directory") from None
    except OSError as exc:
        raise _fail(option, shown, f"cannot create directory {directory} "
                                   f"({exc.strerror or exc})") from None
    if not directory.is_dir():
        raise _fail(option, shown, f"{directory} is not a directory")
    try:
        handle, probe = tempfile.mkstemp(dir=directory, prefix=".kbatch-probe-")
        os.close(handle)
        os.unlink(probe)
    except OSError as exc:
        raise _fail(option, shown, f"cannot write in {directory} "
                                   f"({exc.strerror or exc})") from None


def writable_file(path: Path, option: str, append: bool = False) -> None:
    """A file kbatch will write (replace, or append to with `append`); `-` is stdout."""
    if str(path) == "-":
        return
    if path.is_dir():
        raise _fail(option, path, "is a directory; give a file name")
    writable_dir(path.parent if str(path.parent) else Path("."), option, path)
    if append and path.exists():
        try:
            with path.open("a"):
                pass
        except OSError as exc:
            raise _fail(option, path, f"cannot append to it ({exc.strerror or exc})") from None


def _what(document: dict) -> tuple[str, tuple[str, ...]]:
    if document.get("kind") == "comparison":
        return "comparison", tuple(document.get("modes") or ())
    return "run", (str(document.get("mode")),)


def _describe(kind: str, modes: Sequence[str]) -> str:
    if kind == "comparison":
        return f"a comparison of {', '.join(modes)}"
    return f"a run of mode {modes[0]}"


def check_results_dir(path: Path, kind: str, modes: Sequence[str], overwrite: bool) -> None:
    """`--out DIR`: writable, and not holding results of another mode or kind."""
    from producer_core.results.results_io import RESULTS_FILE  # numpy, hdrh: not for --help

    if path.exists() and not path.is_dir():
        raise _fail("--out", path, "exists and is not a directory")
    existing = path / RESULTS_FILE
    if existing.is_file() and not overwrite:
        try:
            old_kind, old_modes = _what(json.loads(existing.read_text(encoding="utf-8")))
        except (OSError, ValueError, AttributeError):
            raise UsageError(
                f"--out {path} holds a {RESULTS_FILE} kbatch cannot read; give another "
                "directory, or --overwrite to replace it.") from None
        if (old_kind, tuple(old_modes)) != (kind, tuple(modes)):
            raise UsageError(
                f"--out {path} already holds {_describe(old_kind, old_modes)}; writing "
                f"{_describe(kind, modes)} there would mix the two runs' files. Give another "
                "directory, or --overwrite to replace the old results.")
    writable_dir(path, "--out")


def clear_results_dir(path: Path) -> None:
    """Remove the results a directory holds (results.json and runs/), nothing else, so
    the new run's files never mix with an old run's."""
    from producer_core.results.results_io import RESULTS_FILE

    if not (path / RESULTS_FILE).is_file():
        return
    (path / RESULTS_FILE).unlink()
    runs = path / RUNS_DIR
    if runs.is_dir():
        shutil.rmtree(runs)


def check_run_outputs(json_path: Path | None, out_dir: Path | None, overwrite: bool,
                      kind: str, modes: Sequence[str]) -> None:
    """Every output of `produce` or `compare-modes`, before the run."""
    if json_path is not None:
        writable_file(json_path, "--json")
    if out_dir is not None:
        check_results_dir(out_dir, kind, modes, overwrite)
