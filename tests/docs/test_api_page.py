"""The example of docs/reference/api.md runs as written, on the embedded broker.

The page's ```python blocks are joined in order and run in a fresh interpreter, as a user
would paste them into a script; the example is short (a few hundred messages) on purpose.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import producer_core

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "reference" / "api.md"


def python_blocks(markdown: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", markdown, re.MULTILINE | re.DOTALL)


def test_the_page_has_an_example_that_uses_only_the_public_api() -> None:
    blocks = python_blocks(PAGE.read_text())
    assert blocks
    imported = re.findall(r"^(?:from|import) (producer_core[\w.]*)", "".join(blocks),
                          re.MULTILINE)
    assert imported and set(imported) == {"producer_core"}, imported
    names = re.search(r"from producer_core import \((.*?)\)", blocks[0], re.DOTALL)
    assert names is not None
    assert {n.strip() for n in names.group(1).split(",")} <= set(producer_core.__all__)


@pytest.mark.broker
def test_the_example_runs(tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text("\n".join(python_blocks(PAGE.read_text())))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("300 acknowledged in "), done.stdout
    assert [line.split()[0] for line in lines[1:]] == ["partition", "broker"], done.stdout
