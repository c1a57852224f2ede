"""`kbatch produce --mode librdkafka-broker` where its first-use build cannot happen (issue
45): no cargo to fetch librdkafka's sources, or a tree the patch series does not fit. Each
is exit code 2 with one paragraph saying what to do, before any broker starts. A fresh
cache (XDG_CACHE_HOME) makes sure no earlier build is found."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from producer_core.engine.drivers.librdkafka_patches import patch_series
from tests.cli.test_produce_cli import KBATCH, ROOT

pytestmark = pytest.mark.skipif(not patch_series(),
                                reason="the librdkafka patch series is empty")


def produce(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KBATCH, "produce", "--mode", "librdkafka-broker", "--messages",
                           "5", "--no-progress"], capture_output=True, text=True, timeout=120,
                          cwd=ROOT, env={**os.environ, **env})


def one_paragraph_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    message = proc.stderr[proc.stderr.index("Error:"):].strip()
    assert "\n\n" not in message
    assert "Tansu" not in proc.stdout + proc.stderr  # nothing was started
    return message


def test_without_cargo_the_first_run_says_what_to_install(tmp_path: Path) -> None:
    bare = tmp_path / "bin"
    bare.mkdir()
    python_dir = str(Path(KBATCH[0]).parent)
    message = one_paragraph_error(produce({
        "XDG_CACHE_HOME": str(tmp_path / "cache"), "HOME": str(tmp_path / "home"),
        "CARGO_HOME": str(tmp_path / "cargo"), "PATH": f"{python_dir}:{bare}:/usr/bin:/bin",
        "KBATCH_LIBRDKAFKA_TREE": ""}))
    assert "cargo is not installed" in message and "KBATCH_LIBRDKAFKA_TREE" in message


def test_a_tree_the_patches_do_not_fit_names_the_patch(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "src").mkdir(parents=True)
    (tree / "configure").write_text("#!/usr/bin/env bash\n")
    (tree / "src" / "rdkafka.h").write_text("#define RD_KAFKA_VERSION  0x020c01ff\n")
    message = one_paragraph_error(produce({"XDG_CACHE_HOME": str(tmp_path / "cache"),
                                           "KBATCH_LIBRDKAFKA_TREE": str(tree)}))
    first = patch_series()[0].name
    assert f"{first}" in message and "does not apply" in message
