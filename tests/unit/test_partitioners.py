"""Partitioners against the clients they copy: librdkafka's hashes (reference partitions
produced by librdkafka 2.x itself, see below), Java's murmur2, and the sticky partitioners'
switching rules on a real accumulator with synthetic time."""

from __future__ import annotations

import math

import numpy as np
import pytest

from producer_core.analysis.compare import parse_mode_configs
from producer_core.config import build_settings
from producer_core.engine.core.accumulator import BATCH_FILLED, Accumulator, TopicPartition
from producer_core.engine.drivers.generator import Generator
from producer_core.errors import ConfigError, UsageError
from producer_core.results.metrics import RunMetrics
from producer_core.workload.partitioners import PARTITIONERS, Partitioning
from producer_core.workload.partitioners.hashes import (
    crc32_partition,
    fnv1a,
    fnv1a_partition,
    murmur2_partition,
)
from producer_core.workload.partitioners.librdkafka import LibrdkafkaKeyless
from producer_core.workload.partitioners.partitioner import partition_for_key
from producer_core.workload.partitioners.sticky import BATCH_HEADER, Kip480, UniformSticky
from producer_core.workload.partitioners.topic import TopicPartitioner
from producer_core.workload.workload import Workload
from producer_core.workload.workload_file import parse_workload

# Partitions librdkafka (confluent-kafka 2.16.1) chose for these keys on a 7-partition
# topic: each key produced with `partitioner=<name>` to an embedded Tansu topic, and the
# partition read from the delivery report. tests/integration/test_partitioners_live.py
# checks the same live, through mode librdkafka.
REF_KEYS = [b"key-%d" % i for i in range(40)] + [b"a", b"hello world", bytes(range(200))]
LIBRDKAFKA_REFERENCE = {
    "consistent": [6, 0, 3, 5, 1, 4, 3, 0, 3, 3, 5, 3, 3, 5, 2, 5, 3, 5, 2, 0, 1, 3, 4, 2, 3,
                   3, 2, 6, 2, 5, 1, 2, 5, 3, 0, 3, 6, 0, 2, 0, 4, 5, 6],
    "murmur2": [0, 5, 4, 4, 5, 4, 5, 3, 4, 2, 3, 3, 2, 2, 2, 1, 0, 2, 6, 5, 5, 3, 0, 1, 3, 0,
                0, 1, 3, 0, 5, 2, 2, 5, 3, 2, 1, 4, 5, 0, 5, 2, 4],
    "fnv1a": [6, 1, 3, 5, 5, 0, 2, 4, 4, 6, 4, 6, 0, 2, 3, 5, 6, 1, 6, 1, 5, 0, 2, 4, 4, 6, 1,
              3, 3, 5, 6, 4, 2, 0, 5, 3, 1, 6, 4, 2, 6, 4, 3],
}
HASHES = {"consistent": crc32_partition, "murmur2": murmur2_partition,
          "fnv1a": fnv1a_partition}
# NULL keys with the hash-only names (librdkafka: every one to this partition of 7)
LIBRDKAFKA_NULL_KEY = {"consistent": 0, "murmur2": 2, "fnv1a": 2}


@pytest.mark.parametrize("name", sorted(LIBRDKAFKA_REFERENCE))
def test_key_hashes_match_librdkafka(name: str) -> None:
    assert [HASHES[name](k, 7) for k in REF_KEYS] == LIBRDKAFKA_REFERENCE[name]


def test_murmur2_name_is_javas_partition() -> None:
    assert [murmur2_partition(k, 7) for k in REF_KEYS] == [
        partition_for_key(k, 7) for k in REF_KEYS]


def test_fnv1a_known_values() -> None:
    # FNV-1a 32-bit reference values (the offset basis for b"", Fowler/Noll/Vo's test suite)
    assert fnv1a(b"") == 0x811C9DC5
    assert fnv1a(b"a") == 0xE40C292C
    assert fnv1a(b"foobar") == 0xBF9CF968


@pytest.mark.parametrize("name", sorted(LIBRDKAFKA_NULL_KEY))
def test_null_keys_hash_to_one_partition_like_librdkafka(name: str) -> None:
    chooser = LibrdkafkaKeyless(name, 7, seed=1, sticky_linger_s=0.01)
    assert chooser.choose([100] * 50, 0.0) == [LIBRDKAFKA_NULL_KEY[name]] * 50


def test_random_names_stick_for_the_linger_then_move() -> None:
    chooser = LibrdkafkaKeyless("murmur2_random", 1000, seed=3, sticky_linger_s=0.010)
    picks = [chooser.choose([100] * 5, t / 1000) for t in range(0, 100)]  # 1 ms passes
    flat = [p for pass_ in picks for p in pass_]
    assert all(len(set(pass_)) == 1 for pass_ in picks)
    assert chooser.switches == 10  # one new partition per 10 ms
    assert 5 <= len(set(flat)) <= 10
    zero = LibrdkafkaKeyless("random", 1000, seed=3, sticky_linger_s=0)
    assert len(set(zero.choose([100] * 200, 0.0))) > 150  # linger 0: random per message


def _accumulator(partitions: int, batch_size: int = 1000) -> Accumulator:
    return Accumulator([TopicPartition("t", p) for p in range(partitions)], batch_size)


def _append(acc: Accumulator, parts: list[int], size: int = 100, now: float = 0.0) -> None:
    value = b"x" * (size - 12)
    acc.append_many(parts, range(len(parts)), None, [value] * len(parts), [now] * len(parts),
                    now, 0)


def test_kip480_sticks_until_the_batch_is_full() -> None:
    acc = _accumulator(50)
    chooser = Kip480(50, 0, acc, seed=1, batch_size=1000)
    parts: list[int] = []
    closed: list[int] = []
    for _ in range(20):  # 20 passes of 3 records of ~100 bytes
        chosen = chooser.choose([100] * 3, 0.0)
        _append(acc, chosen)
        closed.extend(chooser.finish_pass())
        parts.extend(chosen)
    runs = _runs(parts)
    # a 1000-byte batch holds 61 header bytes + 9 records of ~100: every run fills one batch
    assert all(len(run) == (1000 - BATCH_HEADER) // 100 for run in runs[:-1])
    # each partition left is closed at once (Java's tryAppend closes it: ready to send)
    assert closed == [run[0] for run in runs[:-1]]
    assert all(acc.queues[p][-1].closed for p in closed)
    assert not acc.queues[runs[-1][0]][-1].closed


def test_kip480_switches_when_the_batch_was_sent() -> None:
    acc = _accumulator(50)
    chooser = Kip480(50, 0, acc, seed=1, batch_size=1000)
    first = chooser.choose([100] * 2, 0.0)
    _append(acc, first)
    assert len(set(first)) == 1
    assert chooser.choose([100], 0.0) == [first[0]]  # room left: stays
    acc.pop_head(first[0], 0.1)  # the batch is drained (sent)
    after = chooser.choose([100], 0.1)
    assert after != [first[0]]  # a new batch would be needed: switch first


def test_uniform_sticky_switches_after_batch_size_bytes_at_a_new_batch() -> None:
    acc = _accumulator(50, batch_size=1000)
    chooser = UniformSticky(50, 0, acc, seed=2, batch_size=1000, adaptive=False)
    switched_after = []
    for record in range(60):
        _append(acc, chooser.choose([100], 0.0))
        if chooser.switches > len(switched_after):
            switched_after.append(record + 1)
    # nothing drains: 9 records fill a batch, the 10th starts the second one at 1000 bytes
    # produced, and the switch comes right after it (Java's enableSwitch on a new batch)
    assert switched_after == [10, 20, 30, 40, 50, 60]


def test_uniform_sticky_caps_at_twice_batch_size_when_batches_drain_slowly() -> None:
    chooser = UniformSticky(50, 0, None, seed=2, batch_size=1000, adaptive=False)
    chooser.choose([100], 0.0)
    chooser._room = 10_000  # an open batch that never fills: only the 2x cap switches
    parts = chooser.choose([100] * 19, 0.0)
    assert parts.count(parts[0]) == 20 - 1 and chooser.switches == 1


def test_adaptive_avoids_partitions_with_deep_queues() -> None:
    acc = _accumulator(4, batch_size=200)
    for _ in range(40):  # partitions 0 and 1: 20 batches queued each
        _append(acc, [0, 1], size=150)
    chooser = UniformSticky(4, 0, acc, seed=5, batch_size=200, adaptive=True)
    stats = chooser.load_stats(0.0)
    assert stats is not None
    cft, ids = stats
    assert list(ids) == [0, 1, 2, 3] and list(np.diff(cft, prepend=0)) == [1, 1, 41, 41]
    assert {chooser.next_partition() for _ in range(200)} == {0, 1, 2, 3}  # not yet used
    chooser.refresh_load_stats(0.0)
    picks = [chooser.next_partition() for _ in range(2000)]
    assert picks.count(2) + picks.count(3) > 0.9 * len(picks)


def test_availability_timeout_skips_a_broker_that_does_not_drain() -> None:
    acc = _accumulator(4, batch_size=200)
    leaders = [1, 1, 2, 2]
    _append(acc, [0], now=0.0)  # broker 1 has a batch since t=0
    chooser = UniformSticky(4, 0, acc, seed=5, batch_size=200, adaptive=True,
                            availability_timeout_s=0.1, linger_s=0.005, leaders=leaders)
    assert chooser.load_stats(0.05) is not None and chooser.excluded == 0
    cft, ids = chooser.load_stats(0.2)  # type: ignore[misc]  # not None here (adaptive)
    assert list(ids) == [2, 3] and chooser.excluded == 2
    chooser.refresh_load_stats(0.2)
    assert all(chooser.next_partition() in (2, 3) for _ in range(200))


def test_equal_queues_mean_uniform() -> None:
    chooser = UniformSticky(4, 0, _accumulator(4), seed=5, batch_size=200, adaptive=True)
    assert chooser.load_stats(0.0) is None


def test_topic_partitioner_key_tables() -> None:
    keys = REF_KEYS[:40]
    java = [partition_for_key(k, 7) for k in keys]
    for name in ("round_robin", "sticky", "uniform_sticky"):
        topic = TopicPartitioner(Partitioning(name=name), 7, 0, None, None, 1, keys, java)
        assert topic.keyed_partitions(list(range(40)), None, 0.0) == java
    fnv = TopicPartitioner(Partitioning(name="fnv1a"), 7, 0, None, None, 1, keys, java)
    assert fnv.keyed_partitions(list(range(40)), None, 0.0) == LIBRDKAFKA_REFERENCE["fnv1a"][:40]
    assert TopicPartitioner(Partitioning(), 7, 0, None, None, 1, keys, java).keyless is None
    ignore = TopicPartitioner(Partitioning(name="uniform_sticky", ignore_keys=True), 7, 0,
                              None, None, 1, keys, java)
    assert len(set(ignore.keyed_partitions(list(range(40)), [50] * 40, 0.0))) <= 2


def test_settings() -> None:
    settings = build_settings({"partitioner": "uniform_sticky",
                               "partitioner.availability.timeout.ms": "250",
                               "partitioner.adaptive.partitioning.enable": "false"})
    config = Partitioning.from_settings(settings)
    assert (config.name, config.adaptive, config.availability_timeout_s) == (
        "uniform_sticky", False, 0.25)
    assert Partitioning.from_settings(build_settings({})).name == "round_robin"
    with pytest.raises(ConfigError, match="Allowed: round_robin, sticky"):
        build_settings({"partitioner": "stikcy"})
    for name in PARTITIONERS:
        assert build_settings({"partitioner": name}, mode="librdkafka")["partitioner"] == name
    assert math.isclose(Partitioning.from_settings(build_settings(
        {"sticky.partitioning.linger.ms": "0"})).sticky_linger_s, 0.0)


def _runs(parts: list[int]) -> list[list[int]]:
    out: list[list[int]] = []
    for p in parts:
        if out and out[-1][-1] == p:
            out[-1].append(p)
        else:
            out.append([p])
    return out


def test_workload_file_names_a_partitioner_per_topic() -> None:
    workload = parse_workload("""
duration_s: 1
topics:
  - {name: a, partitions: 4, rate: {constant: 10}, partitioner: uniform_sticky}
  - {name: b, partitions: 4, rate: {constant: 10}}
""", "w.yaml")
    a, b = workload.topic_specs()
    assert (a.partitioner, b.partitioner) == ("uniform_sticky", None)
    assert workload.with_topic_suffix("-x").topic_specs()[0].partitioner == "uniform_sticky"
    run_default = Partitioning(name="sticky")
    assert run_default.for_topic(a.partitioner).name == "uniform_sticky"
    assert run_default.for_topic(b.partitioner).name == "sticky"
    with pytest.raises(UsageError, match=r"w.yaml:3: .*partitioner.*allowed: round_robin"):
        parse_workload("""
topics:
  - {name: a, partitions: 4, rate: {constant: 10}, partitioner: stiky}
""", "w.yaml")


def test_mode_config_sets_a_partitioner_for_one_mode() -> None:
    runs = parse_mode_configs(["partition", "broker"], [("partitioner", "sticky")],
                              ["broker:partitioner=uniform_sticky"])
    assert [r.settings["partitioner"] for r in runs] == ["sticky", "uniform_sticky"]


class _Recorder:
    """The generator's policy hooks, recording the accumulator events it reports."""

    def __init__(self) -> None:
        self.events: list[tuple[int, int]] = []

    def on_append(self, slot: int, event: int, now: float) -> None:
        self.events.append((slot, event))


@pytest.mark.parametrize("name", ["round_robin", "sticky", "uniform_sticky", "random"])
def test_generator_places_keyless_messages_by_partitioner(name: str) -> None:
    workload = Workload(topic="t", partitions=100, rate=10_000, duration_s=1.0,
                        message_size=100)
    acc = Accumulator([TopicPartition("t", p) for p in range(100)], 1000)
    policy = _Recorder()
    generator = Generator(workload, [0], acc, policy, RunMetrics(),  # type: ignore[arg-type]  # a recording stand-in policy
                          Partitioning(name=name, batch_size=1000))
    generator.begin(0.0)
    for step in range(1, 11):
        generator.generate(step / 100 - 1e-4)  # 10 passes of 100 messages
    per_partition = [sum(b.record_count for b in q) for q in acc.queues]
    assert sum(per_partition) == 1000
    touched = sum(1 for n in per_partition if n)
    if name == "round_robin":
        assert per_partition == [10] * 100
    elif name == "sticky":  # a partition until its batch has no room; that batch is closed
        filled = [slot for slot, event in policy.events if event == BATCH_FILLED]
        closed = [b for q in acc.queues for b in q if b.closed]
        assert len(closed) == len(filled) and len(filled) >= 1000 // 9 - 1
        # each closed batch is full: no room for one more ~109-byte record
        assert all(1000 - 110 < b.size_bytes() <= 1000 for b in closed)
        assert touched < len(filled)  # random switches revisit partitions
    elif name == "uniform_sticky":  # 10 records (one new batch past 1000 bytes) each
        assert touched <= 100 and max(per_partition) >= 10
    else:  # librdkafka's sticky partition, 10 ms passes and a 10 ms linger: one per pass
        assert touched <= 10 and 5 <= generator.topics[0].partitioner.switches <= 10
