"""A lab state path that is a directory (issue 49, a regression): a clear LabStateError
naming it and what to do, for reading (status, down, restart, up) and for writing, never
"Internal error: IsADirectoryError"."""

from __future__ import annotations

import pytest

from producer_core.brokers.lab.state import LabStateError, read_state, write_state
from tests.cli.sweep_support import run_kbatch


@pytest.fixture()
def directory(tmp_path):
    (tmp_path / "lab.json").mkdir()
    tmp_path.chmod(0o700)
    return tmp_path / "lab.json"


def test_reading_a_directory_is_a_clear_error(directory):
    with pytest.raises(LabStateError, match="is not a regular file but a directory"):
        read_state(directory)


def test_writing_over_a_directory_is_a_clear_error(directory):
    with pytest.raises(LabStateError, match="is a directory"):
        write_state({"pid": 2}, directory)


@pytest.mark.parametrize("args", [["lab", "status"], ["lab", "down"], ["lab", "restart", "1"]])
def test_lab_commands_say_so_with_exit_1(directory, monkeypatch, args):
    monkeypatch.setenv("KBATCH_LAB_STATE", str(directory))
    outcome = run_kbatch(args, seconds=20)
    assert outcome.exit_code == 1 and not outcome.internal_error, outcome.describe()
    assert "is not a regular file but a directory" in " ".join(outcome.output.split())
