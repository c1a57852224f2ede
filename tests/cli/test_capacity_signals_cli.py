"""SIGINT and SIGTERM during `kbatch capacity` (issue 49): the search stops, the probes done
so far are written (the cut-short one too, marked incomplete), and kbatch exits 130 / 143
like every other command, not 2 ("Interrupted: ..." as a usage error)."""

from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest

from tests.cli.test_produce_cli import KBATCH, ROOT

pytestmark = pytest.mark.broker


@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_during_capacity_keeps_the_probes_and_exits_128_plus_n(tmp_path, sig, code):
    out = tmp_path / "cap.json"
    proc = subprocess.Popen(
        [*KBATCH, "capacity", "--slo", "p99<=5s", "--partitions", "2", "--start-rate", "100",
         "--max-rate", "100000", "--duration", "2", "--warmup", "0.2", "--max-probes", "20",
         "--no-progress", "--json", str(out)],
        cwd=ROOT, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # the first probe's line on stderr says the search is under way
        assert proc.stderr is not None
        began, lines = time.monotonic(), []
        while time.monotonic() - began < 120:
            line = proc.stderr.readline()
            lines.append(line)
            if "probe 1" in line or not line:
                break
        assert any("probe 1" in line for line in lines), "".join(lines)
        time.sleep(0.5)  # inside the second probe
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stderr = "".join(lines) + stderr
    assert proc.returncode == code, stderr
    assert "Traceback" not in stderr and "Internal error" not in stderr
    assert f"Interrupted by {sig.name}" in stderr and "partial results written" in stderr
    document = json.loads(out.read_text())
    assert document["kind"] == "capacity" and len(document["runs"]) >= 2
    assert document["runs"][-1]["complete"] is False
    assert document["capacity"]["modes"]["partition"]["stopped"] == f"interrupted by {sig.name}"
