"""The patch series of mode librdkafka-broker (issue 45): found from the package, applied
in lexical order with ``patch -p1``, keyed by its bytes; a patch that does not apply and
a machine without cargo are each one clear paragraph, before anything starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from producer_core.engine.drivers import librdkafka_patched, librdkafka_source
from producer_core.engine.drivers.librdkafka_patches import (
    PACKAGE_DIR,
    REPO_DIR,
    apply_series,
    patch_series,
    patches_dir,
    series_digest,
)
from producer_core.errors import UsageError

ONE = """--- a/src/rdkafka.c
+++ b/src/rdkafka.c
@@ -1,2 +1,2 @@
 int x;
-int y;
+int y = 1;
"""
TWO = """--- a/src/rdkafka.c
+++ b/src/rdkafka.c
@@ -1,2 +1,3 @@
 int x;
 int y = 1;
+int z;
"""


def small_tree(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "configure").write_text("#!/usr/bin/env bash\n")
    (root / "src" / "rdkafka.h").write_text("#define RD_KAFKA_VERSION  0x020c01ff\n")
    (root / "src" / "rdkafka.c").write_text("int x;\nint y;\n")
    return root


def series(root: Path, **patches: str) -> Path:
    root.mkdir()
    for name, text in patches.items():
        (root / name).write_text(text)
    (root / "README.md").write_text("not a patch")
    return root


def test_the_series_applies_in_lexical_order(tmp_path: Path) -> None:
    folder = series(tmp_path / "p", **{"0002-z.patch": TWO, "0001-y.patch": ONE})
    patches = patch_series(folder)
    assert [p.name for p in patches] == ["0001-y.patch", "0002-z.patch"]
    tree = small_tree(tmp_path / "t")
    apply_series(tree, patches)
    assert (tree / "src" / "rdkafka.c").read_text() == "int x;\nint y = 1;\nint z;\n"
    assert not list(tree.rglob("*.orig")) and not list(tree.rglob("*.rej"))


def test_a_patch_that_does_not_apply_is_one_paragraph_naming_it(tmp_path: Path) -> None:
    folder = series(tmp_path / "p", **{"0001-y.patch": ONE, "0002-z.patch": ONE})
    tree = small_tree(tmp_path / "t")
    with pytest.raises(UsageError) as raised:
        apply_series(tree, patch_series(folder))  # the second undoes nothing: refused
    message = str(raised.value)
    assert message.startswith("Patch 2 of 2, 0002-z.patch")
    assert "does not apply" in message and "\n" not in message
    assert "Nothing was started." in message


def test_the_key_follows_every_patchs_bytes_and_the_base(tmp_path: Path) -> None:
    folder = series(tmp_path / "p", **{"0001-y.patch": ONE})
    patches = patch_series(folder)
    key = series_digest(patches, "rdkafka-sys 4.10.0")
    assert series_digest(patches, "rdkafka-sys 4.10.0") == key
    assert series_digest(patches, "rdkafka-sys 4.11.0") != key
    assert series_digest([], "rdkafka-sys 4.10.0") != key
    (folder / "0001-y.patch").write_text(ONE + " \n")
    assert series_digest(patch_series(folder), "rdkafka-sys 4.10.0") != key


def test_no_series_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(librdkafka_patched, "patch_series", lambda: [])
    with pytest.raises(UsageError, match="has none .* reinstall kbatch"):
        librdkafka_patched.ensure_build(lambda text: None)


def test_the_series_is_package_data_and_the_checkouts_folder() -> None:
    # in a checkout the package's folder is the repository's, through a symlink
    # (setuptools copies what it points at into a wheel)
    assert PACKAGE_DIR.is_symlink()
    assert PACKAGE_DIR.resolve() == REPO_DIR.resolve()
    found = patches_dir()
    assert found is None or found.resolve() == REPO_DIR.resolve()


def test_without_cargo_the_mode_says_what_to_install(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(librdkafka_source.TREE_ENV, raising=False)
    monkeypatch.setattr(librdkafka_patched, "find_cargo", lambda: None)
    folder = series(tmp_path / "p", **{"0001-y.patch": ONE})
    monkeypatch.setattr(librdkafka_patched, "patch_series", lambda: patch_series(folder))
    with pytest.raises(UsageError) as raised:
        librdkafka_patched.ensure_build(lambda text: None)
    message = str(raised.value)
    assert "cargo is not installed" in message and "KBATCH_LIBRDKAFKA_TREE" in message
    assert "rdkafka-sys 4.10.0" in message and "\n" not in message


def test_a_given_tree_that_the_series_does_not_fit_fails_before_any_build(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = series(tmp_path / "p", **{"0001-y.patch": TWO})  # expects ONE applied first
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv(librdkafka_source.TREE_ENV, str(small_tree(tmp_path / "t")))
    monkeypatch.setattr(librdkafka_patched, "patch_series", lambda: patch_series(folder))
    said: list[str] = []
    with pytest.raises(UsageError, match="Patch 1 of 1, 0001-y.patch .* does not apply"):
        librdkafka_patched.ensure_build(said.append)
    assert said == ["Applying 1 patch to librdkafka (0001-y.patch)..."]
    assert not any((tmp_path / "cache" / "kbatch").glob("confluent-kafka-build-*"))
