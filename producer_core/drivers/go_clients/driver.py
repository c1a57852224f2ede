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

from producer_core.brokers.kafka_dist import cache_root
from producer_core.errors import BrokerError, UsageError

BINARY = "kbatch-go-driver"
BUILD_TIMEOUT_S = 900
CLIENTS = ("franz-go", "sarama", "kafka-go")
GO_CANDIDATES = ("/usr/local/go/bin/go", "/usr/lib/go/bin/go")


class GoUnavailable(UsageError):
    """No Go toolchain to build the driver with."""


@dataclass(frozen=True)
class Driver:
    """How to start the driver for one client."""

    binary: str
    client: str

    def command(self) -> list[str]:
        return [self.binary, self.client]


GO_ENV = "KBATCH_GO"
"""The Go toolchain's ``go`` to build with, when not the one found (set to a path that
does not exist to run as on a machine without Go)."""


def find_go() -> str | None:
    """``$KBATCH_GO`` if set, else ``$GOROOT/bin/go``, else ``go`` on PATH, else the usual
    install places."""
    chosen = os.environ.get(GO_ENV)
    if chosen:
        return chosen if os.path.isfile(chosen) and os.access(chosen, os.X_OK) else None
    root = os.environ.get("GOROOT")
    candidates = [str(Path(root) / "bin" / "go")] if root else []
    on_path = shutil.which("go")
    candidates += [on_path] if on_path else []
    candidates += list(GO_CANDIDATES)
    return next((c for c in candidates if os.path.isfile(c) and os.access(c, os.X_OK)), None)


def go_missing(mode: str) -> GoUnavailable:
    return GoUnavailable(
        f"Mode {mode} runs a Go Kafka client (franz-go, sarama or kafka-go) that kbatch "
        "builds from its own small Go program on first use, and needs the Go toolchain "
        "(1.22 or newer) for that: `go` is not on PATH, in $GOROOT/bin or in /usr/local/go/"
        "bin. Install Go (e.g. `apt-get install golang-go`, or the official tarball into "
        "/usr/local/go); the client modules then come from your Go module proxy once, and "
        f"the built program is kept in {cache_root() / 'go-clients-driver'}. Every other "
        "mode runs without Go."
    )


def sources() -> dict[str, bytes]:
    """The program's files by name (package data)."""
    root = resources.files("producer_core.drivers.go_clients") / "go"
    return {entry.name: entry.read_bytes() for entry in root.iterdir()
            if entry.name.endswith(".go") or entry.name in ("go.mod", "go.sum")}


def build_dir() -> Path:
    """Where the build of the current sources lives (or will)."""
    digest = hashlib.sha256()
    for name, data in sorted(sources().items()):
        digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return cache_root() / "go-clients-driver" / digest.hexdigest()[:16]


def is_built() -> bool:
    return (build_dir() / BINARY).is_file()


def check_toolchain(mode: str) -> None:
    """Before any broker starts: the driver is built already, or Go is there to build it."""
    if not is_built() and find_go() is None:
        raise go_missing(mode)


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
