"""The Go side of modes franz-go, sarama and kafka-go: the toolchain and the built program.

The program's sources (``go/``: Go files, go.mod, go.sum; package data) are built with
``go build -mod=readonly`` on first use into ``<cache>/go-clients-driver/<hash>``, the hash
covering every source file, so an edited driver or a new module version is built afresh
and go.sum pins what the build may download (from the Go module proxy the machine's Go
is configured with). The binary is renamed into place only when the build succeeded.

A client's other release (``franz-go@v1.18.0``) or your own module directory
(``--client-build franz-go=DIR``, `builds`) is one more *variant* of the same program:
its go.mod edited before the build (``go get MODULE@VERSION``, or a ``replace`` of the
client's module by the directory, then ``go mod tidy``), the variant's key joining the
sources' hash, so each variant is built once and kept beside the pinned one.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from producer_core.downloads import cache_root
from producer_core.engine.modes.go_toolchain import find_go, go_missing
from producer_core.errors import BrokerError, UsageError

BINARY = "kbatch-go-driver"
BUILD_TIMEOUT_S = 900


MODULES = {
    "franz-go": "github.com/twmb/franz-go",
    "sarama": "github.com/IBM/sarama",
    "kafka-go": "github.com/segmentio/kafka-go",
}
"""Each client's Go module (the one a version or a build replaces)."""
BUILD_PREFIX = "build-"
"""A version that is your own module directory (`builds`): ``build-<12 hex>``."""


@dataclass(frozen=True)
class Driver:
    """How to start the driver for one client (`label`: the mode label it runs as)."""

    binary: str
    client: str
    label: str = ""

    def command(self) -> list[str]:
        return [self.binary, self.client]


@dataclass(frozen=True)
class Variant:
    """How the program's go.mod differs from the pinned one: the commands run in the
    copied sources before the build (`edits`), named by `key` (the cache key's part)."""

    key: str
    edits: tuple[tuple[str, ...], ...] = ()
    describe: str = ""


PINNED = Variant("")


def sources() -> dict[str, bytes]:
    """The program's files by name (package data; its Go tests are not part of it)."""
    root = resources.files("producer_core.engine.drivers.go_clients") / "go"
    return {entry.name: entry.read_bytes() for entry in root.iterdir()
            if (entry.name.endswith(".go") and not entry.name.endswith("_test.go"))
            or entry.name in ("go.mod", "go.sum")}


def build_dir(variant: Variant = PINNED) -> Path:
    """Where the build of the current sources (with `variant`'s go.mod) lives (or will).
    The pinned build's key is the sources' hash alone."""
    digest = hashlib.sha256()
    for name, data in sorted(sources().items()):
        digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    if variant.key:
        digest.update(b"variant\0" + variant.key.encode())
    return cache_root() / "go-clients-driver" / digest.hexdigest()[:16]


def is_built(variant: Variant = PINNED) -> bool:
    return (build_dir(variant) / BINARY).is_file()


def release_variant(client: str, version: str) -> Variant:
    """``CLIENT@VERSION``: the client's module at that release (``go get``)."""
    module = MODULES[client]
    return Variant(f"{client}@{version}", (("get", f"{module}@{version}"),),
                   f"{client} {version}")


def build_variant(client: str, version: str) -> Variant:
    """``CLIENT@build-<hex>``: the client's module replaced by a registered directory
    (`builds`); the directory is only needed while building, so the key is the label."""
    return Variant(f"{client}@{version}", (), f"{client} {version}")


def prepare(client: str, progress: Callable[[str], None] | None = None,
            version: str | None = None) -> Driver:
    """The driver for `client` (at `version`: a release or a registered build), built and
    cached on first use."""
    label = client if version is None else f"{client}@{version}"
    if version is None:
        variant = PINNED
    elif version.startswith(BUILD_PREFIX):
        variant = build_variant(client, version)
        if not is_built(variant):
            raise UsageError(f"{label} names a build of {client} kbatch has not registered "
                             f"(or whose cache entry is gone); give it with --client-build "
                             f"{client}=DIR.")
    else:
        variant = release_variant(client, version)
    target = build_dir(variant)
    if not (target / BINARY).is_file():
        go = find_go()
        if go is None:
            raise go_missing(client)
        build(go, target, variant, progress or _stderr)
    return Driver(str(target / BINARY), client, label)


def install(client: str, version: str | None, progress: Callable[[str], None]) -> None:
    """A Go mode's installer (`ModeSpec.install`): the driver for that release (or the
    pinned one) built before any broker starts, so a release the proxy lacks fails first."""
    prepare(client, progress, version)


def install_franz_go(version: str | None, progress: Callable[[str], None]) -> None:
    install("franz-go", version, progress)


def install_sarama(version: str | None, progress: Callable[[str], None]) -> None:
    install("sarama", version, progress)


def install_kafka_go(version: str | None, progress: Callable[[str], None]) -> None:
    install("kafka-go", version, progress)


class GoFailed(Exception):
    """A go command failed: what it was, and what Go said."""

    def __init__(self, step: str, output: str) -> None:
        super().__init__(step)
        self.step = step
        self.output = output


def build(go: str, target: Path, variant: Variant, progress: Callable[[str], None],
          edits: tuple[tuple[str, ...], ...] | None = None) -> None:
    """Build the program with `variant` (and `edits`, when given, in place of the
    variant's) into `target`; GoFailed names the step Go refused."""
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    what = variant.describe or "franz-go, sarama, kafka-go"
    try:
        progress(f"Building kbatch's Go client driver ({what}) into {target} (first run "
                 "only; Go modules come from your module proxy)...")
        src = work / "src"
        src.mkdir()
        for name, data in sources().items():
            (src / name).write_bytes(data)
        out = work / "bin"
        env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-buildvcs=false"}
        steps = [*(edits if edits is not None else variant.edits)]
        if steps:
            steps.append(("mod", "tidy"))
        steps.append(("build", "-mod=readonly", "-trimpath", "-o", str(out / BINARY), "."))
        for step in steps:
            proc = subprocess.run(
                [go, *step], cwd=src, env=env, capture_output=True, text=True,
                timeout=BUILD_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL)
            if proc.returncode != 0:
                raise GoFailed(" ".join(("go", *step[:2 if step[0] == "mod" else 1])),
                               proc.stdout + proc.stderr)
        try:
            out.rename(target)
        except OSError:
            if not (target / BINARY).is_file():
                raise
    except subprocess.TimeoutExpired as exc:
        raise BrokerError(f"go did not finish building within {BUILD_TIMEOUT_S} s.") from exc
    except GoFailed as exc:
        if variant.key and not variant.key.partition("@")[2].startswith(BUILD_PREFIX):
            raise _release_error(variant, exc) from None
        if variant.key:
            raise
        tail = "\n".join(exc.output.strip().splitlines()[-15:])
        raise BrokerError(f"go build could not build kbatch's Go client driver:\n{tail}"
                          ) from None
    finally:
        shutil.rmtree(work, ignore_errors=True)


def go_errors(output: str, lines: int = 5) -> str:
    """Go's own complaint in one paragraph: its first ``file.go:line:`` errors (else its
    ``go:`` lines, else its last lines), joined."""
    text = [line.strip() for line in output.strip().splitlines() if line.strip()]
    for chosen in ([t for t in text if re.search(r"\.go:\d+(:\d+)?: ", t)],
                   [t for t in text if t.startswith("go: ") or "error" in t.lower()]):
        if chosen:
            return "; ".join(chosen[:lines])
    return "; ".join(text[-lines:]) or "(nothing)"


def _release_error(variant: Variant, exc: GoFailed) -> UsageError:
    client, _, version = variant.key.partition("@")
    why = (f"(is it a release your Go module proxy has, spelt as Go spells it, e.g. "
           f"{client}@v1.2.3?)" if exc.step == "go get" else
           "(the release does not build into kbatch's Go driver, which is written against "
           "the pinned one)")
    return UsageError(
        f"Mode {variant.key} cannot run: {exc.step} failed for {MODULES[client]}@{version} "
        f"{why}. Go said: {go_errors(exc.output)}. Nothing was started.")


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
