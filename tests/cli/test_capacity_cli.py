"""`kbatch capacity` end to end on a real broker: a rate per mode, the search's probes in
the JSON, the answer as a gate metric, the chart."""

from __future__ import annotations

import json

import pytest

from producer_core.analysis.capacity import Criteria, judge
from tests.cli.test_produce_cli import kbatch


@pytest.mark.broker
def test_capacity_prints_a_rate_per_mode_and_gates_on_it(tansu_broker, tmp_path):
    out = tmp_path / "cap.json"
    proc = kbatch("capacity", "--modes", "partition,broker", "--slo", "p99<=2s",
                  "--bootstrap-servers", tansu_broker.bootstrap, "--partitions", "4",
                  "--start-rate", "100", "--max-rate", "200", "--duration", "1",
                  "--warmup", "0.2", "--repeats", "1", "--max-probes", "4",
                  "--max-lag-ms", "1000",
                  "--report-interval", "0", "--no-progress", "--json", str(out),
                  "--out", str(tmp_path / "dir"), timeout=300)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["kind"] == "capacity" and doc["modes"] == ["partition", "broker"]
    criteria = Criteria("p99_ms", 2000.0, slo_text="p99<=2s", max_lag_ms=1000.0)
    for mode in ("partition", "broker"):
        found = doc["capacity"]["modes"][mode]
        runs = [r for r in doc["runs"] if r["mode"] == mode]
        assert [r["workload"]["rate"] for r in runs] == [p["rate"] for p in found["probes"]]
        assert found["probes"][0]["rate"] == 100 and 2 <= len(runs) <= 4
        for probe, run in zip(found["probes"], runs, strict=True):
            assert run["messages"]["acknowledged"] > 0
            assert judge(run, probe["rate"], criteria) == (probe["ok"], probe["reason"])
        value = found["max_sustainable_msgs_per_s"]
        # the answer is a rate that passed and was never refuted by a later probe
        passed = [p["rate"] for p in found["probes"] if p["ok"]]
        assert value is None or value in passed
        assert f"{mode}: max_sustainable_msgs_per_s " \
            f"{'none' if value is None else f'{value:.0f}'}" in proc.stdout
        assert f"[{mode}] probe 1 (up): 100 msg/s " in proc.stderr
        assert all(r["max_sustainable_msgs_per_s"] == value for r in runs)
    assert (tmp_path / "dir" / "capacity.png").stat().st_size > 1000

    gates = tmp_path / "gates.toml"
    gates.write_text('[[rule]]\ncheck = "partition.max_sustainable_msgs_per_s >= 0"\n'
                     '[[rule]]\ncheck = "broker.max_sustainable_msgs_per_s >= 1000"\n')
    gate = kbatch("gate", str(out), "--gates", str(gates))
    # the first holds, the second cannot (the search stopped at --max-rate 200)
    assert gate.returncode == 1, gate.stdout + gate.stderr
    assert "partition.max_sustainable_msgs_per_s" in gate.stdout


def test_capacity_bad_input_is_exit_2():
    proc = kbatch("capacity", "--slo", "p99 under 5", "--no-progress")
    assert proc.returncode == 2 and "is not a latency objective" in proc.stderr
    proc = kbatch("capacity", "--slo", "p99<=5ms", "--start-rate", "5000", "--max-rate", "10")
    assert proc.returncode == 2 and "--start-rate 5000 is above --max-rate 10" in proc.stderr
