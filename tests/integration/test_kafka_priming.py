"""Priming on real Apache Kafka (issue 47): a topic kbatch creates gets two acknowledged
records (key kbatch.prime, no value) in every partition before the run's clock starts,
outside its figures and its --verify; a warm topic is not primed again; --no-prime leaves
a new topic cold. The session's Kafka cluster (tests/kafka_fixtures.py) spreads the
partitions' leaders over its nodes, so each leader gets its own priming request."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from producer_core.config import build_settings
from producer_core.engine.drivers.engine import run
from producer_core.engine.transport.priming import PRIME_KEY
from producer_core.measure.verify_read import VerifyingRun
from producer_core.topic_creation import TopicCreation
from producer_core.workload.workload import Workload
from tests.kafka_fixtures import fresh_topic, skip_kafka_reason
from tests.readback import read_all

pytestmark = pytest.mark.skipif(skip_kafka_reason() is not None,
                                reason=skip_kafka_reason() or "")
PARTITIONS = 300


def workload(topic: str) -> Workload:
    return Workload(topic=topic, partitions=PARTITIONS, rate=2000.0, messages=600,
                    message_size=32)


def test_a_new_topic_is_primed_outside_the_figures_and_verify(kafka_cluster) -> None:
    bootstrap = kafka_cluster.bootstrap
    topic = fresh_topic("primed")
    settings = build_settings([("linger.ms", "5")])
    results = VerifyingRun(run)(workload(topic), settings, "partition", bootstrap)
    document = results.to_dict()
    priming = document["priming"]
    assert priming["partitions"] == PARTITIONS and priming["seconds"] > 0
    per_topic = priming["topics"][topic]
    assert (per_topic["primed"], per_topic["already_written"]) == (PARTITIONS, 0)
    assert per_topic["requests"] >= 2  # a round per leader at least, two rounds
    # the figures count the run's messages only
    assert document["messages"]["acknowledged"] == document["records_sent"] == 600
    verify = document["verify"]
    assert verify["read_complete"] is True and verify["problems"] == []
    assert verify["acknowledged"] == verify["present"] == 600
    assert verify["unacknowledged_found"] == 0
    # every partition starts with its two priming records, then the run's
    found = asyncio.run(read_all(bootstrap, topic, PARTITIONS, 600 + 2 * PARTITIONS,
                                 priming=True))
    firsts = [record for records in found.values() for record in records[:2]]
    assert all(key == PRIME_KEY and message_id == -1 for _, message_id, key in firsts)
    assert sorted({offset for offset, _, _ in firsts}) == [0, 1]
    assert sum(len(r) for r in found.values()) == 600 + 2 * PARTITIONS

    again = run(workload(topic), settings, "partition", bootstrap)
    assert again.priming is None  # warm: nothing written before the clock


def test_no_prime_leaves_a_new_topic_cold(kafka_cluster) -> None:
    bootstrap = kafka_cluster.bootstrap
    topic = fresh_topic("cold")
    settings = replace(build_settings([("linger.ms", "5")]),
                       topic_creation=TopicCreation(prime=False))
    results = run(workload(topic), settings, "partition", bootstrap)
    assert results.priming is None
    assert results.to_dict()["settings"]["topic.prime"] is False
    found = asyncio.run(read_all(bootstrap, topic, PARTITIONS, 600, priming=True))
    assert not any(key == PRIME_KEY for records in found.values() for _, _, key in records)
