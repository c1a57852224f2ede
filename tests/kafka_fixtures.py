"""One real Apache Kafka cluster per test session, and a broker fixture over both brokers.

``kafka_cluster`` starts a 3-node KRaft cluster (``producer_core.brokers.kafka``) the first
time a test asks for it and stops it when the session ends; 3 nodes so the same cluster
serves the tests that need leaders spread over several brokers. Starting it costs ~15 s
on a 2-core machine (plus a one-time Maven download of the jars into the user cache), so
no test starts its own.

``broker_bootstrap`` is parametrized by implementation (``tansu``, ``kafka``): a test that
exercises the engine against "a broker" takes it and runs against both. Each test must use
a fresh topic name (``fresh_topic``): the Kafka cluster lives for the whole session.

Kafka is never skipped silently: if it cannot start, its tests fail with the reason. Set
``KBATCH_SKIP_KAFKA=1`` to skip them locally (the skip says so).
"""

from __future__ import annotations

import itertools
import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

from producer_core.brokers.embedded import EmbeddedBroker
from producer_core.brokers.kafka import KafkaCluster

SKIP_ENV = "KBATCH_SKIP_KAFKA"
IMPLEMENTATIONS = ("tansu", "kafka")
_counter = itertools.count(1)


def fresh_topic(prefix: str) -> str:
    """A topic name no other test of this session uses."""
    return f"{prefix}-{int(time.time() * 1000) % 10**9}-{next(_counter)}"


def skip_kafka_reason() -> str | None:
    if os.environ.get(SKIP_ENV) == "1":
        return f"{SKIP_ENV}=1: Apache Kafka tests skipped on request"
    return None


@pytest.fixture(scope="session")
def kafka_cluster() -> Iterator[KafkaCluster]:
    """A 3-node Apache Kafka cluster shared by the whole test session."""
    reason = skip_kafka_reason()
    if reason:
        pytest.skip(reason)
    cluster = KafkaCluster(nodes=3)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@dataclass(frozen=True)
class BrokerUnderTest:
    """The broker a parametrized test runs against."""

    implementation: str
    bootstrap: str
    nodes: int


@pytest.fixture(params=IMPLEMENTATIONS)
def broker_bootstrap(request: pytest.FixtureRequest) -> BrokerUnderTest:
    """Tansu (the module's embedded broker) or the session's Apache Kafka cluster."""
    if request.param == "kafka":
        cluster: KafkaCluster = request.getfixturevalue("kafka_cluster")
        return BrokerUnderTest("kafka", cluster.bootstrap, cluster.nodes)
    broker: EmbeddedBroker = request.getfixturevalue("tansu_broker")
    return BrokerUnderTest("tansu", broker.bootstrap, 1)


@contextmanager
def own_embedded_broker(port: int | None = None) -> Iterator[EmbeddedBroker]:
    """A Tansu broker of one test alone (pausing it must disturb no other test), resumed
    if the test left it SIGSTOPped and stopped on every exit path."""
    broker = EmbeddedBroker(port=port) if port is not None else EmbeddedBroker()
    broker.start()
    try:
        yield broker
    finally:
        if broker.pid is not None:
            os.kill(broker.pid, signal.SIGCONT)
        broker.stop()
