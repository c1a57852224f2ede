"""Ctrl-C is honoured at the bounds: the largest rate and key count a user may ask for
still stop within seconds with exit code 130 (issue 17: above them the run used to keep
the event loop busy, or build every key up front, and ignore Ctrl-C)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from producer_core import bounds

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.broker
@pytest.mark.parametrize("args", [
    ["--rate", f"{bounds.MAX_RATE:.0f}", "--duration", "120"],
    ["--rate", "max", "--duration", "120"],
    ["--keys", str(bounds.MAX_KEYS), "--duration", "120"],
], ids=["max-rate", "rate-max", "max-keys"])
def test_ctrl_c_stops_a_run_at_the_bounds(args):
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "produce", "--no-progress", *args],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
        # a shell's background job inherits SIGINT ignored; a person's terminal does not
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        time.sleep(4)
        assert proc.poll() is None, proc.communicate()[0]
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        output, _ = proc.communicate(timeout=20)
        assert proc.returncode == 130, output
        assert time.monotonic() - sent < 15
        assert "Interrupted" in output and "Internal error" not in output
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
