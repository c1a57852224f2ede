"""The Go side of modes franz-go, sarama and kafka-go: the toolchain and the built program.

The program's sources (``go/``: Go files, go.mod, go.sum; package data) are built with
``go build -mod=readonly`` on first use into ``<cache>/go-clients-driver/<hash>``, the hash
covering every source file, so an edited driver or a new module version is built afresh
and go.sum pins what the build may download (from the Go module proxy the machine's Go
is configured with). The binary is renamed into place only when the build succeeded.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from producer_core.downloads import cache_root
from producer_core.errors import BrokerError
from producer_core.modes.go_toolchain import find_go, go_missing

BINARY = "kbatch-go-driver"
BUILD_TIMEOUT_S = 900


@dataclass(frozen=True)
class Driver:
    """How to start the driver for one client."""

    binary: str
    client: str

    def command(self) -> list[str]:
        return [self.binary, self.client]


def sources() -> dict[str, bytes]:
    """The program's files by name (package data; its Go tests are not part of it)."""
    root = resources.files("producer_core.drivers.go_clients") / "go"
    return {entry.name: entry.read_bytes() for entry in root.iterdir()
            if (entry.name.endswith(".go") and not entry.name.endswith("_test.go"))
            or entry.name in ("go.mod", "go.sum")}


def build_dir() -> Path:
    """Where the build of the current sources lives (or will)."""
    digest = hashlib.sha256()
    for name, data in sorted(sources().items()):
        digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return cache_root() / "go-clients-driver" / digest.hexdigest()[:16]


def is_built() -> bool:
    return (build_dir() / BINARY).is_file()


def prepare(client: str, progress: Callable[[str], None] | None = None) -> Driver:
    """The driver for `client`, built and cached on first use."""
    target = build_dir()
    if not (target / BINARY).is_file():
        go = find_go()
        if go is None:
            raise go_missing(client)
        _build(go, target, progress or _stderr)
    return Driver(str(target / BINARY), client)


def _build(go: str, target: Path, progress: Callable[[str], None]) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        progress(f"Building kbatch's Go client driver (franz-go, sarama, kafka-go) into "
                 f"{target} (first run only; Go modules come from your module proxy)...")
        src = work / "src"
        src.mkdir()
        for name, data in sources().items():
            (src / name).write_bytes(data)
        out = work / "bin"
        env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=readonly -buildvcs=false"}
        proc = subprocess.run(
            [go, "build", "-mod=readonly", "-trimpath", "-o", str(out / BINARY), "."],
            cwd=src, env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S,
            check=False, stdin=subprocess.DEVNULL)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            raise BrokerError(f"go build could not build kbatch's Go client driver:\n{tail}")
        try:
            out.rename(target)
        except OSError:
            if not (target / BINARY).is_file():
                raise
    except subprocess.TimeoutExpired as exc:
        raise BrokerError(f"go build did not finish within {BUILD_TIMEOUT_S} s.") from exc
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
