"""kbatch in the environments a careless user gives it (issue 35): stdout closed, a C
locale without UTF-8, a bootstrap server that accepts connections and never answers."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from producer_core.results.results_io import RunRecorder, add_facts, write_results_dir
from producer_core.results.run_facts import run_document
from tests.results_fakes import fake_results

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
KBATCH = f"{sys.executable} -m cli.main"


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("odd")
    run = RunRecorder(lambda: fake_results("partition"))()
    document = run_document(run, files=True)
    add_facts(document, embedded=False)
    write_results_dir(root / "run", document, [run])
    (root / "ok.toml").write_text('[[rule]]\ncheck = "partition.requests_sent >= 1"\n')
    return root


def shell(command: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], capture_output=True, text=True, cwd=ROOT,
                          env=env or ENV, timeout=120)


@pytest.mark.parametrize("command", ["report {run} --no-charts --out {out}",
                                     "gate {run} --gates {gates}"])
def test_a_closed_stdout_is_not_a_crash(saved, tmp_path, command):
    args = command.format(run=saved / "run", out=tmp_path / "r", gates=saved / "ok.toml")
    result = shell(f"{KBATCH} {args} >&-")
    assert "Traceback" not in result.stderr and "Internal error" not in result.stderr
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("command", ["report {run} --no-charts --out {out}",
                                     "gate {run} --gates {gates}"])
def test_a_c_locale_reads_kbatchs_own_utf8_files(saved, tmp_path, command):
    env = {**ENV, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0",
           "PYTHONCOERCECLOCALE": "0", "PYTHONIOENCODING": ""}
    args = command.format(run=saved / "run", out=tmp_path / "r", gates=saved / "ok.toml")
    result = shell(f"{KBATCH} {args}", env)
    assert "Traceback" not in result.stderr and "Internal error" not in result.stderr
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("mode", ["partition", "librdkafka"])
def test_a_bootstrap_that_never_answers_is_reported_within_seconds(mode):
    with socket.socket() as silent:  # accepts (the kernel's backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(64)
        port = silent.getsockname()[1]
        began = time.monotonic()
        result = shell(f"{KBATCH} produce --no-progress --messages 5 --mode {mode} "
                       f"--bootstrap-servers 127.0.0.1:{port}")
        took = time.monotonic() - began
    assert result.returncode == 1, result.stderr
    assert "Could not reach any bootstrap server" in result.stderr
    assert "Traceback" not in result.stderr and took < 40
