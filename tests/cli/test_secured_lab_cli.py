"""`kbatch lab up --broker kafka --security SASL_SSL`: a secured Kafka and a ready
client.properties that `--command-config` takes, gone again after `lab down`."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from producer_core.config import build_settings
from producer_core.properties import load_properties
from tests.cli.test_client_properties_cli import one_paragraph_error
from tests.cli.test_produce_cli import KBATCH, ROOT, kbatch
from tests.kafka_fixtures import skip_kafka_reason
from tests.readback import read_all


@pytest.mark.skipif(skip_kafka_reason() is not None, reason=skip_kafka_reason() or "")
def test_secured_lab_serves_both_engines_with_its_client_properties(tmp_path):
    state = tmp_path / "lab.json"
    env = {**os.environ, "KBATCH_LAB_STATE": str(state)}
    up = subprocess.Popen([*KBATCH, "lab", "up", "--broker", "kafka", "--brokers", "1",
                           "--security", "SASL_SSL"], cwd=ROOT, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert up.stdout is not None
        bootstrap = up.stdout.readline().strip()
        assert bootstrap, up.stderr.read() if up.stderr else ""
        document = json.loads(state.read_text())
        assert document["security"] == "SASL_SSL" and document["bootstrap"] == bootstrap
        client = Path(document["client_properties"])
        assert client.parent.parent == tmp_path  # next to the lab state
        assert stat.S_IMODE(client.stat().st_mode) == 0o600
        props = {p.key: p.value for p in load_properties(client)}
        assert props["bootstrap.servers"] == bootstrap
        assert props["security.protocol"] == "SASL_SSL"
        assert props["sasl.mechanism"] == "SCRAM-SHA-512"
        password = props["sasl.jaas.config"].split('password="')[1].split('"')[0]

        out = tmp_path / "cmp.json"
        run = subprocess.run(
            [*KBATCH, "compare-modes", "--modes", "librdkafka,partition", "--command-config",
             str(client), "--topic", "lab-secured", "--partitions", "3", "--messages", "300",
             "--rate", "2000", "--json", str(out), "--no-progress"],
            capture_output=True, text=True, cwd=ROOT, env=env, timeout=180)
        assert run.returncode == 0, run.stderr
        assert password not in run.stdout + run.stderr + out.read_text()
        runs = json.loads(out.read_text())["runs"]
        assert [r["messages"]["acknowledged"] for r in runs] == [300, 300]
        settings = build_settings([(p.key, p.value) for p in load_properties(client)
                                   if p.key != "bootstrap.servers"])
        for suffix in ("-librdkafka-1", "-partition-1"):
            found = asyncio.run(read_all(bootstrap, "lab-secured" + suffix, 3, 300, 60,
                                         **settings.security.aiokafka_kwargs()))
            assert sorted(i for records in found.values() for _, i, _ in records) == list(
                range(300))

        down = subprocess.run([*KBATCH, "lab", "down"], capture_output=True, text=True,
                              cwd=ROOT, env=env, timeout=60)
        assert down.returncode == 0, down.stderr
        _, stderr = up.communicate(timeout=60)
    finally:
        if up.poll() is None:
            up.kill()
            up.wait()
    assert up.returncode == 0 and "Traceback" not in stderr
    assert password not in stderr
    assert not client.parent.exists(), "the lab's keys and password outlived `lab down`"


@pytest.mark.parametrize("args, message", [
    (["--security", "SSL"], "needs --broker kafka"),
    (["--broker", "kafka", "--brokers", "1", "--security", "SASL_SSL", "--rtt-ms", "5"],
     "cannot be combined with --rtt-ms"),
])
def test_secured_lab_usage_errors(args, message):
    error = one_paragraph_error(kbatch("lab", "up", *args), 2)
    assert message in error
