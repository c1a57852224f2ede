"""`kbatch analyze`'s Spark job on saved runs: it reproduces each run's own JSON, filters on
run metadata and groups across runs."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from producer_core.analysis.analyze import analyze, find_runs, session_conf
from producer_core.analysis.compare import compare, parse_mode_configs
from producer_core.config import build_settings
from producer_core.engine.drivers.engine import run
from producer_core.errors import UsageError
from producer_core.results.results_io import RunRecorder, add_facts, write_results_dir
from producer_core.results.run_facts import run_document
from producer_core.workload.workload import Workload
from tests.spark_support import assert_row_reproduces_run, needs_spark

pytestmark = [pytest.mark.broker, *needs_spark]


@pytest.fixture(scope="module")
def spark():
    from producer_core.distributed.session import spark_session

    with spark_session("local[2]", "kbatch tests", True, session_conf(2)) as session:
        yield session.spark


@pytest.fixture(scope="module")
def saved_runs(tansu_broker, tmp_path_factory) -> list[Path]:
    """Two saved runs: a produce run and a two-mode comparison (in a path with a space)."""
    root = tmp_path_factory.mktemp("history")
    recorder = RunRecorder(run)
    workload = Workload(topic="analyze-a", partitions=8, rate=3000, duration_s=1.5)
    results = recorder(workload, build_settings([("linger.ms", "5")]), "partition",
                       tansu_broker.bootstrap)
    results.broker = f"embedded Tansu broker at {tansu_broker.bootstrap}"
    document = run_document(results, files=True)
    add_facts(document, True)
    write_results_dir(root / "ci-1", document, [results])

    recorder = RunRecorder(run)
    comparison = compare(Workload(topic="analyze-b", partitions=8, rate=2000, duration_s=1.0),
                         parse_mode_configs(["partition", "broker"], [], [], 20),
                         tansu_broker.bootstrap, run_one=recorder, files=True)
    comparison["broker"] = f"embedded Tansu broker at {tansu_broker.bootstrap}"
    add_facts(comparison, True, comparison["broker"])
    write_results_dir(root / "ci 2", comparison, recorder.results)
    return [root / "ci-1", root / "ci 2"]


def test_each_run_reproduces_its_json(spark, saved_runs, tmp_path):
    entries, notes = find_runs(saved_runs)
    assert notes == [] and len(entries) == 3
    analysis = analyze(spark, entries, tmp_path / "out")
    assert analysis.group_by == ("run", "mode", "broker") and analysis.runs == 3
    rows = {row["run"]: row for row in analysis.rows}
    assert set(rows) == {f"{saved_runs[0]}/partition-1", f"{saved_runs[1]}/partition-1",
                         f"{saved_runs[1]}/broker-1"}
    assert {row["broker"] for row in analysis.rows} == {"embedded Tansu broker"}
    for directory in saved_runs:
        document = json.loads((directory / "results.json").read_text())
        for run_json in document.get("runs", [document]):
            row = rows[f"{directory}/{run_json['mode']}-{run_json.get('round', 1)}"]
            assert row["mode"] == run_json["mode"]
            assert_row_reproduces_run(row, run_json, directory / run_json["files"]["requests"])

    # written as Parquet: the summary as printed, the per-second series, the run metadata
    summary = pq.read_table(tmp_path / "out" / "summary").to_pylist()
    assert sorted(r["requests"] for r in summary) == sorted(r["requests"] for r in rows.values())
    series = pq.read_table(tmp_path / "out" / "requests_per_second").to_pylist()
    for name, row in rows.items():
        mine = [s for s in series if s["run"] == name]
        assert sum(s["requests"] for s in mine) == row["requests"]
        assert max(s["requests_per_s"] for s in mine) == row["peak_req_per_s"]
    runs = pq.read_table(tmp_path / "out" / "runs").to_pylist()
    assert {r["kind"] for r in runs} == {"run", "comparison"}


def test_where_filters_on_run_metadata_and_group_by_pools_runs(spark, saved_runs, tmp_path):
    entries, _ = find_runs([saved_runs[0].parent])  # the whole history, found below it
    assert len(entries) == 3
    analysis = analyze(spark, entries, tmp_path / "out", group_by=("mode",),
                       where="mode = 'partition' AND date >= '2000-01-01' "
                             "AND settings['linger.ms'] IS NOT NULL")
    assert [row["mode"] for row in analysis.rows] == ["partition"]
    row = analysis.rows[0]
    documents = [json.loads((d / "results.json").read_text()) for d in saved_runs]
    partition_runs = [r for d in documents for r in d.get("runs", [d]) if r["mode"] == "partition"]
    assert row["runs"] == 2
    assert row["requests"] == sum(r["requests_sent"] for r in partition_runs)
    assert row["records"] == sum(r["records_sent"] for r in partition_runs)
    assert row["req_per_s"] == pytest.approx(
        row["requests"] / sum(r["duration_s"] for r in partition_runs), rel=1e-6)

    by_node = analyze(spark, entries, tmp_path / "nodes", group_by=("mode", "node"))
    assert {(r["mode"], r["node"]) for r in by_node.rows} == {
        ("partition", int(n)) for d in documents for r in d.get("runs", [d])
        for n in r["requests_by_broker"] if r["mode"] == "partition"} | {
        ("broker", int(n)) for d in documents for r in d.get("runs", [d])
        for n in r["requests_by_broker"] if r["mode"] == "broker"}


def test_bad_where_and_empty_selections_are_usage_errors(spark, saved_runs, tmp_path):
    entries, _ = find_runs(saved_runs)
    with pytest.raises(UsageError, match=r"unknown column 'no_such_column'"):
        analyze(spark, entries, tmp_path / "o", where="no_such_column = 1")
    with pytest.raises(UsageError, match="--where 'mode = '.*expected a column or a value"):
        analyze(spark, entries, tmp_path / "o", where="mode = ")
    with pytest.raises(UsageError, match="functions such as java_method"):
        analyze(spark, entries, tmp_path / "o",
                where="java_method('java.io.File', 'createTempFile', 'a', 'b') IS NOT NULL")
    with pytest.raises(UsageError, match="No run matches --where"):
        analyze(spark, entries, tmp_path / "o", where="mode = 'nothing'")
    with pytest.raises(UsageError, match="--group-by: unknown column"):
        analyze(spark, entries, tmp_path / "o", group_by=("colour",))


def test_where_language_on_spark_matches_the_same_condition_in_python(spark, saved_runs,
                                                                     tmp_path):
    """Every construct of the --where language, evaluated by Spark, selects the runs the
    same condition selects when evaluated by hand on the metadata rows; every column
    the errors list as usable is usable."""
    from producer_core.analysis.where import WHERE_COLUMNS

    entries, _ = find_runs(saved_runs)
    rows = [e.row for e in entries]
    where = ("(mode IN ('partition', 'nothing') OR NOT round BETWEEN 1 AND 1) "
             "AND topic_partitions >= 8 AND settings['linger.ms'] IS NOT NULL "
             "AND hostname IS NOT NULL AND kind != 'x' AND duration_s > 0.5")
    analysis = analyze(spark, entries, tmp_path / "out", group_by=("run",), where=where)
    expected = {r["run"] for r in rows
                if (r["mode"] in ("partition", "nothing") or not 1 <= r["round"] <= 1)
                and r["topic_partitions"] >= 8 and r["settings"].get("linger.ms") is not None
                and r["hostname"] is not None and r["kind"] != "x" and r["duration_s"] > 0.5}
    assert expected and {row["run"] for row in analysis.rows} == expected
    from producer_core.analysis.analyze import runs_schema
    from producer_core.analysis.where import parse_where, to_spark

    every = " AND ".join(f"({c} = {c} OR {c} IS NULL)" for c in WHERE_COLUMNS)
    meta = spark.createDataFrame(rows, runs_schema())
    assert meta.filter(to_spark(parse_where(every))).count() == len(rows)
