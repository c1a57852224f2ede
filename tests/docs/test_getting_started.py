"""The commands of docs/getting-started.md run as written, on the embedded broker.

They are read from the page itself: every line starting with `$ ` inside a ```console block,
in order, run in one fresh directory (with the repository's gates/ beside it, as in a clone).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "getting-started.md"


def console_commands(markdown: str) -> list[str]:
    blocks = re.findall(r"^```console\n(.*?)^```", markdown, re.MULTILINE | re.DOTALL)
    return [line[2:].strip() for block in blocks for line in block.splitlines()
            if line.startswith("$ ")]


def test_the_page_has_commands_to_run() -> None:
    commands = console_commands(PAGE.read_text())
    assert len(commands) >= 3
    assert all(command.startswith("kbatch ") for command in commands), commands


@pytest.mark.broker
def test_getting_started_commands_run(tmp_path: Path) -> None:
    (tmp_path / "gates").symlink_to(ROOT / "gates")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for command in console_commands(PAGE.read_text()):
        argv = [sys.executable, "-m", "cli.main", *shlex.split(command)[1:]]
        done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=180)
        assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
    assert (tmp_path / "results" / "first" / "results.json").is_file()
    assert (tmp_path / "results" / "first" / "report" / "report.md").is_file()
