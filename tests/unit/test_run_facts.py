"""A results document is built with its facts, not patched afterwards (run_facts)."""

from __future__ import annotations

from producer_core.analysis.compare import comparison_document, parse_mode_configs
from producer_core.brokers import BrokerTarget
from producer_core.results.results_io import add_facts, validate_document
from producer_core.results.run_facts import RunFacts, run_document
from producer_core.workload.workload import Workload
from tests.results_fakes import fake_results

FACTS_KEYS = ["kbatch_version", "broker_implementation", "broker_version", "host"]


class FakeFaults:
    def report(self) -> list[dict]:
        return [{"spec": "kill-broker at=1s", "began_at": "now"}]


def test_a_run_document_ends_with_its_facts_and_validates():
    results = fake_results("partition")
    results.broker = ""
    facts = RunFacts("embedded Tansu broker at 127.0.0.1:1", embedded=True, version="0.6.0")
    document = run_document(results, facts)
    assert list(document)[-4:] == FACTS_KEYS
    assert document["broker"] == "embedded Tansu broker at 127.0.0.1:1"
    # the broker keeps its place among the measured keys
    assert list(document).index("broker") == list(results.to_dict()).index("broker")
    assert document["broker_implementation"] == "tansu"
    assert document["broker_version"] == "0.6.0"
    assert document["complete"] is True
    validate_document(document)


def test_a_stopped_run_is_incomplete_in_place_and_extra_keys_come_before_the_facts():
    facts = RunFacts("external cluster b:1", embedded=False)
    document = run_document(fake_results("broker"), facts, stopped=True, round=2)
    measured = list(fake_results("broker").to_dict())
    assert document["complete"] is False
    assert list(document)[:len(measured)] == measured
    assert list(document)[len(measured):] == ["round", *FACTS_KEYS]
    assert document["broker_implementation"] == "external"
    assert document["broker_version"] == "unknown"


def test_a_target_gives_its_image_and_its_faults_report_when_asked():
    target = BrokerTarget("127.0.0.1:1", "3 Kafka containers", embedded=True,
                          implementation="docker", version="4.0.0", image="apache/kafka:4.0.0",
                          faults=FakeFaults())
    facts = target.facts()
    assert facts.container() == {"broker_image": "apache/kafka:4.0.0",
                                 "faults": FakeFaults().report()}
    document = run_document(fake_results("partition"), facts)
    assert list(document)[-6:] == [*FACTS_KEYS, "broker_image", "faults"]
    assert document["broker_implementation"] == "docker"


def test_a_comparison_built_with_facts_equals_one_patched_the_old_way():
    """The keys, values and order add_facts gave (the builders replace it in the CLI)."""
    mode_runs = parse_mode_configs(["partition", "broker"], [], [])
    workload = Workload(topic="t", partitions=8, rate=1000.0, duration_s=2.0)
    rounds = [(1, fake_results("partition")), (1, fake_results("broker"))]
    for _, results in rounds:
        results.broker = ""
        results.started_at = "2026-01-01T00:00:00.000Z"
    facts = RunFacts("a cluster", embedded=False)
    built = comparison_document(workload, mode_runs, 1, rounds, facts)
    patched = comparison_document(workload, mode_runs, 1, rounds)
    patched["broker"] = "a cluster"
    add_facts(patched, embedded=False, broker="a cluster")
    assert built == patched
    assert list(built) == list(patched)
    assert [list(run) for run in built["runs"]] == [list(run) for run in patched["runs"]]
    validate_document(built)


def test_a_stopped_comparison_is_incomplete():
    mode_runs = parse_mode_configs(["partition"], [], [])
    document = comparison_document(Workload(topic="t"), mode_runs, 1,
                                   [(1, fake_results("partition"))], stopped=True)
    assert document["complete"] is False
