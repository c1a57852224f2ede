"""A run document for a results directory names its companion files when it is built
(run_files), and the writer writes what it names without touching the document."""

from __future__ import annotations

import copy
import json

import pytest

from producer_core.analysis.compare import comparison_document, parse_mode_configs
from producer_core.results.histogram import LatencyHistogram
from producer_core.results.results_io import load_results, write_results_dir
from producer_core.results.run_facts import RunFacts, run_document
from producer_core.results.run_files import companion_files
from producer_core.workload.workload import Workload
from tests.results_fakes import fake_results
from tests.unit.test_run_facts import FACTS_KEYS

FILE_KEYS = ["latency_hgrm", "latency_hdr", "requests"]


def test_a_run_built_for_a_directory_ends_with_its_files_after_its_facts():
    facts = RunFacts("a cluster", embedded=False)
    document = run_document(fake_results("partition"), facts, files=True)
    assert list(document)[-5:] == [*FACTS_KEYS, "files"]
    assert document["files"] == {"latency_hgrm": "runs/partition-1/latency.hgrm",
                                 "latency_hdr": "runs/partition-1/latency.hdr",
                                 "requests": "runs/partition-1/requests.parquet"}
    assert "files" not in run_document(fake_results("partition"), facts)


def test_a_sweep_run_names_its_cell_and_round_and_its_files_come_before_later_facts():
    document = run_document(fake_results("broker"), round=3, cell="broker_w50", files=True)
    assert list(document)[-3:] == ["round", "cell", "files"]
    assert set(document["files"].values()) == {
        "runs/broker_w50-3/latency.hgrm", "runs/broker_w50-3/latency.hdr",
        "runs/broker_w50-3/requests.parquet"}
    finished = RunFacts("a cluster", embedded=False).finish(document)
    assert list(finished)[-5:] == ["files", *FACTS_KEYS]


def test_end_to_end_files_are_named_only_for_a_run_with_consumers():
    assert list(companion_files("x-1", e2e=False)) == FILE_KEYS
    assert list(companion_files("x-1", e2e=True)) == [*FILE_KEYS, "e2e_latency_hgrm",
                                                      "e2e_latency_hdr"]
    results = fake_results("partition")
    results.e2e = LatencyHistogram()
    results.e2e.record_us(12_500)
    document = run_document(results, files=True)
    assert document["files"]["e2e_latency_hdr"] == "runs/partition-1/e2e_latency.hdr"


def test_the_writer_writes_the_named_files_and_leaves_the_document_as_built(tmp_path):
    mode_runs = parse_mode_configs(["partition", "broker"], [], [])
    rounds = [(1, fake_results("partition")), (1, fake_results("broker")),
              (2, fake_results("partition", seed=2)), (2, fake_results("broker", seed=2))]
    document = comparison_document(Workload(topic="t", partitions=8, rate=1000.0,
                                            duration_s=2.0), mode_runs, 2, rounds,
                                   RunFacts("a cluster", embedded=False), files=True)
    built = copy.deepcopy(document)
    write_results_dir(tmp_path, document, [results for _, results in rounds])
    assert document == built
    loaded = load_results(tmp_path)
    assert loaded.document == json.loads(json.dumps(built))
    for run in loaded.runs:
        for key in FILE_KEYS:
            assert loaded.companion(run, key) == tmp_path / run["files"][key]
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == [
        "broker-1", "broker-2", "partition-1", "partition-2"]


def test_the_writer_refuses_a_run_built_without_its_files(tmp_path):
    results = fake_results("partition")
    with pytest.raises(ValueError, match="files=True"):
        write_results_dir(tmp_path, run_document(results), [results])
    assert not (tmp_path / "runs").exists()
