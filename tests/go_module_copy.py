"""A real copy of a Go client's module, for tests of ``--client-build franz-go=DIR`` (issue
44): the pinned release from the Go module cache (``go mod download`` fills it from the
machine's module proxy once), copied where the test may write, made writable, with a
change of our own. The change is fixed text, so the copy's content (its cache key) is the
same on every run and the driver built with it is reused."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
from importlib import resources
from pathlib import Path

from producer_core.engine.drivers.go_clients.driver import MODULES
from producer_core.engine.modes.go_toolchain import find_go


def pinned_version(client: str) -> str:
    """The release of `client` kbatch's Go driver requires (its go.mod)."""
    go_mod = (resources.files("producer_core.engine.drivers.go_clients") / "go" / "go.mod"
              ).read_text()
    match = re.search(rf"^\s*{re.escape(MODULES[client])}\s+(v\S+)", go_mod, re.MULTILINE)
    assert match, go_mod
    return match.group(1)


def module_copy(client: str, target: Path, marker: str) -> Path | None:
    """`client`'s pinned module copied to ``target/<name>@<version>`` with `marker` (Go
    source: a comment, or a broken line) in a file of its producer's package; None where
    Go is missing."""
    go = find_go()
    if go is None:
        return None
    version = pinned_version(client)
    proc = subprocess.run([go, "mod", "download", "-json", f"{MODULES[client]}@{version}"],
                          capture_output=True, text=True, timeout=600, check=True,
                          cwd=target)
    source = Path(json.loads(proc.stdout)["Dir"])
    copy = target / f"{MODULES[client].rsplit('/', 1)[1]}@{version}"
    shutil.copytree(source, copy)
    for directory, _, names in os.walk(copy):
        for name in [".", *names]:
            path = Path(directory) / name
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
    package = copy / PRODUCER_PACKAGE[client]
    (package / "kbatch_test_change.go").write_text(f"package {package_of(package)}\n\n{marker}\n")
    return copy


PRODUCER_PACKAGE = {"franz-go": "pkg/kgo", "sarama": ".", "kafka-go": "."}
"""Where each client's producer lives in its module (the package kbatch's driver builds)."""


def package_of(directory: Path) -> str:
    """The package name of a directory's Go files."""
    for path in sorted(directory.glob("*.go")):
        match = re.search(r"^package\s+(\w+)", path.read_text(), re.MULTILINE)
        if match and not match.group(1).endswith("_test"):
            return match.group(1)
    raise AssertionError(f"no Go package in {directory}")
