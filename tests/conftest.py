"""Shared fixtures: an embedded Tansu broker, one behind a request-counting proxy, and the
session's Apache Kafka cluster (``tests.kafka_fixtures``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from producer_core.brokers.embedded import EmbeddedBroker
from tests.docker_kafka import docker_kafka  # noqa: F401 - fixture (Compose)
from tests.kafka_fixtures import broker_bootstrap, kafka_cluster  # noqa: F401 - fixtures
from tests.wire_proxy import CountingProxy


@pytest.fixture(scope="module")
def tansu_broker() -> Iterator[EmbeddedBroker]:
    """A running broker shared by a test module (Tansu keeps every message in RAM,
    so sharing it across the whole session would let load tests pile up memory)."""
    broker = EmbeddedBroker()
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture()
def counted_broker() -> Iterator[tuple[EmbeddedBroker, CountingProxy]]:
    """A fresh broker whose advertised address is a CountingProxy in front of it.

    Clients bootstrap at ``proxy.address``; because the broker advertises the proxy's
    port in Metadata, every later connection goes through the proxy too, so its counts
    are the complete wire truth. Function scope keeps the counts per test exact;
    startup is ~0.1 s. The proxy binds first (port 0) so its port cannot be stolen.
    """
    proxy = CountingProxy().start()
    broker = EmbeddedBroker(advertised_port=proxy.port)
    try:
        broker.start()
        proxy.set_upstream(broker.host, broker.port)
        yield broker, proxy
    finally:
        broker.stop()
        proxy.stop()
