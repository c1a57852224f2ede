"""The lab state file cannot make kbatch signal a process the lab did not start (issue 35)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from producer_core.brokers.lab.state import (
    UP_MARKER,
    LabStateError,
    identity,
    owned_process,
    read_state,
    start_time,
    write_state,
)

ROOT = Path(__file__).resolve().parents[2]
KBATCH = [sys.executable, "-m", "cli.main"]


def kbatch(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KBATCH_LAB_STATE": str(state),
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH"))
                                         if p)}
    return subprocess.run([*KBATCH, *args], capture_output=True, text=True, timeout=60,
                          cwd=ROOT, env=env)


@pytest.fixture()
def bystander():
    """An unrelated process of ours whose command line carries the markers kbatch looks for."""
    proc = subprocess.Popen(["bash", "-c", "exec -a 'kbatch lab up tansu kafka.Kafka' sleep 60"])
    deadline = time.monotonic() + 5
    while b"lab up" not in Path(f"/proc/{proc.pid}/cmdline").read_bytes():
        assert time.monotonic() < deadline
        time.sleep(0.01)
    yield proc
    proc.kill()
    proc.wait()


def hostile(path: Path, document: dict) -> None:
    path.write_text(json.dumps(document))
    path.chmod(0o600)


@pytest.mark.parametrize("start_offset", [None, 1])
def test_lab_down_does_not_signal_a_process_the_lab_did_not_start(tmp_path, bystander,
                                                                  start_offset):
    state = tmp_path / "lab.json"
    start = start_time(bystander.pid)
    assert start is not None
    recorded = None if start_offset is None else start + start_offset  # a recycled pid
    hostile(state, {"pid": bystander.pid, "pid_start": recorded or 0, "bootstrap": "x:1",
                    "broker": "tansu", "backend_marker": "sleep",
                    "nodes": [{"node_id": 1, "pid": bystander.pid, "start": recorded or 0}],
                    "backend_pids": [bystander.pid]})
    down = kbatch(state, "lab", "down", "--timeout", "1")
    time.sleep(0.3)
    assert bystander.poll() is None, "lab down signalled a process it did not start"
    assert down.returncode == 0 and "No lab is running" in down.stderr
    assert "Traceback" not in down.stderr


@pytest.mark.parametrize("pid", [-1, 0, 1, True, "1", 2 ** 40])
def test_pids_below_two_or_odd_are_refused_as_damage(tmp_path, pid):
    state = tmp_path / "lab.json"
    hostile(state, {"pid": pid, "pid_start": 0, "bootstrap": "x:1"})
    for command in (["down"], ["status"], ["restart", "1"]):
        result = kbatch(state, "lab", *command)
        assert result.returncode == 1, (command, result.stderr)
        assert str(state) in result.stderr and f"rm -f {state}" in result.stderr
        assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    with pytest.raises(LabStateError, match="damaged"):
        read_state(state)
    for bad_pid in (-1, 0, 1):
        assert not owned_process(bad_pid, 0, "")


@pytest.mark.parametrize("content", [b"", b"{", b"[]", b"\xff\xfe", b'{"pid": 5}',
                                     b'{"pid": 1e999, "pid_start": 0, "bootstrap": ""}',
                                     b'{"pid": 99999999999999999999999999999999999, '
                                     b'"pid_start": 0, "bootstrap": ""}'])
def test_a_corrupt_state_file_is_one_paragraph_naming_it(tmp_path, content):
    state = tmp_path / "lab.json"
    state.write_bytes(content)
    state.chmod(0o600)
    result = kbatch(state, "lab", "status")
    assert result.returncode == 1 and str(state) in result.stderr
    assert "rm -f" in result.stderr and "Traceback" not in result.stderr


def test_state_files_that_are_not_regular_private_files_are_refused(tmp_path):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo, 0o600)
    with pytest.raises(LabStateError, match="not a regular file"):
        read_state(fifo)
    shared = tmp_path / "shared.json"
    write_state({"pid": 123, "pid_start": 1, "bootstrap": "x:1"}, shared)
    shared.chmod(0o666)
    with pytest.raises(LabStateError, match="0600"):
        read_state(shared)
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (2 * 1024 * 1024))
    big.chmod(0o600)
    with pytest.raises(LabStateError, match="larger"):
        read_state(big)
    link = tmp_path / "link.json"
    link.symlink_to(shared)
    with pytest.raises(LabStateError):
        read_state(link)


def test_a_directory_others_can_write_is_refused(tmp_path):
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    with pytest.raises(LabStateError, match="another user"):
        write_state({"pid": 123, "pid_start": 1, "bootstrap": "x:1"}, open_dir / "lab.json")
    result = kbatch(open_dir / "lab.json", "lab", "status")
    assert result.returncode == 1 and "another user" in result.stderr


def test_state_is_written_0600_in_a_0700_directory(tmp_path):
    path = tmp_path / "fresh" / "lab.json"
    write_state({"pid": 123, "pid_start": 1, "bootstrap": "x:1"}, path)
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700


def test_owned_process_needs_start_time_user_and_marker(bystander):
    me = identity(bystander.pid)
    assert owned_process(me["pid"], me["start"], UP_MARKER)
    assert not owned_process(me["pid"], me["start"] + 1, UP_MARKER)
    assert not owned_process(me["pid"], me["start"], "no-such-marker")
    assert not owned_process(me["pid"], None, UP_MARKER)
