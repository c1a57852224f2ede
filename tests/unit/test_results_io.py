"""The results format: schema round trip, .hgrm and encoded histograms, the Parquet log."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from producer_core.results.histogram import LatencyHistogram
from producer_core.results.request_log import REQUEST_LOG_SCHEMA, read_request_log
from producer_core.results.results_io import (
    ResultsError,
    RunRecorder,
    add_facts,
    load_results,
    merge_encoded,
    results_schema,
    validate_document,
    write_results_dir,
)
from producer_core.results.run_facts import run_document
from tests.results_fakes import fake_comparison, fake_results

HEADER = "       Value     Percentile TotalCount 1/(1-Percentile)\n\n"
ROW = re.compile(r"^ +[\d.]+ +[01]\.\d{12} +\d+( +[\d.]+)?$")
FOOTER = re.compile(
    r"#\[Mean    = +(?P<mean>[\d.]+), StdDeviation   = +(?P<std>[\d.]+)\]\n"
    r"#\[Max     = +(?P<max>[\d.]+), Total count    = +(?P<total>\d+)\]\n"
    r"#\[Buckets = +\d+, SubBuckets     = +\d+\]\n\Z"
)


def run_dir(tmp_path):
    results = RunRecorder(lambda: fake_results("partition"))()
    document = run_document(results, files=True)
    add_facts(document, embedded=False)
    write_results_dir(tmp_path, document, [results])
    return document, results


def test_run_round_trip(tmp_path):
    document, results = run_dir(tmp_path)
    loaded = load_results(tmp_path)
    assert loaded.kind == "run" and loaded.modes == ["partition"]
    assert loaded.document == json.loads(json.dumps(document))
    assert loaded.path == tmp_path / "results.json"
    doc = loaded.document
    assert doc["schema_version"] == 1 and doc["kind"] == "run"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", doc["started_at"])
    assert doc["kbatch_version"] and doc["broker_version"] == "unknown"
    assert doc["host"]["cpu_count"] >= 1 and doc["host"]["python"].startswith("3.")
    assert doc["requests_sent"] == results.requests_sent == 400
    for key in ("latency_hgrm", "latency_hdr", "requests"):
        assert loaded.companion(doc, key) is not None
    # A file given directly loads the same.
    assert load_results(tmp_path / "results.json").document == doc


def test_comparison_round_trip(tmp_path):
    document, results = fake_comparison(repeat=2, files=True)
    write_results_dir(tmp_path, document, results)
    loaded = load_results(tmp_path)
    assert loaded.kind == "comparison"
    assert loaded.document == json.loads(json.dumps(document))
    assert [r["mode"] for r in loaded.runs] == ["partition", "broker"] * 2
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == [
        "broker-1", "broker-2", "partition-1", "partition-2"]
    for run in loaded.runs:
        assert run["broker_version"] == "unknown" and run["broker"] == "test cluster"
        assert loaded.companion(run, "requests").parent.name == f"{run['mode']}-{run['round']}"
    assert loaded.document["started_at"] == loaded.runs[0]["started_at"]


def test_plain_json_without_new_fields_still_loads(tmp_path):
    """Files from before kind/started_at/host existed (schema_version 1) stay readable."""
    document = fake_results("none").to_dict()
    for key in ("kind", "started_at"):
        del document[key]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(document))
    assert load_results(path).kind == "run"


@pytest.mark.parametrize(("change", "fragment"), [
    (lambda d: d.update(schema_version=2), "schema_version 2; this kbatch reads schema_version 1"),
    (lambda d: d.pop("requests_sent"), "required field 'requests_sent' is missing"),
    (lambda d: d["latency"].update(p99_ms="fast"), "latency.p99_ms: must be number"),
    (lambda d: d["messages"].update(failed=-1), "messages.failed: must be >= 0"),
    (lambda d: d.update(kind="comparison"), "(comparison)"),
    # a real validator: exclusiveMinimum (the hand-written checker ignored it)
    (lambda d: d.update(intervals={**d.get("intervals", {}), "interval_s": 0}),
     "interval_s: must be > 0, got 0"),
])
def test_schema_violations_are_named(tmp_path, change, fragment):
    document = json.loads(json.dumps(fake_results("partition").to_dict()))
    change(document)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ResultsError) as info:
        load_results(path)
    assert fragment in str(info.value)


def test_unreadable_inputs(tmp_path):
    with pytest.raises(ResultsError, match="without results.json"):
        load_results(tmp_path)
    with pytest.raises(ResultsError, match="no such file"):
        load_results(tmp_path / "nope.json")
    (tmp_path / "x.json").write_text("{not json")
    with pytest.raises(ResultsError, match="not valid JSON"):
        load_results(tmp_path / "x.json")


def test_schema_file_is_standard_json_schema():
    schema = results_schema()
    assert schema["$schema"].endswith("2020-12/schema")
    assert {"run", "comparison"} <= set(schema["$defs"])
    import jsonschema  # a full validator (test extra), beside the in-repo schema_check

    document, _ = fake_comparison()
    jsonschema.validate(json.loads(json.dumps(document)), schema)


def test_hgrm_file_is_hdrhistogram_format(tmp_path):
    document, results = run_dir(tmp_path)
    text = (tmp_path / document["files"]["latency_hgrm"]).read_text()
    assert text.startswith(HEADER)
    footer = FOOTER.search(text)
    assert footer is not None, text[-300:]
    rows = text[len(HEADER):footer.start()].splitlines()
    assert len(rows) > 20 and all(ROW.match(row) for row in rows), rows[:3]
    assert len(rows[-1].split()) == 3 and float(rows[-1].split()[1]) == 1.0
    assert int(footer["total"]) == document["latency"]["count"] == 2000
    assert float(footer["max"]) == pytest.approx(document["latency"]["max_ms"], abs=1e-3)
    assert float(footer["mean"]) == pytest.approx(document["latency"]["mean_ms"], abs=1e-3)
    # The .hdr file is the JSON's encoded histogram, and renders the same .hgrm.
    encoded = (tmp_path / document["files"]["latency_hdr"]).read_text().strip()
    assert encoded == document["histograms"]["latency_us"]
    assert LatencyHistogram.decode(encoded).to_hgrm() == text


def test_merging_encoded_histograms_equals_histogram_of_union():
    rng = np.random.default_rng(3)
    a_values, b_values = rng.exponential(0.02, 5000), rng.exponential(0.2, 3000)
    a, b, union = LatencyHistogram(), LatencyHistogram(), LatencyHistogram()
    a.record_seconds(a_values)
    b.record_seconds(b_values)
    union.record_seconds(np.concatenate([a_values, b_values]))
    merged = merge_encoded([a.encode(), b.encode()])
    assert merged.count == 8000
    assert merged.encode() == union.encode()
    assert merged.summary_ms() == union.summary_ms()
    assert merged.to_hgrm() == union.to_hgrm()


def test_mode_histogram_merges_rounds_exactly(tmp_path):
    document, results = fake_comparison(repeat=2, files=True)
    write_results_dir(tmp_path, document, results)
    loaded = load_results(tmp_path)
    union = LatencyHistogram()
    for result in results:
        if result.mode == "broker":
            union.merge(result.metrics.latency)
    assert loaded.latency_histogram("broker").encode() == union.encode()


def test_request_log_has_one_row_per_request(tmp_path):
    document, results = run_dir(tmp_path)
    table = read_request_log(tmp_path / document["files"]["requests"])
    assert table.schema.equals(REQUEST_LOG_SCHEMA)
    assert table.num_rows == document["requests_sent"]
    rows = table.to_pylist()
    assert {row["mode"] for row in rows} == {"partition"}
    assert {row["round"] for row in rows} == {1}
    assert sum(row["records"] for row in rows) == document["records_sent"]
    assert sum(row["bytes"] for row in rows) == document["bytes_sent"]
    assert sum(row["attempt"] > 1 for row in rows) == document["retried_requests"]
    assert rows[3]["rtt_ms"] is None and rows[4]["rtt_ms"] > 0  # no response -> null
    first = results.metrics.requests[0]
    assert rows[0]["send_time_s"] == first.send_time_s and rows[0]["reason"] == first.reason
    assert rows[0]["linger_ms"] == first.linger_ms and rows[0]["broker"] == first.broker


def test_validate_document_checks_what_is_written():
    document = json.loads(json.dumps(fake_results("broker").to_dict()))
    validate_document(document)
    document["collector"]["sends"] = "many"
    with pytest.raises(ResultsError, match="collector.sends"):
        validate_document(document)
