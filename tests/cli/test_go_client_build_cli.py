"""`--client-build franz-go=DIR` and `franz-go@VERSION` (issue 44) from the command line,
with a real copy of franz-go's module from the Go module cache (tests/go_module_copy.py):
the build runs on the embedded broker and the results name it (path, content hash, the
module's version), the same content again is the same build (nothing rebuilt), and a
directory that is not franz-go's module or does not compile is exit 2 with Go's own
error, before any broker starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from producer_core.engine.drivers.go_clients.builds import module_digest
from producer_core.engine.modes.go_toolchain import find_go
from tests.cli.test_produce_cli import kbatch
from tests.go_module_copy import module_copy, pinned_version

pytestmark = [pytest.mark.skipif(find_go() is None, reason="needs the Go toolchain"),
              pytest.mark.timeout(900)]
"""900 s: the first run on a machine builds the Go driver (2 min from a cold Go cache)."""


@pytest.fixture(scope="module")
def module(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = module_copy("franz-go", tmp_path_factory.mktemp("franz-go"),
                       "// kbatch's test of --client-build franz-go=DIR: a trivial change")
    assert copy is not None
    return copy


@pytest.mark.broker
def test_your_own_franz_go_module_runs_and_the_results_name_it(module: Path,
                                                               tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    proc = kbatch("produce", "--mode", "franz-go", "--client-build", f"franz-go={module}",
                  "--partitions", "4", "--rate", "200", "--duration", "2", "--no-progress",
                  "--json", str(out), timeout=900)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    digest = module_digest(module)
    assert doc["mode"] == f"franz-go@build-{digest[:12]}"
    section = doc["go_client"]
    version = pinned_version("franz-go")
    assert section["client_build"] == {"path": str(module.resolve()), "sha256": digest,
                                       "module_version": version}  # from the copy's name
    assert section["client_version"] == f"{version} (build {digest[:12]})"
    assert doc["messages"]["acknowledged"] == 400 and doc["requests_sent"] > 0
    assert f"franz-go {version} (build" in proc.stdout  # the table names the build
    assert f"sha256 {digest[:12]})" in proc.stdout
    again = kbatch("produce", "--mode", "franz-go", "--client-build", f"franz-go={module}",
                   "--partitions", "4", "--messages", "20", "--no-progress", timeout=600)
    assert again.returncode == 0, again.stderr
    assert "Building" not in again.stdout + again.stderr  # the same content: the same build
    assert doc["mode"] in again.stdout


def test_a_module_that_does_not_compile_is_exit_2_with_gos_error(tmp_path: Path) -> None:
    broken = module_copy("franz-go", tmp_path, "this is not Go")
    assert broken is not None
    proc = kbatch("produce", "--mode", "franz-go", "--client-build", f"franz-go={broken}",
                  "--messages", "5", "--no-progress", timeout=900)
    assert proc.returncode == 2, proc.stderr
    message = proc.stderr[proc.stderr.index("Error:"):].strip()
    assert "does not build" in message and "kbatch_test_change.go:3:1: syntax error" in message
    assert "\n\n" not in message and "Traceback" not in proc.stderr  # one paragraph
    assert "Tansu" not in proc.stdout + proc.stderr  # nothing was started


def test_a_directory_that_is_not_the_clients_module_is_exit_2(module: Path,
                                                              tmp_path: Path) -> None:
    proc = kbatch("produce", "--mode", "sarama", "--client-build", f"sarama={module}",
                  "--messages", "5", "--no-progress")
    assert proc.returncode == 2, proc.stderr
    assert "not sarama's Go module directory" in proc.stderr
    assert "declares module github.com/twmb/franz-go" in proc.stderr
    proc = kbatch("produce", "--mode", "franz-go", "--client-build", f"franz-go={tmp_path}",
                  "--messages", "5", "--no-progress")
    assert proc.returncode == 2 and "has no go.mod" in proc.stderr, proc.stderr


@pytest.mark.broker
def test_a_franz_go_release_runs_and_one_the_proxy_lacks_is_exit_2(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    proc = kbatch("produce", "--mode", "franz-go@v1.18.0", "--partitions", "2",
                  "--messages", "50", "--no-progress", "--json", str(out), timeout=900)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["mode"] == "franz-go@v1.18.0"
    assert doc["go_client"]["client_version"] == "v1.18.0"  # as the client reports itself
    assert doc["messages"]["acknowledged"] == 50
    missing = kbatch("produce", "--mode", "franz-go@v0.0.1-no-such-release", "--messages", "5",
                     "--no-progress", timeout=300)
    assert missing.returncode == 2, missing.stderr
    assert "cannot run: go get failed" in missing.stderr and "Traceback" not in missing.stderr
    assert "Tansu" not in missing.stdout + missing.stderr
