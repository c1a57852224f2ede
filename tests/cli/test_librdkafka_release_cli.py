"""``librdkafka@VERSION`` (issue 44) as a user meets it: the first use shows the wheel's
install as it happens (pip's lines and the bytes downloaded), and a signal during a run
keeps and prints the partial results as an in-process run does, whether it reaches only
kbatch (SIGTERM from a supervisor) or the whole process group (Ctrl-C on a terminal, which
the out-of-process run's child must leave to kbatch)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest

from tests.cli.test_produce_cli import KBATCH, ROOT
from tests.cli.test_signals_cli import consistent, wait_for_broker

RELEASE = "2.12.0"


def test_the_first_install_shows_pips_progress_live(tmp_path) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "PIP_NO_CACHE_DIR": "1"}
    proc = subprocess.run([*KBATCH, "produce", "--mode", f"librdkafka@{RELEASE}",
                           "--bootstrap-servers", "127.0.0.1:1", "--messages", "1",
                           "--no-progress"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)  # (no broker there: the install comes first)
    if "pip could not install" in proc.stderr:
        pytest.skip("the machine's Python package index is not reachable")
    lines = proc.stderr.splitlines()
    order = [next(i for i, line in enumerate(lines) if line.startswith(start)) for start in (
        f"Fetching confluent-kafka {RELEASE}", "Collecting confluent-kafka==",
        "Downloading confluent_kafka-", "  downloaded ", "Successfully installed",
        f"confluent-kafka {RELEASE} cached in")]
    assert order == sorted(order), proc.stderr
    done = next(line for line in lines if line.startswith("  downloaded "))
    size = done.split()[1]
    assert float(size) > 1 and f"of {size} MB" in done  # the whole wheel, as pip said
    assert (tmp_path / "cache" / "kbatch" / f"confluent-kafka-{RELEASE}" / "confluent_kafka"
            ).is_dir()


@pytest.mark.broker
@pytest.mark.parametrize(("sig", "code", "group"), [(signal.SIGINT, 130, True),
                                                    (signal.SIGTERM, 143, False)])
def test_a_signal_keeps_and_prints_the_partial_results(tmp_path, sig, code, group) -> None:
    out = tmp_path / "run.json"
    proc = subprocess.Popen([*KBATCH, "produce", "--mode", f"librdkafka@{RELEASE}",
                             "--partitions", "4", "--rate", "500", "--duration", "60",
                             "--no-progress", "--json", str(out)], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        wait_for_broker(proc)
        time.sleep(6)  # the child interpreter starts, then produces
        sent = time.monotonic()
        if group:  # as a terminal's Ctrl-C: every process of the group
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if "pip could not install" in stderr:
        pytest.skip("the machine's Python package index is not reachable")
    assert proc.returncode == code, stderr
    assert "Traceback" not in stderr and took < 15
    assert f"Interrupted by {sig.name}" in stderr and "partial results written" in stderr
    run = json.loads(out.read_text())
    assert run["mode"] == f"librdkafka@{RELEASE}" and run["complete"] is False
    assert run["librdkafka"]["version"] == RELEASE
    consistent(run)
    assert f"mode librdkafka@{RELEASE}" in stdout  # the partial results' table
