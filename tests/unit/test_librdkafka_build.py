"""--client-build librdkafka=DIR's pure parts: which files make a tree's content (its cache
key), the release it says it is, refusals, and the compiler's complaint in one paragraph."""

from __future__ import annotations

from pathlib import Path

import pytest

from producer_core.engine.drivers.librdkafka_build import (
    check_tree,
    compiler_errors,
    tree_digest,
    tree_version,
)
from producer_core.errors import UsageError


def small_tree(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "configure").write_text("#!/usr/bin/env bash\n")
    (root / "src" / "rdkafka.h").write_text("#define RD_KAFKA_VERSION  0x020c01ff\n")
    (root / "src" / "rdkafka.c").write_text("int x;\n")
    return root


def test_the_content_hash_follows_sources_not_build_outputs(tmp_path: Path) -> None:
    tree = small_tree(tmp_path / "t")
    before = tree_digest(tree)
    for built in ("src/rdkafka.o", "src/rdkafka.d", "src/librdkafka.so.1", "config.h",
                  "Makefile.config", "config.cache", "src/librdkafka.a"):
        (tree / built).write_text("made by a build")
    (tree / ".git").mkdir()
    (tree / ".git" / "HEAD").write_text("ref")
    assert tree_digest(tree) == before
    (tree / "src" / "rdkafka.c").write_text("int y;\n")  # a one-line change
    assert tree_digest(tree) != before


def test_the_release_a_tree_says_it_is(tmp_path: Path) -> None:
    tree = small_tree(tmp_path / "t")
    assert tree_version(tree) == (2, 12, 1)
    (tree / "src" / "rdkafka.h").write_text("/* no version */\n")
    with pytest.raises(UsageError, match="RD_KAFKA_VERSION"):
        tree_version(tree)


def test_a_folder_that_is_no_librdkafka_tree_is_refused(tmp_path: Path) -> None:
    assert check_tree(str(small_tree(tmp_path / "t"))) == tmp_path / "t"
    with pytest.raises(UsageError, match="not a librdkafka source tree"):
        check_tree(str(tmp_path))


def test_the_compilers_errors_come_first_in_one_paragraph() -> None:
    output = ("gcc -c rdkafka.c\nrdkafka.h:12:1: error: expected ';' before 'int'\n"
              "rdkafka.c:3: note: in expansion\nmake: *** [rdkafka.o] Error 1\n")
    text = compiler_errors(output)
    assert text.startswith("rdkafka.h:12:1: error: expected ';'") and "\n" not in text
    assert compiler_errors("line 1\nline 2\n") == "line 1; line 2"
