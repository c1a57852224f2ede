"""The project's patch series to librdkafka (``clients/librdkafka/patches/NNNN-*.patch``,
issue 45): where it is found, its digest, and applying it to a pristine tree.

Where: the series is package data of `producer_core` (``drivers/librdkafka_patches``, a
symlink in the repository to ``clients/librdkafka/patches``, which setuptools follows when
it builds a wheel), so an installed kbatch, not only a checkout, carries the exact patches
its mode librdkafka-broker runs; the patches stay where the C work is reviewed
(``clients/librdkafka/``, with their README), and there is one copy of them, not two to keep
in step. A checkout without the symlink falls back to the repository path.

Applying is ``patch -p1`` from the tree's top, each file in lexical order (their NNNN
prefixes), with no fuzz: a hunk whose context has moved is refused, not placed where it
looks close enough in C code. A patch that does not apply is
the user's problem to see at once: a UsageError naming the patch and what ``patch`` said.
"""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Sequence
from pathlib import Path

from producer_core.errors import UsageError

PACKAGE_DIR = Path(__file__).parent / "librdkafka_patches"
REPO_DIR = Path(__file__).resolve().parents[3] / "clients" / "librdkafka" / "patches"
PATCH_TIMEOUT_S = 120


def patches_dir() -> Path | None:
    """The folder of the series: the package's, else the checkout's; None if neither."""
    for candidate in (PACKAGE_DIR, REPO_DIR):
        if candidate.is_dir():
            return candidate
    return None


def patch_series(directory: Path | None = None) -> list[Path]:
    """The series' files in the order they apply (lexical: ``0001-...`` first)."""
    directory = patches_dir() if directory is None else directory
    if directory is None or not directory.is_dir():
        return []
    return sorted((p for p in directory.iterdir() if p.suffix == ".patch" and p.is_file()),
                  key=lambda p: p.name)


def series_digest(patches: Sequence[Path], base: str) -> str:
    """sha256 over the base tree's name (``rdkafka-sys 4.10.0``) and each patch's name
    and bytes, in order: the cache key of the patched build, known without a tree."""
    digest = hashlib.sha256(base.encode() + b"\0")
    for patch in patches:
        digest.update(patch.name.encode() + b"\0" + patch.read_bytes() + b"\0")
    return digest.hexdigest()


def apply_series(tree: Path, patches: Sequence[Path], patch_tool: str = "patch") -> None:
    """Apply `patches` to `tree` in order; UsageError at the first that does not apply."""
    for index, patch in enumerate(patches, 1):
        command = [patch_tool, "-p1", "--forward", "--batch", "--fuzz=0",
                   "--no-backup-if-mismatch", "-i", str(patch)]
        try:
            proc = subprocess.run(command, cwd=tree, capture_output=True, text=True,
                                  timeout=PATCH_TIMEOUT_S, check=False,
                                  stdin=subprocess.DEVNULL)
        except FileNotFoundError as exc:
            raise UsageError(f"Applying librdkafka's patch series needs the `{patch_tool}` "
                             "program, which is not installed (Debian: apt-get install "
                             "patch). Nothing was started.") from exc
        if proc.returncode != 0:
            said = "; ".join(line.strip() for line in
                             (proc.stdout + proc.stderr).strip().splitlines()[:6]) or "-"
            raise UsageError(
                f"Patch {index} of {len(patches)}, {patch.name} (in {patch.parent}), does not "
                f"apply to the librdkafka tree {tree} (patch exit code {proc.returncode}): "
                f"{said}. The series is written for one librdkafka release; check that the "
                "tree is that release and that the patches before it applied. Nothing was "
                "started.")
