"""Start-up stays light: `kbatch --help` and a command's `--help` import no heavy library.

A behavioural guard, not a timing test (timings on a shared machine are noise): numpy,
aiokafka, pyarrow, matplotlib, pyspark, confluent_kafka and the results' readers cost tens
to hundreds of milliseconds each to import, and a help text needs none of them
(cli/app/lazy_group.py, docs/findings/startup.md). Checked in a fresh interpreter, as a
user's shell starts one.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import click
import pytest

from cli.commands.lab import LAB_COMMANDS, lab
from cli.main import COMMANDS, cli

HEAVY = ("numpy", "aiokafka", "pyarrow", "matplotlib", "plotly", "pyspark", "confluent_kafka",
         "hdrh", "jsonschema", "yaml")

LIGHT_HELP = list(COMMANDS)
"""Every command's `--help` is checked: a command added to cli.main's COMMANDS whose help
imports a heavy library fails here. A command declares its options in its `*_cmd` module
and imports what runs it in its body (cli.steps.run, cli.steps.sweep, ...)."""


def loaded_after(code: str) -> dict[str, bool]:
    """Which heavy libraries a fresh interpreter has imported after running `code`."""
    probe = (f"import sys\n{code}\n"
             f"print(__import__('json').dumps({{m: m in sys.modules for m in {HEAVY!r}}}))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def heavy_after(code: str) -> list[str]:
    return [name for name, yes in loaded_after(code).items() if yes]


def kbatch(*args: str) -> str:
    """Code that runs the command line in-process as `kbatch ARGS` would."""
    return (f"from cli.main import cli\n"
            f"try:\n"
            f"    cli.main({list(args)!r}, prog_name='kbatch')\n"
            f"except SystemExit:\n"
            f"    pass")


def test_the_probe_sees_a_heavy_import() -> None:
    assert heavy_after("import numpy, yaml") == ["numpy", "yaml"]


def test_importing_the_command_line_imports_no_heavy_library() -> None:
    assert heavy_after("import cli.main") == []


HELP_ARGS = [["--help"], ["-h"], ["--version"], *[[name, "--help"] for name in LIGHT_HELP],
             *[["lab", name, "--help"] for name in LAB_COMMANDS]]


@pytest.mark.parametrize("args", HELP_ARGS)
def test_help_imports_no_heavy_library(args: list[str]) -> None:
    assert heavy_after(kbatch(*args)) == []


@pytest.mark.parametrize("args", [["produce", "--partitions", "0"],
                                  ["compare-modes", "--rate", "abc"], ["prodcue"]])
def test_a_refused_command_line_imports_no_heavy_library(args: list[str]) -> None:
    assert heavy_after(kbatch(*args)) == []


def test_every_commands_help_is_checked() -> None:
    """No command left out of the help check (the table is the source)."""
    checked = {args[0] for args in HELP_ARGS if len(args) == 2 and args[1] == "--help"}
    assert checked == set(COMMANDS)
    lab_checked = {args[1] for args in HELP_ARGS if len(args) == 3 and args[0] == "lab"}
    assert lab_checked == set(LAB_COMMANDS)


def test_help_loads_no_command_module() -> None:
    code = (kbatch("--help")
            + "\nimport sys\nprint(sorted(m for m in sys.modules if m.endswith('_cmd')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize(("group", "table"), [(cli, COMMANDS), (lab, LAB_COMMANDS)],
                         ids=["kbatch", "kbatch lab"])
def test_each_registered_line_is_the_commands_own_short_help(group: click.Group,
                                                             table: dict) -> None:
    """A lazy group lists commands from its table without importing them: each line must
    shorten as the command's docstring does, at any terminal width."""
    root = click.Context(group, info_name=group.name or "kbatch")
    assert sorted(group.list_commands(root)) == sorted(table)
    for name, (where, line) in table.items():
        command = group.get_command(root, name)
        module, _, attribute = where.partition(":")
        assert command is getattr(importlib.import_module(module), attribute), name
        for limit in (20, 45, 70, 200):
            assert (click.Command(name, help=line).get_short_help_str(limit)
                    == command.get_short_help_str(limit)), (name, limit)


def test_the_group_help_lists_every_command_once_in_order() -> None:
    done = subprocess.run([sys.executable, "-m", "cli.main", "--help"], capture_output=True,
                          text=True, timeout=120, check=True)
    lines = done.stdout.split("Commands:", 1)[1].splitlines()
    listed = [line.split()[0] for line in lines if line.startswith("  ") and line.split()]
    assert listed == sorted(COMMANDS)


def test_a_mistyped_command_is_refused_with_a_suggestion() -> None:
    done = subprocess.run([sys.executable, "-m", "cli.main", "comapre-modes"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "No such command 'comapre-modes'. Did you mean 'compare-modes'?" in done.stderr
