"""``--client-build franz-go=DIR`` (and sarama, kafka-go): a Go module directory of your own
(a branch of the client you are writing) built into kbatch's Go driver in place of the
pinned module, through a ``replace`` directive in the driver's go.mod.

The directory is named by the sha256 of its files (``.git`` left out), so an edited
branch is a new build and the same content again is the same build: the label
``franz-go@build-<12 hex>`` runs it, and the driver built with it is cached like any
other variant (`driver.build_dir`). Beside the binary, ``BUILD_SOURCE.txt`` names the
directory, its hash and the module's version (``git describe`` of a checkout, else a
module-cache name's ``@vX.Y.Z``), which the results carry. A directory that is not that
client's module, or that does not build, is a usage error whose paragraph is Go's own.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

from producer_core.engine.drivers.go_clients.driver import (
    BUILD_PREFIX,
    MODULES,
    GoFailed,
    build,
    build_dir,
    build_variant,
    go_errors,
    is_built,
)
from producer_core.engine.modes.go_toolchain import find_go, go_missing
from producer_core.errors import UsageError

BUILD_SOURCE = "BUILD_SOURCE.txt"
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn"})
MODULE_LINE = re.compile(r'^\s*module\s+"?([^"\s]+)"?', re.MULTILINE)


def module_path(root: Path) -> str | None:
    """The module path go.mod declares (None: no go.mod, or none declared)."""
    try:
        match = MODULE_LINE.search((root / "go.mod").read_text(errors="replace"))
    except OSError:
        return None
    return match.group(1) if match else None


def check_module(client: str, path: str) -> Path:
    """`path` as the root of `client`'s module, or a usage error saying what it is."""
    root = Path(path).expanduser()
    wanted = MODULES[client]
    found = module_path(root)
    if found != wanted:
        what = (f"declares module {found}" if found else
                "has no go.mod" if root.is_dir() else "is not a directory")
        raise UsageError(
            f"--client-build {client}={path}: not {client}'s Go module directory (it {what}; "
            f"{client} is module {wanted}). Give the directory holding {client}'s go.mod, "
            "e.g. a checkout of your branch of the client.")
    return root.resolve()


def files(root: Path) -> Iterator[Path]:
    """The module's files, in a stable order (version control's own directories left out)."""
    for directory, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        for name in sorted(names):
            yield Path(directory) / name


def module_digest(root: Path) -> str:
    """sha256 over each file's path (relative to the module) and bytes."""
    digest = hashlib.sha256()
    for path in files(root):
        if path.is_symlink() or not path.is_file():
            continue
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def module_version(root: Path) -> str:
    """What the directory says its version is: ``git describe`` of a checkout of the
    module, else the
    ``@vX.Y.Z`` of a module-cache directory's name, else ``unknown``."""
    top = _git(root, "rev-parse", "--show-toplevel")
    if top and Path(top).resolve() == root.resolve():  # a checkout of the module itself
        described = _git(root, "describe", "--tags", "--always", "--dirty")
        if described:
            return described
    match = re.search(r"@(v\d[^/@]*)$", root.name)
    return match.group(1) if match else "unknown"


def _git(root: Path, *args: str) -> str | None:
    """A git command's answer in `root` (None: no git, not a checkout, or it failed)."""
    try:
        proc = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                              timeout=20, check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 and proc.stdout.strip() else None


def register_build(client: str, path: str, progress: Callable[[str], None]) -> str:
    """A Go mode's builder (`ModeSpec.build`): the version label (``build-<12 hex>``) of
    the module at `path`, built into the driver once (see the module docstring)."""
    root = check_module(client, path)
    digest = module_digest(root)
    version = BUILD_PREFIX + digest[:12]
    variant = build_variant(client, version)
    target = build_dir(variant)
    if not is_built(variant):
        go = find_go()
        if go is None:
            raise go_missing(client)
        edit = ("mod", "edit", f"-replace={MODULES[client]}={root}")
        try:
            build(go, target, variant, progress, edits=(edit,))
        except GoFailed as exc:
            raise UsageError(
                f"--client-build {client}={path}: the module does not build into kbatch's Go "
                f"driver ({exc.step} failed with {MODULES[client]} replaced by it). Go said: "
                f"{go_errors(exc.output)}") from None
        progress(f"{client} built from {root} (sha256 {digest[:12]}), cached in {target}.")
    _write_source(target, root, digest, module_version(root))
    return version


def register_franz_go(path: str, progress: Callable[[str], None]) -> str:
    return register_build("franz-go", path, progress)


def register_sarama(path: str, progress: Callable[[str], None]) -> str:
    return register_build("sarama", path, progress)


def register_kafka_go(path: str, progress: Callable[[str], None]) -> str:
    return register_build("kafka-go", path, progress)


def _write_source(directory: Path, root: Path, digest: str, version: str) -> None:
    """Name the directory the build was last given from (atomically: a run may read it)."""
    temporary = directory / f".{BUILD_SOURCE}.{os.getpid()}"
    temporary.write_text(f"{root}\n{digest}\n{version}\n")
    temporary.replace(directory / BUILD_SOURCE)


def build_source(client: str, version: str | None) -> dict[str, str] | None:
    """Where a registered build came from: path, sha256, the module's version (None: a
    release or the pinned module)."""
    if version is None or not version.startswith(BUILD_PREFIX):
        return None
    try:
        fields = (build_dir(build_variant(client, version)) / BUILD_SOURCE
                  ).read_text().splitlines()
    except OSError:
        return None
    keys = ("path", "sha256", "module_version")
    return {k: v for k, v in zip(keys, fields, strict=False) if v} or None
