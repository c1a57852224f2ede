"""The Go toolchain the Go client modes need, found before any broker starts.

Modes franz-go, sarama and kafka-go run kbatch's Go driver, built with `go` on first use
(`producer_core.engine.drivers.go_clients.driver`). Settings of these modes are refused at once,
as a usage error (exit 2), where no `go` is found, rather than after a broker started.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from producer_core.errors import UsageError

GO_ENV = "KBATCH_GO"
"""The ``go`` binary to build with, when not the one found (a path that does not exist
runs kbatch as on a machine without Go)."""
GO_CANDIDATES = ("/usr/local/go/bin/go", "/usr/lib/go/bin/go")


class GoUnavailable(UsageError):
    """No Go toolchain to build the driver with."""


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
        "the built program is kept in kbatch's cache (~/.cache/kbatch/go-clients-driver). "
        "Every other mode runs without Go."
    )


def toolchain_check(mode: str) -> Callable[[object], None]:
    """The ModeSpec `check_built` of a Go mode: Go is there."""
    def check(settings: object) -> None:
        if find_go() is None:
            raise go_missing(mode)
    return check
