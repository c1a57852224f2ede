"""Workload files a CI parameter may supply: plain YAML only (no tags, no alias keys, no
alias of a collection: a billion-laughs file is refused fast and small), groups whose
total rate holds from the first second, and profiles that send nothing are told."""

from __future__ import annotations

import time
import tracemalloc

import pytest

from producer_core.workload.message_source import make_schedule, scheduled_total
from producer_core.workload.workload_file import (
    WorkloadFileError,
    check_sends_something,
    parse_workload,
)
from producer_core.workload.yaml_guard import PlainYamlError

TOPIC = "  - {name: t, partitions: 1, rate: {constant: 10}}\n"


def laughs(levels: int) -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    return "\n".join(lines) + f"\nduration_s: 1\ntopics:\n  - {{*a{levels - 1}: 1}}\n"


def test_billion_laughs_is_refused_fast_and_small():
    tracemalloc.start()
    began = time.monotonic()
    with pytest.raises(PlainYamlError, match="alias \\*a0 stands for a list"):
        parse_workload(laughs(12))  # 10**12 elements if expanded
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert time.monotonic() - began < 1.0
    assert peak < 20 * 1024 * 1024


@pytest.mark.parametrize(("text", "fragment"), [
    ("x: &k name\nduration_s: 1\ntopics:\n  - {*k : t, partitions: 1, rate: max}\n",
     "alias \\*k is used as a mapping key"),
    ("duration_s: 1\ntopics:\n  - name: !!python/name:os.system t\n    partitions: 1\n"
     "    rate: max\n", "YAML tag 'tag:yaml.org,2002:python/name:os.system'"),
    ("duration_s: !!python/object/apply:os.getpid []\ntopics:\n" + TOPIC, "YAML tag"),
    ("duration_s: 1\ntopics:\n  - name: !!binary aGVsbG8=\n    partitions: 1\n"
     "    rate: max\n", "YAML tag"),
    ("duration_s: !local 1\ntopics:\n" + TOPIC, "YAML tag '!local'"),
    ("duration_s: !!float 1\ntopics:\n" + TOPIC, "YAML tag"),
    ("? [a, b]\n: 1\nduration_s: 1\ntopics:\n" + TOPIC, "mapping key must be a single value"),
    ("base: &t {name: t, partitions: 1, rate: max}\nduration_s: 1\ntopics: [*t]\n",
     "stands for a list or mapping"),
])
def test_non_plain_yaml_is_refused_with_its_line(text, fragment):
    with pytest.raises(PlainYamlError, match=fragment) as info:
        parse_workload(text, "w.yaml")
    assert str(info.value).startswith("w.yaml:")


def test_an_alias_of_a_single_value_is_allowed():
    workload = parse_workload("duration_s: &d 2\ntopics:\n  - {name: t, partitions: 1, "
                              "rate: {constant: *d}}\n")
    assert workload.duration_s == 2 and workload.topics[0].rate.rate == 2


def test_a_group_holds_its_total_rate_from_the_first_second():
    """count 10,000 at 100 msg/s for 2 s: about 200 messages, spread evenly (the issue
    measured 10,000, every topic's message 0 at t=0)."""
    workload = parse_workload("duration_s: 2\ntopics:\n  - {name: 'g-{i}', count: 10000, "
                              "partitions: 1, rate: {constant: 100}}\n")
    per_second = [sum(scheduled_total(make_schedule(t, horizon, 0)) for t in workload.topics)
                  for horizon in (0.01, 0.5, 1.0, 2.0)]
    assert per_second == [1, 50, 100, 200]
    assert workload.target_rate == pytest.approx(100)


def test_a_skewed_group_keeps_its_shares_and_starts_without_a_burst():
    workload = parse_workload("duration_s: 10\ntopics:\n  - {name: 'g-{i}', count: 4, "
                              "partitions: 1, rate: {constant: 1000}, rate_skew: 1}\n")
    rates = [t.rate.mean_rate for t in workload.topics]
    assert sum(rates) == pytest.approx(1000) and rates[0] == pytest.approx(2 * rates[1])
    first = sorted(make_schedule(t, 10.0, 0).offset_of(0) for t in workload.topics)
    assert first[0] == 0.0 and len(set(first)) == 4  # one message at t=0, not four
    totals = [scheduled_total(make_schedule(t, 10.0, 0)) for t in workload.topics]
    assert sum(totals) == pytest.approx(10_000, abs=4)


def test_a_profile_that_sends_nothing_is_told():
    silent = parse_workload("duration_s: 2\ntopics:\n  - {name: z, partitions: 1, "
                            "rate: {step: [[0, 1], [0, 1]]}}\n" + TOPIC)
    notes = check_sends_something(silent, "w.yaml")
    assert len(notes) == 1 and "topic z send nothing" in notes[0]
    late = parse_workload("duration_s: 2\ntopics:\n  - {name: z, partitions: 1, "
                          "rate: {step: [[0, 5], [10, 1]]}}\n")
    assert check_sends_something(late, "w.yaml")
    never = parse_workload("messages: 10\ntopics:\n  - {name: z, partitions: 1, "
                           "rate: {step: [[0, 1], [0, 1]]}}\n")
    with pytest.raises(WorkloadFileError, match="would wait for ever"):
        check_sends_something(never, "w.yaml")
    assert check_sends_something(parse_workload("duration_s: 1\ntopics:\n" + TOPIC),
                                 "w.yaml") == []


@pytest.mark.parametrize(("text", "fragment"), [
    ("duration_s: 1.0e+308\ntopics:\n" + TOPIC, "up to 604,800 \\(got 1e\\+308\\)"),
    ("duration_s: .inf\ntopics:\n" + TOPIC, "up to 604,800 \\(got inf\\)"),
    ("duration_s: 1\nwarmup_s: .nan\ntopics:\n" + TOPIC, "warmup_s: must be"),
    ("duration_s: 1\ntopics:\n  - {name: t, partitions: 1, rate: {constant: 1.0e+300}}\n",
     "up to 10,000,000"),
    ("duration_s: 1\ntopics:\n  - {name: t, partitions: 1, rate: {constant: 0.000000001}}\n",
     "at least 0.001"),
    ("duration_s: 1\nseed: -5\ntopics:\n" + TOPIC, "whole number 0..4294967295"),
    ("duration_s: 1\ntopics:\n  - {name: t, partitions: 1, rate: max, "
     "keys: {uniform: 100000000}}\n", "whole number 1..1000000"),
    ("duration_s: 1\ntopics:\n  - {name: 'g-{i}', count: 10000, partitions: 100, "
     "rate: {constant: 1}}\n", "1,000,000 partitions"),
    ("duration_s: 100000\ntopics:\n  - {name: t, partitions: 1, rate: {bursts: "
     "{rate: 10, on_s: 0.001, off_s: 0.001}}}\n", "more than 100,000 cycles"),
    ("duration_s: 1\ntopics:\n  - {name: t, partitions: 1, rate: {step: ["
     + ", ".join(["[1, 1]"] * 1001) + "]}}\n", "at most 1000 steps"),
    ("duration_s: 1\ntopics:\n  - {name: '..', partitions: 1, rate: max}\n",
     "neither '.' nor '..'"),
])
def test_bounds(text, fragment):
    with pytest.raises(WorkloadFileError, match=fragment):
        parse_workload(text)
