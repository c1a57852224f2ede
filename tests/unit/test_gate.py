"""Gate rules: parsing, metric names, verdicts and exit codes (pure, no broker)."""

from __future__ import annotations

import json
import statistics

import pytest

from producer_core.analysis.gate import (
    EXIT_ERROR,
    EXIT_FAIL,
    EXIT_PASS,
    GateFileError,
    Limit,
    MetricSource,
    evaluate,
    exit_code,
    format_number,
    parse_check,
    parse_gates,
)
from tests.results_fakes import fake_comparison, fake_results


@pytest.fixture(scope="module")
def comparison() -> dict:
    document, _ = fake_comparison(repeat=3)
    return json.loads(json.dumps(document))


def gates(*checks: str, **top: str):
    body = "".join(f'{k} = "{v}"\n' for k, v in top.items())
    body += "".join(f'[[rule]]\ncheck = "{c}"\n' for c in checks)
    return parse_gates(body)


def verdicts_for(comparison, *checks, baseline=None):
    source = MetricSource.from_documents([comparison])
    base = MetricSource.from_documents([baseline]) if baseline is not None else None
    return evaluate(gates(*checks), source, base)


@pytest.mark.parametrize(("text", "expected"), [
    ("broker.p99_ms <= 600", ("broker.p99_ms", "<=", Limit(600.0))),
    ("broker.msgs_per_req>=1000", ("broker.msgs_per_req", ">=", Limit(1000.0))),
    ("broker.requests_sent <= 0.05 * partition.requests_sent",
     ("broker.requests_sent", "<=", Limit(0.05, "partition.requests_sent"))),
    ("broker.requests_sent < partition.requests_sent * 0.5",
     ("broker.requests_sent", "<", Limit(0.5, "partition.requests_sent"))),
    ("broker.p99_ms <= 1.1 * baseline.broker.p99_ms",
     ("broker.p99_ms", "<=", Limit(1.1, "baseline.broker.p99_ms"))),
    ("partition.failed == 0", ("partition.failed", "==", Limit(0.0))),
    ("broker.requests_by_broker.1 != -2.5e1", ("broker.requests_by_broker.1", "!=", Limit(-25.0))),
])
def test_parse_check(text, expected):
    assert parse_check(text) == expected


@pytest.mark.parametrize("text", [
    "broker.p99_ms", "broker.p99_ms =< 600", "600 >= broker.p99_ms", "broker.p99_ms <= ",
    "broker.p99_ms <= 2 * 3", "broker.p99_ms <= a + b", "broker..p99 <= 1",
])
def test_malformed_checks_are_refused(text):
    with pytest.raises(GateFileError, match="METRIC OP LIMIT"):
        parse_check(text)


@pytest.mark.parametrize(("text", "fragment"), [
    ("[[rule]\ncheck = 'x'", "not valid TOML"),
    ("", "no [[rule]] tables"),
    ("[rule]\ncheck = 'broker.p99_ms <= 1'\n", "[[rule]] tables (an array)"),
    ("rules = 1\n[[rule]]\ncheck = 'broker.p99_ms <= 1'\n", "unknown top-level key(s) rules"),
    ("[[rule]]\ncheck = 'broker.p99_ms <= 1'\nlimit = 3\n", "rule 1 has unknown key(s) limit"),
    ("[[rule]]\ncheck = 'broker.p99_ms <= 1'\n[[rule]]\ncheck = 5\n", "rule 2: check must be"),
    ("[[rule]]\nwhy = 'x'\n", "rule 1 needs check"),
    ("[[rule]]\nmetric = 'broker.p99_ms'\n", "exactly one of max_increase"),
    ("[[rule]]\nmetric = 'broker.p99_ms'\nmax_increase = 10\n", "percentage string"),
    ("[[rule]]\nmetric = 'broker.p99_ms'\nmax_increase = '10%'\ncheck = 'a.b <= 1'\n",
     "both check and metric"),
    ("[[rule]]\ncheck = 'broker.p99_ms < fast'\n[[rule]]\ncheck = 'x <'\n", "rule 2: check"),
])
def test_malformed_gates_files_name_the_problem(text, fragment):
    with pytest.raises(GateFileError) as info:
        parse_gates(text)
    assert fragment in str(info.value)


def test_regression_rules_expand_against_the_baseline(tmp_path):
    parsed = parse_gates(
        'baseline = "base/results.json"\n'
        '[[rule]]\nmetric = "broker.p99_ms"\nmax_increase = "10%"\nwhy = "latency"\n'
        '[[rule]]\nmetric = "broker.msgs_per_req"\nmax_decrease = "5%"\n', base_dir=tmp_path)
    assert [r.check for r in parsed.rules] == [
        "broker.p99_ms <= 1.1 * baseline.broker.p99_ms",
        "broker.msgs_per_req >= 0.95 * baseline.broker.msgs_per_req",
    ]
    assert parsed.rules[0].why == "latency"
    assert parsed.baseline == tmp_path / "base/results.json"


def test_summary_metrics_are_the_comparison_medians(comparison):
    source = MetricSource.from_documents([comparison])
    for mode in ("partition", "broker"):
        for name, cell in comparison["summary"][mode].items():
            assert source.value(f"{mode}.{name}") == cell["median"]
            assert source.value(f"{mode}.{name}.max") == cell["max"]
            assert source.value(f"{mode}.{name}.min") == cell["min"]


def test_dotted_paths_take_the_median_over_rounds(comparison):
    source = MetricSource.from_documents([comparison])
    runs = [r for r in comparison["runs"] if r["mode"] == "broker"]
    assert source.value("broker.latency.p999_ms") == statistics.median(
        r["latency"]["p999_ms"] for r in runs)
    assert source.value("broker.collector.partitions_per_send.mean") == 8.0
    assert source.value("broker.settings.linger.ms") == 5  # keys with dots
    assert source.value("broker.requests_by_broker.1") == statistics.median(
        r["requests_by_broker"]["1"] for r in runs)


def test_single_run_uses_its_own_mode_and_unqualified_names():
    run = json.loads(json.dumps(fake_results("broker").to_dict()))
    source = MetricSource.from_documents([run])
    assert source.value("broker.p99_ms") == run["latency"]["p99_ms"]
    assert source.value("p99_ms") == run["latency"]["p99_ms"]
    assert source.value("rtt.max_ms") == run["rtt"]["max_ms"]


def test_passing_failing_and_relative_verdicts(comparison):
    partition = comparison["summary"]["partition"]
    verdicts = verdicts_for(
        comparison,
        "broker.requests_sent <= 0.1 * partition.requests_sent",  # 20 vs 400: holds
        "broker.msgs_per_req >= 1000",  # 100: fails
        f"partition.p99_ms <= {partition['p99_ms']['median']}",  # equal: holds
        "partition.failed == 0",
    )
    assert [v.status for v in verdicts] == ["pass", "FAIL", "pass", "pass"]
    assert exit_code(verdicts) == EXIT_FAIL
    relative, failing = verdicts[0], verdicts[1]
    assert relative.measured == 20 and relative.limit == pytest.approx(40.0)
    assert relative.limit_text() == "<= 40 = 0.1 × partition.requests_sent (400)"
    assert failing.reason() == "rule 2 fails: broker.msgs_per_req = 100 is not >= 1,000"
    assert exit_code(verdicts[:1] + verdicts[2:]) == EXIT_PASS


def test_baseline_regression(comparison):
    worse = json.loads(json.dumps(comparison))
    for mode in ("partition", "broker"):
        worse["summary"][mode]["p99_ms"]["median"] *= 1.2
    for run in worse["runs"]:
        run["latency"]["p99_ms"] *= 1.2
    source = MetricSource.from_documents([worse])
    rules = parse_gates('[[rule]]\nmetric = "broker.p99_ms"\nmax_increase = "10%"\n'
                        '[[rule]]\nmetric = "broker.p99_ms"\nmax_increase = "25%"\n')
    verdicts = evaluate(rules, source, MetricSource.from_documents([comparison], "baseline"))
    assert [v.status for v in verdicts] == ["FAIL", "pass"]
    assert "baseline.broker.p99_ms" in verdicts[0].reason()


@pytest.mark.parametrize(("check", "fragment"), [
    ("broker.p99 <= 5", "unknown metric 'broker.p99'"),
    ("broker.latency.p999 <= 5", "unknown metric 'broker.latency.p999'"),
    ("broker.p99_ms.p50 <= 5", "unknown metric"),
    ("none.p99_ms <= 5", "no run of mode 'none' (modes present: partition, broker)"),
    ("partition.collector.sends >= 1", "missing metric 'partition.collector.sends'"),
    ("broker.workload.topic == 1", "is not a number"),
    ("p99_ms <= 5", "write it as partition.p99_ms"),
    ("broker.p99_ms <= 1.1 * baseline.broker.p99_ms", "no baseline results were given"),
])
def test_unknown_and_missing_metrics_are_errors_not_passes(comparison, check, fragment):
    [verdict] = verdicts_for(comparison, check)
    assert verdict.status == "ERROR" and verdict.passed is None
    assert fragment in verdict.error
    assert exit_code([verdict]) == EXIT_ERROR


def test_an_error_outranks_a_failure(comparison):
    verdicts = verdicts_for(comparison, "broker.msgs_per_req >= 1000", "broker.nope <= 1")
    assert [v.status for v in verdicts] == ["FAIL", "ERROR"]
    assert exit_code(verdicts) == EXIT_ERROR


@pytest.mark.parametrize(("value", "text"), [
    (25.0, "25"), (1324.0, "1,324"), (0.1, "0.1"), (220.927, "220.927"), (1 / 3, "0.333"),
    (0.0, "0"), (-2.5, "-2.5"),
])
def test_format_number(value, text):
    assert format_number(value) == text


def test_a_null_metric_is_missing_not_zero():
    """A capacity search that sustained no rate stamps null; a gate must not pass on it as
    0 (issue 49): the documented exit 2 for a missing metric."""
    from producer_core.analysis.gate import MetricSource, evaluate, exit_code, parse_gates
    from producer_core.results.results_io import RunRecorder
    from producer_core.results.run_facts import run_document
    from tests.results_fakes import fake_results

    run = run_document(RunRecorder(lambda: fake_results("partition"))(),
                       max_sustainable_msgs_per_s=None)
    gates = parse_gates('[[rule]]\ncheck = "partition.max_sustainable_msgs_per_s <= 1000"\n')
    verdicts = evaluate(gates, MetricSource([run]))
    assert exit_code(verdicts) == 2
    assert "missing metric" in verdicts[0].error and "holds null" in verdicts[0].error


def test_a_capacity_search_without_an_answer_gates_as_missing():
    """`kbatch capacity` stamped a search without a sustained rate as 0.0 into every probe
    run, so `MODE.max_sustainable_msgs_per_s <= X` passed (issue 49); it stamps null."""
    from cli.steps.capacity import capacity_document
    from producer_core.analysis.capacity import Capacity, Criteria, SearchPlan
    from producer_core.analysis.gate import MetricSource, evaluate, exit_code, parse_gates
    from producer_core.results.run_facts import RunFacts
    from tests.results_fakes import fake_results

    document = capacity_document(
        {"partition": Capacity(None, (None, 100.0))}, Criteria("p99_ms", 5.0),
        SearchPlan(), [(1, fake_results("partition"))], RunFacts("tansu", True))
    assert document["runs"][0]["max_sustainable_msgs_per_s"] is None
    gates = parse_gates('[[rule]]\ncheck = "partition.max_sustainable_msgs_per_s <= 1000"\n')
    assert exit_code(evaluate(gates, MetricSource.from_documents([document]))) == 2


VERSIONED = ("librdkafka", "librdkafka@2.10.0", "franz-go@v1.18.0",
             "librdkafka@build-0123456789ab", "kafka-java")


@pytest.mark.parametrize(("text", "lhs"), [
    ("kafka-java.p99_ms <= 5", "kafka-java.p99_ms"),
    ("librdkafka@2.10.0.p99_ms <= 5", "librdkafka@2.10.0.p99_ms"),
    ("franz-go@v1.18.0.requests_sent.max <= 5", "franz-go@v1.18.0.requests_sent.max"),
    ("librdkafka@build-0123456789ab.latency.p999_ms <= 5",
     "librdkafka@build-0123456789ab.latency.p999_ms"),
    ("baseline.kafka-java@4.0.0-rc1.p99_ms <= 5", "baseline.kafka-java@4.0.0-rc1.p99_ms"),
])
def test_mode_labels_with_versions_and_dashes_parse(text, lhs):
    assert parse_check(text)[0] == lhs


def test_a_version_s_dots_are_the_mode_s_and_each_version_gates_on_its_own_runs():
    document, _ = fake_comparison(VERSIONED)
    comparison = json.loads(json.dumps(document))
    source = MetricSource.from_documents([comparison])
    for mode in VERSIONED:
        assert source.value(f"{mode}.requests_sent") == (
            comparison["summary"][mode]["requests_sent"]["median"])
        assert source.value(f"{mode}.requests_sent.max") == (
            comparison["summary"][mode]["requests_sent"]["max"])
        run = next(r for r in comparison["runs"] if r["mode"] == mode)
        assert source.value(f"{mode}.latency.p999_ms") == run["latency"]["p999_ms"]
    verdicts = verdicts_for(
        comparison, "librdkafka@2.10.0.requests_sent <= 1e9 * librdkafka.requests_sent",
        "franz-go@v1.18.0.p99_ms >= 0", "librdkafka@build-0123456789ab.failed == 0",
        "librdkafka@2.12.0.p99_ms <= 5")
    assert [v.passed for v in verdicts[:3]] == [True, True, True]
    assert "no run of mode 'librdkafka@2.12.0'" in verdicts[3].error
    assert exit_code(verdicts) == EXIT_ERROR


def test_a_baseline_of_versioned_modes_is_read_the_same_way():
    document, _ = fake_comparison(VERSIONED)
    comparison = json.loads(json.dumps(document))
    verdicts = verdicts_for(comparison,
                            "franz-go@v1.18.0.p99_ms <= 1.0 * baseline.franz-go@v1.18.0.p99_ms",
                            baseline=comparison)
    assert verdicts[0].passed is True and verdicts[0].error is None
