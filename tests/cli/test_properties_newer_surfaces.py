"""Property-based bad input for the newer surfaces (issue 35): properties files, results
read by report/gate, gates rules, lab state files. Whatever the bytes, kbatch answers with
its documented error (exit 2, or LabStateError for a lab state), never a traceback, and
within a bounded time; and no lab state file makes a pid below 2 look signallable."""

from __future__ import annotations

import json
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from producer_core.brokers.lab.state import LabStateError, lab_process_alive, read_state
from producer_core.results.results_io import RunRecorder, add_facts, write_results_dir
from producer_core.results.run_facts import run_document
from tests.cli.sweep_support import run_kbatch
from tests.results_fakes import fake_results

QUICK = settings(max_examples=40, deadline=timedelta(seconds=15), derandomize=True,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                        HealthCheck.function_scoped_fixture])
UNWRITABLE = ["--json", "/proc/kbatch-property.json"]

JSON_NUMBER = st.one_of(
    st.integers(min_value=-(10**400), max_value=10**400).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["1e999", "-1e999", "1e308", "NaN", "Infinity", "-Infinity", "9" * 4000,
                     "0.0", "-0", "1E+400"]),
)


def clean(outcome, allowed=(0, 1, 2)):
    assert not outcome.timed_out, outcome.describe()
    assert not outcome.internal_error, outcome.describe()
    assert outcome.exit_code in allowed, outcome.describe()
    assert outcome.seconds < 10, outcome.describe()


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("prop35")
    run = RunRecorder(lambda: fake_results("partition"))()
    document = run_document(run, files=True)
    add_facts(document, embedded=False)
    write_results_dir(root / "run", document, [run])
    (root / "ok.toml").write_text('[[rule]]\ncheck = "partition.requests_sent >= 1"\n')
    return root


@QUICK
@given(data=st.binary(max_size=2000))
def test_any_properties_file_is_refused_or_accepted_cleanly(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("props") / "client.properties"
    path.write_bytes(data)
    outcome = run_kbatch(["produce", "--no-progress", "--messages", "5", "--command-config",
                          str(path), *UNWRITABLE], seconds=20)
    clean(outcome, allowed=(2,))


@QUICK
@given(field=st.sampled_from([("requests_sent",), ("latency", "p99_ms"), ("duration_s",),
                              ("messages", "acknowledged"), ("mb_per_s",)]),
       number=JSON_NUMBER)
def test_any_number_in_results_is_read_or_refused_by_gate(saved, tmp_path_factory, field,
                                                          number):
    run = tmp_path_factory.mktemp("res") / "run"
    shutil.copytree(saved / "run", run)
    path = run / "results.json"
    data = json.loads(path.read_text())
    node = data
    for key in field[:-1]:
        node = node[key]
    node[field[-1]] = 987654321
    path.write_text(json.dumps(data).replace("987654321", number, 1))
    outcome = run_kbatch(["gate", str(run), "--gates", str(saved / "ok.toml")], seconds=20)
    clean(outcome, allowed=(0, 1, 2))
    absurd = number.lstrip("-").replace("+", "").upper() in ("1E999", "1E400", "NAN",
                                                              "INFINITY") or (
        number.lstrip("-").isdigit() and len(number.lstrip("-")) > 19)
    if absurd:
        assert outcome.exit_code == 2, outcome.describe()


@QUICK
@given(name=st.one_of(st.text(max_size=300),
                      st.lists(st.sampled_from(["a", "p99_ms", "x", "settings", "linger",
                                                "ms", "0"]), max_size=3000).map(".".join)))
def test_any_gates_metric_name_is_answered_quickly(saved, tmp_path_factory, name):
    gates = tmp_path_factory.mktemp("gates") / "g.toml"
    gates.write_text("[[rule]]\ncheck = " + json.dumps(f"partition.{name} >= 1") + "\n")
    outcome = run_kbatch(["gate", str(saved / "run"), "--gates", str(gates)], seconds=20)
    clean(outcome, allowed=(0, 1, 2))


LAB_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(min_value=-2**70, max_value=2**70),
              st.floats(), st.text(max_size=10)),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.text(max_size=10), inner, max_size=4)),
    max_leaves=20)


@QUICK
@given(document=st.fixed_dictionaries(
    {"pid": st.one_of(st.integers(min_value=-5, max_value=2), LAB_VALUES)},
    optional={"pid_start": LAB_VALUES, "bootstrap": LAB_VALUES, "nodes": LAB_VALUES,
              "broker": LAB_VALUES, "rtt_ms": LAB_VALUES}))
def test_no_lab_state_document_makes_a_low_pid_signallable(tmp_path_factory, document):
    path = tmp_path_factory.mktemp("lab") / "lab.json"
    path.write_text(json.dumps(document))
    path.chmod(0o600)
    try:
        state = read_state(path)
    except LabStateError as exc:
        assert str(path) in str(exc) and "rm -f" in str(exc)
        return
    assert state is not None and isinstance(state["pid"], int) and state["pid"] >= 2
    assert not lab_process_alive(state)  # no process of these pids was started by a lab
