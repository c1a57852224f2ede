"""The bad-input sweep's cases from issue 49 (the surfaces added since issue 35): each is
refused with one clear error and exit 2 before any broker starts, never "Internal error",
never a traceback, never a hang. Each failed on main before the issue."""

from __future__ import annotations

import pytest

from tests.cli.sweep_support import run_kbatch

P5 = ["produce", "--no-progress", "--messages", "5"]
CAP = ["capacity", "--no-progress", "--slo", "p99<=100ms"]
PERF = ["perf-test", "--topic", "t", "--num-records", "5", "--throughput", "10",
        "--record-size", "10"]
EXT = ["--bootstrap-servers", "127.0.0.1:1"]

CASES_49: list[tuple[str, list[str]]] = [
    # -- output paths proven writable before the search / run (as produce does)
    ("capacity-json-in-proc", [*CAP, "--json", "/proc/x/kbatch-cap.json"]),
    ("capacity-out-in-proc", [*CAP, "--out", "/proc/kbatch-cap"]),
    ("capacity-json-is-dir", [*CAP, "--json", "/tmp"]),
    ("perf-test-json-in-proc", [*PERF, "--json", "/proc/x/kbatch-perf.json"]),
    # -- consumer properties checked by librdkafka itself, before any broker starts
    ("consumer-config-unknown", [*P5, "--consume", "--consumer-config", "no.such.prop=1"]),
    ("consumer-config-bad-value", [*P5, "--consume", "--consumer-config",
                                   "fetch.wait.max.ms=abc"]),
    ("consumer-config-bad-enum", [*P5, "--consume", "--consumer-config",
                                  "isolation.level=sometimes"]),
    # -- one value per option: two different ones refused, not the last kept
    ("capacity-slo-twice", [*CAP, "--slo", "p99<=20ms"]),
    ("sweep-minimize-twice", ["sweep", "--modes", "partition", "--minimize", "requests",
                              "--minimize", "broker-cpu", "--out", "{tmp}/sw"]),
    # -- NaN and infinity at every float option
    ("report-interval-nan", [*P5, "--report-interval", "nan"]),
    ("report-interval-inf", [*P5, "--report-interval", "inf"]),
    ("compressibility-nan", [*P5, "--compressibility", "nan"]),
    ("capacity-precision-nan", [*CAP, "--precision", "nan"]),
    ("capacity-report-interval-inf", [*CAP, "--report-interval", "inf"]),
    ("lab-down-timeout-nan", ["lab", "down", "--timeout", "nan"]),
    ("lab-down-timeout-inf", ["lab", "down", "--timeout", "inf"]),
    ("lab-restart-timeout-nan", ["lab", "restart", "1", "--timeout", "nan"]),
    ("lab-up-jitter-inf", ["lab", "up", "--jitter-ms", "inf"]),
    # -- faults that cannot apply: refused before any broker starts
    ("sweep-fault-embedded", ["sweep", "--modes", "partition", "--windows", "0,5",
                              "--duration", "0.5", "--fault", "kill=node:1 at=0.2s",
                              "--out", "{tmp}/swf"]),
    ("compare-fault-embedded", ["compare-modes", "--modes", "partition,broker",
                                "--duration", "0.5", "--fault", "kill=node:1"]),
    ("fault-no-such-partition", [*P5[:2], "--broker", "kafka", "--partitions", "4",
                                 "--fault", "kill=leader:9"]),
    ("fault-after-the-end", [*P5[:2], "--broker", "kafka", "--duration", "5", "--fault",
                             "kill=node:1 at=20s"]),
    ("compare-fault-after-the-end", ["compare-modes", "--modes", "partition,broker",
                                     "--broker", "kafka", "--duration", "5", "--fault",
                                     "kill=node:1 at=10s"]),
    # -- --broker-metrics URLs checked before any broker starts
    ("metrics-port-99999", [*P5, *EXT, "--broker-metrics", "http://127.0.0.1:99999/metrics"]),
    ("metrics-port-0", [*P5, *EXT, "--broker-metrics", "http://127.0.0.1:0/metrics"]),
    ("metrics-ipv6-open-bracket", [*P5, *EXT, "--broker-metrics", "http://[::1/metrics"]),
    ("metrics-ipv6-unbracketed", [*P5, *EXT, "--broker-metrics", "http://fe80::1/metrics"]),
    ("metrics-same-url-twice", [*P5, *EXT, "--broker-metrics",
                                "http://127.0.0.1:7071/m,http://127.0.0.1:7071/m"]),
]


@pytest.mark.parametrize("args", [a for _, a in CASES_49], ids=[n for n, _ in CASES_49])
def test_issue_49_bad_input_is_refused_before_any_work(args, tmp_path):
    outcome = run_kbatch([a.replace("{tmp}", str(tmp_path)) for a in args], seconds=20)
    assert not outcome.timed_out, outcome.describe()
    assert not outcome.internal_error, outcome.describe()
    assert outcome.exit_code == 2, outcome.describe()
    assert "Error" in outcome.output, outcome.describe()
    for started in ("Producing to", "Searching the highest rate", "kbatch perf-test: mode"):
        assert started not in outcome.output, "refused only after the work started"
    assert outcome.seconds < 10, outcome.describe()


def test_a_sweep_whose_cells_could_not_run_does_not_exit_0(tmp_path):
    """Every cell raised (here: no broker at the address); the sweep wrote its results and
    exited 0 (issue 49). A run that raised is a runtime failure: exit 1, as produce."""
    outcome = run_kbatch(["sweep", "--modes", "partition", "--windows", "0,5", "--duration",
                          "0.3", "--rate", "100", "--bootstrap-servers", "127.0.0.1:1",
                          "--no-progress", "--out", str(tmp_path / "sw")], seconds=60)
    assert not outcome.internal_error, outcome.describe()
    assert outcome.exit_code == 1, outcome.describe()
    assert "2 cell(s) could not run" in " ".join(outcome.output.split())
    assert (tmp_path / "sw" / "results.json").is_file()
