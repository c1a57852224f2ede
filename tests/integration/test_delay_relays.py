"""The per-broker delay relays (``lab.relay``) that put the lab's round trip in front of a
real broker: every response waits the round trip, and nothing is lost on the way. Checked
in front of the embedded Tansu broker, which, like Kafka, advertises the relay's port."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from producer_core.brokers.embedded import EmbeddedBroker
from producer_core.brokers.lab.delay import DelayModel
from producer_core.brokers.lab.relay import DelayRelays
from producer_core.config import build_settings
from producer_core.engine.drivers.engine import run
from producer_core.workload.workload import Workload
from tests.readback import read_all

pytestmark = pytest.mark.broker


def test_every_response_takes_the_round_trip_and_every_message_arrives():
    relays = DelayRelays(1, DelayModel(rtt_ms=40))
    (port,) = relays.start()
    broker = EmbeddedBroker(advertised_port=port)
    try:
        broker.start()
        relays.set_upstreams([(broker.host, broker.port)])
        workload = Workload(topic="relayed", partitions=4, rate=1000, messages=600,
                            duration_s=None)
        results = run(workload, build_settings(mode="partition"), "partition",
                      f"127.0.0.1:{port}")
        document = results.to_dict()
        assert document["messages"]["acknowledged"] == 600
        # the relay holds each response 40 ms; the broker itself answers in ~1 ms
        assert 40 <= document["rtt"]["p50_ms"] < 200
        assert document["latency"]["p50_ms"] >= 40
        found = asyncio.run(read_all(f"127.0.0.1:{port}", "relayed", 4, expected=600))
        stored = Counter(mid for recs in found.values() for _, mid, _ in recs)
        assert set(stored) == set(range(600)) and max(stored.values()) == 1
    finally:
        broker.stop()
        relays.stop()
