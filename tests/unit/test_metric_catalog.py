"""The metric catalog is the one declaration of a run's figures: the schema, the JSON, the
recording dataclasses, the merge of shares and the compare/gate names all agree with it."""

from __future__ import annotations

import dataclasses

import pytest

from producer_core.analysis.compare import SUMMARY_METRICS as COMPARE_SUMMARY
from producer_core.analysis.compare import summarise
from producer_core.analysis.gate import MetricSource, schema_knows
from producer_core.distributed.merge import from_payload, merge_results, to_payload
from producer_core.results.histogram import LatencyHistogram
from producer_core.results.metric_catalog import (
    HISTOGRAMS,
    METRICS,
    SUMMARY,
    TOPIC_METRICS,
    Merge,
    Metric,
)
from producer_core.results.metrics import Results, RunMetrics, Section, TopicMetrics
from producer_core.results.results_io import validate_document
from tests.results_fakes import fake_results, with_broker_cost


def with_e2e(results: Results, millis: int) -> Results:
    """`results` as a run with consumers: an end-to-end latency histogram."""
    results.e2e = LatencyHistogram()
    for value in range(1, millis + 1):
        results.e2e.record_us(value * 1000)
    return results


# RunMetrics / TopicMetrics fields that are not figures of the catalog, and why
NOT_METRICS = {
    "requests": "the per-request log (concatenated by the merge)",
    "requests_by_broker": "a Counter per broker (added by the merge)",
    "failed_reasons": "a Counter per reason", "unknown_reasons": "a Counter per reason",
    "discard_reasons": "a Counter per reason",
    "client_counts": "a client's totals (merged by _merge_client_counts)",
    "topics": "per-topic figures (TOPIC_METRICS)",
    "intervals": "the over-time series (merged by intervals.merge_intervals)",
    "idempotence": "the producer's id and epoch (per share)",
}


def test_every_catalog_path_is_declared_in_the_results_schema():
    missing = [m.path for m in METRICS if not schema_knows(m.path.split("."))]
    missing += [f"histograms.{h.histogram_key}" for h in HISTOGRAMS
                if not schema_knows(["histograms", h.histogram_key])]
    missing += [f"topics.<name>.{t.path}" for t in TOPIC_METRICS
                if not schema_knows(["topics", "any", *t.path.split(".")])]
    assert missing == []


def test_a_path_the_schema_lacks_is_caught():
    # the check above can fail: a made-up figure is not known to the schema
    assert not schema_knows(["messages", "teleported"])
    assert not schema_knows(["topics", "any", "messages", "teleported"])


def test_every_recorded_field_is_in_the_catalog():
    """A counter added to RunMetrics without a catalog line would be dropped by the merge."""
    run_fields = {f.name for f in dataclasses.fields(RunMetrics)}
    sources = {m.source for m in METRICS if m.source is not None}
    assert sources <= run_fields
    assert run_fields - sources == set(NOT_METRICS) & run_fields
    topic_fields = {f.name for f in dataclasses.fields(TopicMetrics)}
    declared = {t.field for t in TOPIC_METRICS}
    assert declared <= topic_fields
    assert topic_fields - declared == {"discard_reasons"}


def test_a_run_document_holds_every_catalog_figure_with_its_type():
    results = with_e2e(with_broker_cost(fake_results("broker")), 25)
    results.metrics.topics["t"] = TopicMetrics(generated=5, acknowledged=5)
    document = results.to_dict()
    validate_document(document)
    for metric in METRICS:
        value = metric.value(document)
        expected = bool if metric.merge is Merge.ALL else (dict if metric.merge is
                                                           Merge.HISTOGRAM else (int, float))
        assert isinstance(value, expected), metric.path
        if metric.merge is Merge.HISTOGRAM:
            assert isinstance(document["histograms"][metric.histogram_key], str)
    topic = document["topics"]["t"]
    for figure in TOPIC_METRICS:
        node = topic
        for key in figure.path.split("."):
            node = node[key]
        assert node is not None, figure.path


def test_summary_names_are_compare_rows_and_gate_names():
    assert list(COMPARE_SUMMARY) == list(SUMMARY)
    runs = [with_e2e(with_broker_cost(fake_results("partition")), 30).to_dict(),
            with_e2e(with_broker_cost(fake_results("broker"), 1.0, 50), 20).to_dict()]
    summary = summarise(runs, ["partition", "broker"])
    source = MetricSource(runs)
    for name, metric in SUMMARY.items():
        assert summary["broker"][name]["median"] == float(metric.value(runs[1]))
        assert source.value(f"broker.{name}") == float(metric.value(runs[1]))


def test_every_optional_summary_figure_says_which_runs_hold_it():
    optional = [metric for metric in SUMMARY.values() if metric.optional]
    assert {m.name for m in optional} >= {"broker_cpu_s", "e2e_p99_ms"}
    assert all(metric.needs for metric in optional)
    assert all(not metric.needs for metric in SUMMARY.values() if not metric.optional)


def _distinct_shares() -> list[Results]:
    """Two shares whose every catalog figure differs, so a merge rule shows."""
    shares = [fake_results("partition", seed=1), fake_results("partition", seed=2)]
    for index, share in enumerate(shares, start=1):
        m = share.metrics
        for metric in METRICS:
            if metric.source and metric.merge in (Merge.SUM, Merge.MAX):
                value = getattr(m, metric.source)
                setattr(m, metric.source, type(value)(10 * index + 1))
        m.complete = index == 1
        topic = TopicMetrics()
        for figure in TOPIC_METRICS:
            if figure.merge is Merge.SUM:
                setattr(topic, figure.field, 100 * index + 3)
        topic.latency.record_seconds([0.001 * index])
        m.topics["t"] = topic
    return shares


@pytest.mark.parametrize("metric", [m for m in METRICS if m.source], ids=lambda m: m.name)
def test_the_merge_applies_each_declared_rule(metric: Metric):
    shares = _distinct_shares()
    merged = merge_results([from_payload(to_payload(s)) for s in shares]).metrics
    values = [getattr(s.metrics, metric.source) for s in shares]
    got = getattr(merged, metric.source)
    if metric.merge is Merge.SUM:
        assert got == sum(values)
    elif metric.merge is Merge.MAX:
        assert got == max(values)
    elif metric.merge is Merge.ALL:
        assert got is False and values == [True, False]
    else:
        assert got.count == sum(v.count for v in values)


def test_the_merge_applies_each_topic_rule():
    shares = _distinct_shares()
    merged = merge_results(shares).metrics.topics["t"]
    for figure in TOPIC_METRICS:
        values = [getattr(s.metrics.topics["t"], figure.field) for s in shares]
        got = getattr(merged, figure.field)
        if figure.merge is Merge.SUM:
            assert got == sum(values) == 306, figure.field
        else:
            assert got.count == sum(v.count for v in values) == 2


def test_typed_sections_land_in_the_json_in_order_and_survive_a_payload():
    results = fake_results("broker")
    results.transactions = {"committed": 2, "aborted": 1}
    results.client = Section("librdkafka", {"batches": 7})
    results.verify = {"ok": True}
    results.runner = {"name": "spark"}
    document = results.to_dict()
    assert list(document)[-5:] == ["collector", "transactions", "librdkafka", "verify",
                                   "runner"]
    assert document["librdkafka"] == {"batches": 7}
    back = from_payload(to_payload(results))
    assert back.to_dict() == document


def test_merged_sections_merge_like_the_shares_policy_statistics():
    shares = [fake_results("broker", seed=1), fake_results("broker", seed=2)]
    for share in shares:
        share.transactions = {"committed": 3}
    merged = merge_results(shares)
    assert merged.policy is not None and merged.policy.key == "collector"
    assert merged.policy.values["sends"] == 2 * shares[0].policy.values["sends"]
    assert merged.transactions == {"committed": 6}
    assert merged.client is None and merged.verify is None and merged.runner is None
    assert "runner" not in merged.to_dict()
