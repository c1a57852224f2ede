"""`--client-build librdkafka=DIR` (issue 44) from the command line, with a librdkafka tree
from a registry package that bundles it (tests/librdkafka_tree.py): a one-line change the
results show (the version the library reports), the same tree again is the same build, and
a tree that does not compile is exit 2 with the compiler's error, before any broker."""

from __future__ import annotations

import json
import re
import shutil
import uuid
from pathlib import Path

import pytest

from tests.cli.test_produce_cli import kbatch
from tests.librdkafka_tree import fetch_tree_or_none, skip_without_cargo


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    found = fetch_tree_or_none(tmp_path_factory.mktemp("librdkafka"))
    if found is None:
        skip_without_cargo("needs cargo (librdkafka's sources come in the rdkafka-sys crate)")
    return found


def copy_with_version(tree: Path, target: Path, version_hex: str) -> Path:
    """A copy of `tree` that says it is release `version_hex`, and whose content no earlier
    run has built (a comment of its own), so the first run builds it whatever the cache
    holds."""
    shutil.copytree(tree, target)
    header = target / "src" / "rdkafka.h"
    text, count = re.subn(r"(#define\s+RD_KAFKA_VERSION\s+)0x[0-9a-fA-F]{8}",
                          rf"\g<1>0x{version_hex}", header.read_text())
    assert count == 1
    header.write_text(f"/* kbatch test {uuid.uuid4().hex} */\n" + text)
    return target


@pytest.mark.broker
def test_your_own_librdkafka_build_runs_and_the_results_name_it(tree: Path,
                                                                 tmp_path: Path) -> None:
    mine = copy_with_version(tree, tmp_path / "mine", "020c63ff")  # says it is 2.12.99
    out = tmp_path / "run.json"
    proc = kbatch("produce", "--mode", "librdkafka", "--client-build", f"librdkafka={mine}",
                  "--partitions", "4", "--rate", "200", "--duration", "2", "--no-progress",
                  "--json", str(out), timeout=1500)
    assert proc.returncode == 0, proc.stderr
    assert "Building librdkafka from" in proc.stderr  # a progress line on first use
    doc = json.loads(out.read_text())
    assert re.fullmatch(r"librdkafka@build-[0-9a-f]{12}", doc["mode"])
    assert doc["librdkafka"]["version"] == "2.12.99"  # the build, not the pinned library
    build = doc["librdkafka"]["client_build"]
    assert build["path"] == str(mine.resolve()) and len(build["sha256"]) == 64
    assert doc["mode"].endswith(build["sha256"][:12])
    assert doc["messages"]["acknowledged"] == 400
    again = kbatch("produce", "--mode", "librdkafka", "--client-build", f"librdkafka={mine}",
                   "--partitions", "4", "--messages", "20", "--no-progress", timeout=600)
    assert again.returncode == 0, again.stderr
    assert "Building librdkafka" not in again.stderr and doc["mode"] in again.stdout


def test_a_tree_that_does_not_compile_is_exit_2_with_the_compilers_error(
        tree: Path, tmp_path: Path) -> None:
    broken = copy_with_version(tree, tmp_path / "broken", "020c01ff")
    header = broken / "src" / "rdkafka.h"
    header.write_text("this is not C;\n" + header.read_text())
    proc = kbatch("produce", "--mode", "librdkafka", "--client-build",
                  f"librdkafka={broken}", "--messages", "5", "--no-progress", timeout=1500)
    assert proc.returncode == 2, proc.stderr
    assert "does not build" in proc.stderr and "error" in proc.stderr
    assert "rdkafka.h" in proc.stderr and "Traceback" not in proc.stderr
    message = proc.stderr[proc.stderr.index("Error:"):].strip()
    assert "\n\n" not in message  # one paragraph
    assert "Tansu" not in proc.stdout + proc.stderr  # nothing was started
