"""Workload files: parsing, validation with file:line errors, and the shipped examples."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from producer_core.workload.message_source import TopicSource
from producer_core.workload.workload import ID_BYTES, message_id_of
from producer_core.workload.workload_file import WorkloadFileError, load_workload, parse_workload

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "workloads").glob("*.yaml"))

GOOD = """\
duration_s: 10
seed: 3
topics:
  - name: a
    partitions: 4
    rate: {ramp: {from: 100, to: 1000, over_s: 5}}
    keys: {zipf: {keys: 100, exponent: 1.2}}
    value_size: {weighted: [[100, 3], [1000, 1]]}
    headers: {source: kbatch}
  - name: g-{i}
    count: 3
    partitions: 2
    rate: {constant: 700}
    rate_skew: 1.0
"""


def test_good_file_expands_groups_and_splits_rates():
    w = parse_workload(GOOD)
    assert [t.name for t in w.topics] == ["a", "g-0", "g-1", "g-2"]
    rates = [t.rate.rate for t in w.topics[1:]]
    assert sum(rates) == pytest.approx(700)
    assert rates[0] == pytest.approx(2 * rates[1]) == pytest.approx(3 * rates[2])
    assert w.topics[0].headers == (("source", b"kbatch"),)
    assert w.seed == 3 and w.duration_s == 10


@pytest.mark.parametrize(("text", "fragment"), [
    ("duration_s: 5\ntopics:\n  - name: a\n    partitions: 0\n    rate: {constant: 5}\n",
     "<workload>:4: topics[0].partitions: must be a whole number 1..100000"),
    ("duration_s: 5\ntopics:\n  - name: a\n    partitions: 1\n    rate: {konstant: 5}\n",
     "<workload>:5: topics[0].rate: expected one of constant"),
    ("duration_s: 5\ntopics:\n  - name: a\n    partitions: 1\n"
     "    rate: {ramp: {from: 1, to: 5}}\n",
     "<workload>:5: topics[0].rate.ramp: missing over_s"),
    ("duration_s: 5\ntopics:\n  - name: a\n    partitions: 1\n    rate: {constant: -5}\n",
     "<workload>:5: topics[0].rate.constant: must be a positive number"),
    ("duration_s: 5\ntopics:\n  - name: a\n    partitions: 1\n    rate: max\n    colour: red\n",
     "<workload>:6: topics[0].colour: unknown field"),
    ("topics:\n  - name: a\n    partitions: 1\n    rate: max\n",
     "give duration_s or messages"),
    ("duration_s: 5\ntopics: [\n", "not valid YAML"),
    ("duration_s: 5\ntopics:\n  - name: a b\n    partitions: 1\n    rate: max\n",
     "<workload>:3: topics[0].name: a topic name"),
    ("duration_s: 5\ntopics:\n  - name: a\n    partitions: 1\n    rate: max\n"
     "  - name: a\n    partitions: 1\n    rate: max\n", "topic 'a' appears twice"),
    ("duration_s: 5\ntopics:\n  - name: a\n    partitions: 1\n    rate: max\n"
     "    value_size: {uniform: [500, 10]}\n", ":6: topics[0].value_size.uniform: min 500"),
])
def test_errors_name_file_line_and_field(text, fragment):
    with pytest.raises(WorkloadFileError) as err:
        parse_workload(text)
    assert fragment in str(err.value)


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(WorkloadFileError, match="Cannot read workload file"):
        load_workload(tmp_path / "nope.yaml")


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_shipped_examples_parse(path):
    w = load_workload(path)
    assert w.topics and w.duration_s


def test_many_topics_example_is_the_issue_mix():
    w = load_workload(next(p for p in EXAMPLES if p.name == "many-topics.yaml"))
    assert len(w.topics) == 50 and {t.partitions for t in w.topics} == {20}
    assert sum(t.rate.mean_rate for t in w.topics) == pytest.approx(20_000)


def test_zipf_keys_are_skewed_as_specified():
    w = parse_workload("duration_s: 1\ntopics:\n  - name: z\n    partitions: 8\n"
                       "    rate: {constant: 10}\n    keys: {zipf: {keys: 100, exponent: 1.0}}\n")
    source = TopicSource(w.topics[0], 0, seed=5)
    picks = np.array(source.key_indexes(range(200_000)))
    counts = np.bincount(picks, minlength=100)
    harmonic = sum(1 / k for k in range(1, 101))
    assert counts[0] / picks.size == pytest.approx(1 / harmonic, rel=0.03)
    assert counts[0] / counts[9] == pytest.approx(10, rel=0.1)  # p(k) ∝ 1/k


def test_values_carry_ids_and_drawn_sizes():
    w = parse_workload("duration_s: 1\ntopics:\n  - name: v\n    partitions: 1\n"
                       "    rate: {constant: 10}\n    value_size: {uniform: [8, 64]}\n")
    source = TopicSource(w.topics[0], 2, seed=1)
    ids = range(source.id_base, source.id_base + 5000)
    values = source.values(ids)
    assert [message_id_of(v) for v in values] == list(ids)
    sizes = np.array([len(v) for v in values])
    assert sizes.min() == 8 and sizes.max() == 64
    assert sizes.mean() == pytest.approx(36, rel=0.05)
    assert ID_BYTES == 8
