"""The library mode librdkafka-broker runs: librdkafka 2.12.1 with the project's patch
series (multi-partition ProduceRequests and the broker-level collector, issue 45), built
once per user on first use.

Steps, each said through `progress` (the CLI draws them; nothing here knows rich):
the pristine tree from a registry package (`librdkafka_source`, or a tree named by
``KBATCH_LIBRDKAFKA_TREE``), the series applied (`librdkafka_patches`), then the own-build
path of ``--client-build librdkafka=DIR`` (`librdkafka_build.register_build`: configure,
make, a confluent-kafka binding of the release line, all in the per-user cache).

The cache key is the base tree and the patches: `series_digest` over the crate's name and
version (or the given tree's content hash) and every patch's bytes names the directory
``librdkafka-patched-<12 hex>`` that keeps the patched tree and the build's label
(``build-<12 hex>``, itself the patched tree's content hash). A later run with the same
series finds the label and runs at once, without cargo; an edited patch is a new build.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from producer_core.downloads import cache_root
from producer_core.engine.drivers.librdkafka_build import check_tree, register_build, tree_digest
from producer_core.engine.drivers.librdkafka_patches import (
    PACKAGE_DIR,
    REPO_DIR,
    apply_series,
    patch_series,
    series_digest,
)
from producer_core.engine.drivers.librdkafka_source import (
    CRATE,
    CRATE_VERSION,
    TREE_ENV,
    fetch_tree,
    find_cargo,
    no_cargo_message,
)
from producer_core.engine.drivers.librdkafka_versions import target_dir
from producer_core.errors import UsageError

LABEL_FILE = "BUILD_LABEL.txt"
MODE = "librdkafka-broker"


def base_name() -> str:
    """What the series is applied to: the crate, or the content of KBATCH_LIBRDKAFKA_TREE."""
    given = os.environ.get(TREE_ENV)
    if given:
        return "tree " + tree_digest(check_tree(given))
    return f"{CRATE} {CRATE_VERSION}"


def patched_dir(key: str) -> Path:
    return cache_root() / f"librdkafka-patched-{key[:12]}"


def cached_label(key: str) -> str | None:
    """The build label of the series `key` if its build is in the cache."""
    try:
        label = (patched_dir(key) / LABEL_FILE).read_text().strip()
    except OSError:
        return None
    return label if label and (target_dir(label) / "confluent_kafka").is_dir() else None


def ensure_build(progress: Callable[[str], None]) -> str:
    """The version label (``build-<hash>``) of the patched build, made on first use."""
    patches = patch_series()
    if not patches:
        raise UsageError(f"Mode {MODE} runs librdkafka with the project's patch series, and "
                         f"this kbatch has none (no *.patch in {PACKAGE_DIR} nor in "
                         f"{REPO_DIR}): reinstall kbatch from a checkout that has "
                         "clients/librdkafka/patches. Nothing was started.")
    key = series_digest(patches, base_name())
    label = cached_label(key)
    if label is not None:
        return label
    given = os.environ.get(TREE_ENV)
    if not given and find_cargo() is None:
        raise UsageError(no_cargo_message(f"Mode {MODE} (first use: building the patched "
                                          "librdkafka)"))
    home = patched_dir(key)
    home.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{home.name}-", dir=home.parent))
    try:
        pristine = check_tree(given) if given else fetch_tree(work, progress)
        tree = work / "tree"
        shutil.copytree(pristine, tree, symlinks=True)
        progress(f"Applying {len(patches)} patch{'es' if len(patches) != 1 else ''} to "
                 f"librdkafka ({', '.join(p.name for p in patches) or 'none'})...")
        apply_series(tree, patches)
        if home.exists():  # an earlier attempt that did not finish
            shutil.rmtree(home, ignore_errors=True)
        home.mkdir()
        tree.rename(home / "tree")
        try:
            label = register_build(str(home / "tree"), progress)
        except UsageError as exc:  # its words are --client-build's: say what this is
            raise UsageError(str(exc).replace(
                f"--client-build librdkafka={home / 'tree'}:",
                f"Mode {MODE}: librdkafka with the project's patches ({home / 'tree'}):")
            ) from None
        (home / LABEL_FILE).write_text(label + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return label


def install(version: str | None, progress: Callable[[str], None]) -> None:
    """Mode librdkafka-broker's installer (`ModeSpec.install`): the build, before any
    broker starts, so that a missing cargo or a patch that does not apply fails first."""
    del version  # the mode takes none (`ModeSpec.versions` is None)
    ensure_build(progress)
