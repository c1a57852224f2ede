"""Go client versions and builds (issue 44): the cache key of each variant of kbatch's Go
driver, a module directory's content hash and version, the module check, and Go's errors
in one paragraph."""

from __future__ import annotations

from pathlib import Path

import pytest

from producer_core.engine.drivers.go_clients.builds import (
    check_module,
    module_digest,
    module_version,
)
from producer_core.engine.drivers.go_clients.driver import (
    PINNED,
    build_dir,
    build_variant,
    go_errors,
    release_variant,
)
from producer_core.errors import UsageError


def module(root: Path, path: str = "github.com/twmb/franz-go") -> Path:
    (root / "pkg" / "kgo").mkdir(parents=True)
    (root / "go.mod").write_text(f"module {path}\n\ngo 1.22\n")
    (root / "pkg" / "kgo" / "producer.go").write_text("package kgo\n")
    return root


def test_each_variant_is_its_own_cache_key_and_the_pinned_key_is_the_sources_alone(
        tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    keys = {build_dir(PINNED), build_dir(release_variant("franz-go", "v1.18.0")),
            build_dir(release_variant("franz-go", "v1.19.0")),
            build_dir(release_variant("sarama", "v1.18.0")),
            build_dir(build_variant("franz-go", "build-0123456789ab"))}
    assert len(keys) == 5
    assert build_dir(release_variant("franz-go", "v1.18.0")) == build_dir(
        release_variant("franz-go", "v1.18.0"))
    assert release_variant("franz-go", "v1.18.0").edits == (
        ("get", "github.com/twmb/franz-go@v1.18.0"),)


def test_the_content_hash_follows_the_files_not_the_place_or_git(tmp_path) -> None:
    a = module(tmp_path / "a")
    b = module(tmp_path / "b")
    assert module_digest(a) == module_digest(b)
    (b / ".git").mkdir()
    (b / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    assert module_digest(a) == module_digest(b)
    (b / "pkg" / "kgo" / "producer.go").write_text("package kgo\n// changed\n")
    assert module_digest(a) != module_digest(b)


def test_the_modules_version_comes_from_a_module_cache_name(tmp_path) -> None:
    assert module_version(module(tmp_path / "franz-go@v1.22.3")) == "v1.22.3"
    assert module_version(module(tmp_path / "mine")) == "unknown"


def test_a_directory_that_is_not_the_clients_module_is_refused_naming_what_it_is(
        tmp_path) -> None:
    assert check_module("franz-go", str(module(tmp_path / "ok"))) == (tmp_path / "ok")
    with pytest.raises(UsageError, match="declares module github.com/twmb/franz-go; sarama "
                                         "is module github.com/IBM/sarama"):
        check_module("sarama", str(tmp_path / "ok"))
    with pytest.raises(UsageError, match="has no go.mod"):
        check_module("franz-go", str(tmp_path))
    with pytest.raises(UsageError, match="is not a directory"):
        check_module("kafka-go", str(tmp_path / "nowhere"))


def test_gos_errors_in_one_paragraph_lead_with_the_file_lines() -> None:
    output = ("# github.com/twmb/franz-go/pkg/kgo\n"
              "/src/pkg/kgo/x.go:3:1: syntax error: non-declaration statement\n"
              "/src/pkg/kgo/y.go:9:2: undefined: foo\n")
    assert go_errors(output) == ("/src/pkg/kgo/x.go:3:1: syntax error: non-declaration "
                                 "statement; /src/pkg/kgo/y.go:9:2: undefined: foo")
    assert go_errors("go: downloading x\ngo: x@v9: unknown revision\n") == (
        "go: downloading x; go: x@v9: unknown revision")
    assert go_errors("") == "(nothing)"
