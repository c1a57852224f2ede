"""``--client-build librdkafka=DIR``: a librdkafka source tree of your own (a branch you are
writing, a patch under review), built by kbatch and run where mode librdkafka runs.

The tree is copied and built once (``./configure``, then ``make`` of ``src/librdkafka``)
into the per-user cache, keyed by the sha256 of its source files, so an edited tree is a
new build and the same tree again is the same build (``librdkafka@build-<12 hex>``). What
drives it is a confluent-kafka binding of the tree's release line (the binary wheel of
``X.Y.Z``, else ``X.Y.0``, else kbatch's pinned one), copied beside the build with its
bundled librdkafka replaced by the built one; the run is then a ``librdkafka@VERSION`` run
of that directory (`librdkafka_versions`: out of process, the same driver). Results name
the build's path, hash and the version the library itself reports.

A tree that does not build is a usage error whose paragraph is the compiler's own errors.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from producer_core.engine.drivers.librdkafka_versions import (
    BUILD_PREFIX,
    BUILD_SOURCE,
    build_source_of,
    install,
    target_dir,
)
from producer_core.errors import BrokerError, UsageError

BUILD_TIMEOUT_S = 1800
SKIPPED_DIRS = frozenset({".git", "build", "__pycache__"})
BUILT_FILES = re.compile(r"\.(o|d|a|so(\.\d+)*|lds|pc|log|cache)$|^(Makefile\.config|config\.h"
                         r"|config\.cache|config\.log)$")
"""What configure and make leave in a tree: not part of its content (its hash)."""
VERSION_LINE = re.compile(r"#define\s+RD_KAFKA_VERSION\s+0x([0-9a-fA-F]{8})")


def source_files(root: Path) -> Iterator[Path]:
    """The tree's files that make its content, in a stable order."""
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        for name in sorted(files):
            if not BUILT_FILES.search(name):
                yield Path(directory) / name


def tree_digest(root: Path) -> str:
    """sha256 over each source file's path (relative to the tree) and bytes."""
    digest = hashlib.sha256()
    for path in source_files(root):
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def tree_version(root: Path) -> tuple[int, int, int]:
    """The release the tree says it is (``RD_KAFKA_VERSION`` in src/rdkafka.h)."""
    match = VERSION_LINE.search((root / "src" / "rdkafka.h").read_text(errors="replace"))
    if match is None:
        raise UsageError(f"--client-build librdkafka={root}: src/rdkafka.h defines no "
                         "RD_KAFKA_VERSION; is this a librdkafka source tree?")
    number = int(match.group(1), 16)
    return number >> 24 & 0xFF, number >> 16 & 0xFF, number >> 8 & 0xFF


def check_tree(path: str) -> Path:
    root = Path(path).expanduser()
    if not (root / "configure").is_file() or not (root / "src" / "rdkafka.h").is_file():
        raise UsageError(
            f"--client-build librdkafka={path}: not a librdkafka source tree (it needs "
            "`configure` and `src/rdkafka.h` at its top, as librdkafka's repository and "
            "the source packages that bundle it have).")
    return root


def compiler_errors(output: str, lines: int = 5) -> str:
    """The compiler's own complaint in one paragraph: its first `error` lines (else the
    output's last lines), joined."""
    errors = [line.strip() for line in output.splitlines()
              if re.search(r"\berror\b", line, re.IGNORECASE)]
    chosen = errors[:lines] if errors else [
        line.strip() for line in output.strip().splitlines()[-lines:]]
    return "; ".join(chosen) or "(nothing)"


COMPILED = re.compile(r"\s-c\s+(\S+\.c)\b")
"""A compiler line of librdkafka's make: one C file compiled."""
COMPILED_STEP = 20
"""A progress line every this many C files compiled (librdkafka has about 90)."""


def _run(command: list[str], cwd: Path, what: str, tree: Path,
         progress: Callable[[str], None] | None = None) -> None:
    """Run one build step; with `progress`, count the C files it compiles and say so."""
    try:
        proc = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL)
    except FileNotFoundError as exc:
        raise UsageError(f"--client-build librdkafka={tree}: {command[0]} is not installed "
                         "(building librdkafka needs a C compiler and make).") from exc
    timed_out = threading.Event()

    def kill() -> None:
        timed_out.set()
        proc.kill()

    timer = threading.Timer(BUILD_TIMEOUT_S, kill)
    timer.start()
    lines: list[str] = []
    compiled = 0
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if progress is not None and COMPILED.search(line):
                compiled += 1
                if compiled % COMPILED_STEP == 0:
                    progress(f"Compiling librdkafka: {compiled} C files so far...")
        code = proc.wait()
    finally:
        timer.cancel()
    if timed_out.is_set():
        raise BrokerError(f"{what} of librdkafka from {tree} took over {BUILD_TIMEOUT_S} s.")
    if code != 0:
        raise UsageError(f"--client-build librdkafka={tree}: the tree does not build "
                         f"({what} failed, exit code {code}). The compiler said: "
                         + compiler_errors("".join(lines)))


def build_library(tree: Path, work: Path, progress: Callable[[str], None]) -> Path:
    """Copy `tree` into `work` and build its shared library there; its path."""
    source = work / "src-tree"
    shutil.copytree(tree, source, symlinks=True,
                    ignore=lambda d, names: [n for n in names if n in SKIPPED_DIRS
                                             or BUILT_FILES.search(n)])
    progress(f"Building librdkafka from {tree} (configure and make; a few minutes, first "
             "run of this tree only)...")
    _run(["bash", "./configure", "--disable-gssapi", "--disable-curl"], source, "configure",
         tree)
    _run(["make", f"-j{os.cpu_count() or 1}", "-C", "src", "librdkafka.so.1"], source,
         "make", tree, progress)
    return source / "src" / "librdkafka.so.1"


def _binding(version: tuple[int, int, int], progress: Callable[[str], None]) -> Path:
    """A confluent-kafka of the tree's release line: its directory (holding
    `confluent_kafka` and its bundled library)."""
    major, minor, patch = version
    wanted = f"{major}.{minor}.{patch}"
    for release in dict.fromkeys((wanted, f"{major}.{minor}.0")):
        try:
            install(release, progress)
        except UsageError:  # PyPI has no such release: try the next
            continue
        if release != wanted:
            progress(f"(PyPI has no confluent-kafka {wanted}: the build runs with "
                     f"confluent-kafka {release}'s binding.)")
        return target_dir(release)
    import confluent_kafka  # kbatch's pinned release

    progress(f"(PyPI has no confluent-kafka {wanted} nor {major}.{minor}.0: the build runs "
             f"with kbatch's confluent-kafka {_text(confluent_kafka.version())}.)")
    return Path(confluent_kafka.__file__).parent.parent


def _text(version: object) -> str:
    """confluent-kafka's `version()`/`libversion()`: a (text, number) pair, or the text."""
    return str(version[0] if isinstance(version, tuple) else version)


def register_build(path: str, progress: Callable[[str], None]) -> str:
    """Mode librdkafka's builder (`ModeSpec.build`): the version label of the tree at
    `path`, built and made runnable once (see the module docstring)."""
    tree = check_tree(path)
    digest = tree_digest(tree)
    label = BUILD_PREFIX + digest[:12]
    target = target_dir(label)
    if (target / "confluent_kafka").is_dir():
        _write_source(target, tree, digest)
        return label
    version = tree_version(tree)
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        library = build_library(tree, work, progress)
        binding = _binding(version, progress)
        lib = work / "lib"
        lib.mkdir()
        for name in ("confluent_kafka", "confluent_kafka.libs"):
            if (binding / name).is_dir():
                shutil.copytree(binding / name, lib / name)
        bundled = sorted((lib / "confluent_kafka.libs").glob("librdkafka*.so*"))
        if not bundled:
            raise BrokerError(f"The confluent-kafka binding in {binding} bundles no "
                              "librdkafka to replace with the build.")
        for old in bundled:
            shutil.copy2(library, old)
        reported = _reported_version(lib, tree)
        _write_source(lib, tree, digest, reported)
        try:
            lib.rename(target)
        except OSError:
            if not (target / "confluent_kafka").is_dir():
                raise
        progress(f"librdkafka {reported} built from {tree} (sha256 {digest[:12]}), cached "
                 f"in {target}.")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return label


def _reported_version(lib: Path, tree: Path) -> str:
    """Load the binding with the built library in a child interpreter: the version the
    library reports (and proof that the binding runs on it)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(lib), *sys.path])}
    proc = subprocess.run(
        [sys.executable, "-c", "import confluent_kafka as c; v = c.libversion(); "
                               "print(v[0] if isinstance(v, tuple) else v)"],
        env=env, capture_output=True, text=True, timeout=120, check=False,
        stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise UsageError(f"--client-build librdkafka={tree}: the build does not load with "
                         "the confluent-kafka binding of its release line. Python said: "
                         + compiler_errors(proc.stderr))
    return proc.stdout.strip()


def _write_source(directory: Path, tree: Path, digest: str, reported: str | None = None
                  ) -> None:
    """Name the tree the build was last given from (atomically: a run may be reading)."""
    if reported is None:
        reported = build_source_of(directory).get("reported_version", "")
    temporary = directory / f".{BUILD_SOURCE}.{os.getpid()}"
    temporary.write_text(f"{tree.resolve()}\n{digest}\n{reported}\n")
    temporary.replace(directory / BUILD_SOURCE)
