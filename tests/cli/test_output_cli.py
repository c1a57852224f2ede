"""Output choices end to end: `--json -`, `--quiet`, interval lines when not a terminal,
and the payload options (a real process on the embedded broker)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUN = ["produce", "--partitions", "4", "--rate", "2000", "--duration", "2.5",
       "-X", "linger.ms=10"]


def kbatch(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cli.main", *args], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)


@pytest.mark.broker
def test_json_to_stdout_with_interval_lines_on_stderr() -> None:
    proc = kbatch(*RUN, "--report-interval", "1", "--json", "-")
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)  # stdout is the JSON and nothing else
    assert document["messages"]["acknowledged"] == 5000
    rows = document["intervals"]["run"]
    assert document["intervals"]["interval_s"] == 1.0 and len(rows) >= 2
    assert sum(r["acknowledged"] for r in rows) == 5000
    assert sum(r["requests"] for r in rows) == document["requests_sent"]
    # not a terminal: one plain line per interval, then the table, all on stderr
    lines = re.findall(r"^\[partition\] +\d+\.\d-\d+\.\d s  acked/s [\d,]+  MB/s [\d.]+  "
                       r"(ack p50 [\d.,]+ ms  p99 [\d.,]+ ms|no acks|ack latency: warm-up)  "
                       r"sent req/s [\d,]+  "
                       r"msgs/req [\d.]+  failed 0$", proc.stderr, re.M)
    assert len(lines) >= 2
    assert "requests_sent" in proc.stderr and "MB/s payload / on the wire" in proc.stderr
    assert "Results written" not in proc.stderr


@pytest.mark.broker
def test_quiet_prints_nothing_but_keeps_the_results(tmp_path) -> None:
    out = tmp_path / "r.json"
    proc = kbatch(*RUN, "--quiet", "--report-interval", "1", "--json", str(out))
    assert proc.returncode == 0
    assert proc.stdout == "" and proc.stderr == ""
    assert json.loads(out.read_text())["messages"]["acknowledged"] == 5000


def test_quiet_still_prints_errors() -> None:
    proc = kbatch("produce", "--quiet", "--compressibility", "0.5", "--payload-file",
                  "/nonexistent/records.txt", "--duration", "1")
    assert proc.returncode == 2
    assert "--compressibility applies to generated payloads" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_payload_flags_that_do_not_apply_are_refused(tmp_path) -> None:
    records = tmp_path / "records.txt"
    records.write_text("a\n")
    proc = kbatch("produce", "--payload-file", str(records), "--message-size", "500")
    assert proc.returncode == 2 and "--message-size cannot be combined" in proc.stderr
    proc = kbatch("produce", "--payload-delimiter", "|")
    assert proc.returncode == 2 and "only with --payload-file" in proc.stderr


@pytest.mark.broker
def test_payload_file_and_codec_from_the_command_line(tmp_path) -> None:
    records = tmp_path / "records.txt"
    records.write_text("".join(f'{{"user": {i}, "event": "click", "page": "/home"}}\n'
                               for i in range(50)))
    proc = kbatch(*RUN, "--payload-file", str(records), "-X", "compression.type=zstd",
                  "--json", "-", "--report-interval", "0")
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    assert document["workload"]["payload"]["kind"] == "file"
    assert document["compression"]["type"] == "zstd"
    assert document["compression"]["payload_bytes"] > 5000 * 40
    assert "msgs/s" not in proc.stderr  # --report-interval 0: no lines
