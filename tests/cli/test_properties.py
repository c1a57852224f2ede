"""Property-based tests (hypothesis) over command-line options, `-X` values and workload
files: whatever a person types, kbatch exits 0 or 2, never with "Internal error" or a
traceback, and within a bounded time.

Most examples stop at validation: `--json /proc/...` is unwritable, so an input that
passes every check is refused there, before any broker starts (exit 2 either way, and
the checks before it are the ones under test). A few examples run for real on the
embedded broker with a tiny `--messages` and `--duration`.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from producer_core.config import MODES, SETTINGS
from tests.cli.sweep_support import run_kbatch

UNWRITABLE = ["--json", "/proc/kbatch-property.json"]
QUICK = settings(max_examples=60, deadline=timedelta(seconds=15), derandomize=True,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

NUMBER_TEXT = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.sampled_from(["max", "nan", "inf", "-inf", "-0", "1e308", "1e-308", "0x10", "",
                     " 5 ", "1_000", "10e", "١٢"]),
    st.text(max_size=12),
)
FLAGS = ["--rate", "--duration", "--messages", "--partitions", "--message-size", "--keys",
         "--seed", "--warmup", "--topic", "--brokers", "--rtt-ms", "--jitter-ms", "--mode"]


def assert_clean(outcome, allowed=(0, 2)):
    assert not outcome.timed_out, outcome.describe()
    assert not outcome.internal_error, outcome.describe()
    assert outcome.exit_code in allowed, outcome.describe()


@QUICK
@given(st.dictionaries(st.sampled_from(FLAGS), NUMBER_TEXT, max_size=5),
       st.sampled_from(["produce", "compare-modes"]))
def test_any_option_values_give_exit_2_or_a_clean_refusal(flags, command):
    args = [command, "--no-progress"]
    for flag, value in flags.items():
        args += [flag, value]
    outcome = run_kbatch([*args, *UNWRITABLE], seconds=15)
    assert_clean(outcome, allowed=(2,))
    assert "Producing to" not in outcome.output and "Running mode" not in outcome.output


SETTING_KEYS = st.one_of(st.sampled_from(sorted(SETTINGS)), st.text(max_size=15),
                         st.sampled_from(["bruce.topic.t.max.delay.ms", "bruce.topic..x",
                                          "=", " linger.ms "]))


@QUICK
@given(st.lists(st.tuples(SETTING_KEYS, NUMBER_TEXT), max_size=4), st.sampled_from(MODES))
def test_any_x_values_give_a_clean_refusal(assignments, mode):
    args = ["produce", "--no-progress", "--mode", mode]
    for key, value in assignments:
        args += ["-X", f"{key}={value}"]
    outcome = run_kbatch([*args, *UNWRITABLE], seconds=15)
    assert_clean(outcome, allowed=(2,))


SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(10**20), 10**20),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8))
RATES = st.one_of(
    SCALARS, st.just("max"),
    st.fixed_dictionaries({"constant": SCALARS}), st.fixed_dictionaries({"poisson": SCALARS}),
    st.fixed_dictionaries({"step": st.lists(st.lists(SCALARS, max_size=3), max_size=4)}),
    st.fixed_dictionaries({"ramp": st.dictionaries(st.sampled_from(["from", "to", "over_s"]),
                                                   SCALARS)}),
    st.fixed_dictionaries({"bursts": st.dictionaries(
        st.sampled_from(["rate", "on_s", "off_s"]), SCALARS)}),
)
TOPICS = st.dictionaries(
    st.sampled_from(["name", "partitions", "rate", "keys", "value_size", "headers", "count",
                     "rate_skew", "batching", "rate_limit", "colour"]),
    st.one_of(SCALARS, RATES, st.just("t-{i}"),
              st.fixed_dictionaries({"uniform": SCALARS}),
              st.fixed_dictionaries({"weighted": st.lists(st.lists(SCALARS, max_size=2),
                                                          max_size=3)})),
    max_size=7,
).map(lambda d: {"name": "t", "partitions": 1, "rate": {"constant": 5}, **d})
WORKLOADS = st.one_of(
    st.fixed_dictionaries({"topics": st.lists(TOPICS, max_size=3)},
                          optional={"duration_s": SCALARS, "messages": SCALARS,
                                    "warmup_s": SCALARS, "seed": SCALARS}),
    st.dictionaries(st.text(max_size=6), SCALARS, max_size=3),
)


@QUICK
@given(st.one_of(WORKLOADS.map(lambda d: yaml.safe_dump(d, allow_unicode=True)),
                 st.text(max_size=200)))
def test_any_workload_file_gives_a_clean_refusal(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("wl") / "w.yaml"
    path.write_text(text, encoding="utf-8")
    outcome = run_kbatch(["produce", "--no-progress", "--workload", str(path), *UNWRITABLE],
                         seconds=15)
    assert_clean(outcome, allowed=(2,))


@pytest.mark.broker
@settings(max_examples=4, deadline=timedelta(seconds=60), derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(messages=st.integers(1, 20), duration=st.floats(0.05, 0.5),
       rate=st.one_of(st.just("max"), st.floats(1, 5000).map(repr)),
       mode=st.sampled_from(["partition", "broker", "none", "java"]),
       keys=st.integers(0, 50))
def test_valid_tiny_runs_finish_with_exit_0(messages, duration, rate, mode, keys):
    outcome = run_kbatch(["produce", "--no-progress", "--messages", str(messages),
                          "--duration", repr(duration), "--rate", rate, "--mode", mode,
                          "--keys", str(keys)], seconds=60)
    assert_clean(outcome, allowed=(0,))
