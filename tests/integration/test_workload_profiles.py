"""Rate profiles against the embedded broker: each topic gets the messages its profile
promises (within 2%), all acknowledged, and results are reported per topic."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from producer_core.workload.message_source import TOPIC_ID_SHIFT
from producer_core.workload.workload_file import parse_workload
from tests.integration.test_engine_against_broker import produce
from tests.readback import read_all

pytestmark = pytest.mark.broker

WORKLOAD = """\
duration_s: 4
seed: 11
topics:
  - name: constant
    partitions: 4
    rate: {constant: 2000}
  - name: step
    partitions: 4
    rate: {step: [[500, 2], [3000, 2]]}
    keys: {sequential: 10}
  - name: ramp
    partitions: 4
    rate: {ramp: {from: 0, to: 4000, over_s: 4}}
    value_size: {uniform: [10, 400]}
  - name: poisson
    partitions: 4
    rate: {poisson: 1500}
    keys: {zipf: {keys: 50, exponent: 1.0}}
  - name: bursts
    partitions: 4
    rate: {bursts: {rate: 4000, on_s: 0.5, off_s: 0.5}}
    headers: {origin: test}
"""

EXPECTED = {"constant": 8000, "step": 7000, "ramp": 8000, "poisson": 6000, "bursts": 8000}


def test_profiles_deliver_their_rates_and_every_message(tansu_broker):
    workload = parse_workload(WORKLOAD)
    results, deliveries = produce(tansu_broker.bootstrap, "partition", workload,
                                  **{"linger.ms": "10"})
    doc = results.to_dict()
    assert doc["messages"]["failed"] == 0
    for name, expected in EXPECTED.items():
        acked = doc["topics"][name]["messages"]["acknowledged"]
        assert acked == pytest.approx(expected, rel=0.02), name
    assert sum(t["requests"] for t in doc["topics"].values()) >= doc["requests_sent"]
    # every message of every topic is stored once, under its own topic's id range
    for index, name in enumerate(EXPECTED):
        acked = doc["topics"][name]["messages"]["acknowledged"]
        found = asyncio.run(read_all(tansu_broker.bootstrap, name, 4, expected=acked))
        ids = Counter(mid for recs in found.values() for _, mid, _ in recs)
        assert sum(ids.values()) == acked and max(ids.values()) == 1, name
        assert {mid >> TOPIC_ID_SHIFT for mid in ids} == {index}
    assert len(deliveries) > 0
