"""`--consume`'s bad input, refused before any broker starts: one clear line, exit 2."""

from __future__ import annotations

import pytest

from tests.cli.test_produce_cli import kbatch


@pytest.mark.parametrize(("args", "fragment"), [
    (["produce", "--consumers", "3"], "--consumers applies only with --consume"),
    (["produce", "--consumer-config", "fetch.min.bytes=1"],
     "--consumer-config applies only with --consume"),
    (["produce", "--consume", "--consumer-config", "group.id=x"], "is kbatch's to set"),
    (["produce", "--consume", "--consumer-config", "fetch.min.bytes"], "expected KEY=VALUE"),
    (["produce", "--consume", "--consumers", "0"], "--consumers must be 1 to 256"),
    (["produce", "--consume", "--message-size", "4"], "--consume needs every message value"),
    (["compare-modes", "--e2e", "--consumer-config", "bootstrap.servers=x:1"],
     "is kbatch's to set"),
    (["sweep", "--slo", "e2e_p99<=200ms", "--out", "/tmp/kbatch-never-written"],
     "add --consume"),
])
def test_bad_consume_input_is_one_clear_message(args, fragment):
    proc = kbatch(*args, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert fragment in proc.stderr
    assert "Traceback" not in proc.stderr
