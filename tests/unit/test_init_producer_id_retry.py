"""InitProducerId is asked again while the broker answers a retriable error (a fresh Kafka
cluster answers COORDINATOR_LOAD_IN_PROGRESS while its internal topics load)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from producer_core.engine.transport.transport import Cluster
from producer_core.errors import BrokerError

COORDINATOR_LOAD_IN_PROGRESS = 14
CLUSTER_AUTHORIZATION_FAILED = 31


class ScriptedConnection:
    """Answers InitProducerId with the error codes it is given, in turn."""

    def __init__(self, codes: list[int]) -> None:
        self.codes = codes
        self.asked = 0

    async def send(self, request: object) -> SimpleNamespace:
        code = self.codes[min(self.asked, len(self.codes) - 1)]
        self.asked += 1
        return SimpleNamespace(error_code=code, producer_id=4000 if not code else -1,
                               producer_epoch=0 if not code else -1)


def _cluster(conn: ScriptedConnection) -> Cluster:
    cluster = Cluster("127.0.0.1:9092")

    async def any_conn() -> ScriptedConnection:
        return conn

    cluster._any_conn = any_conn  # type: ignore[method-assign]  # a scripted connection
    return cluster


def test_retriable_errors_are_asked_again_until_an_id_comes() -> None:
    conn = ScriptedConnection([COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_LOAD_IN_PROGRESS, 0])
    assert asyncio.run(_cluster(conn).init_producer_id()) == (4000, 0)
    assert conn.asked == 3


def test_a_retriable_error_that_lasts_fails_after_the_timeout() -> None:
    conn = ScriptedConnection([COORDINATOR_LOAD_IN_PROGRESS])
    with pytest.raises(BrokerError, match="for 0.25 s: GroupLoadInProgressError"):
        asyncio.run(_cluster(conn).init_producer_id(timeout_s=0.25))
    assert conn.asked >= 2


def test_a_fatal_error_fails_at_once() -> None:
    conn = ScriptedConnection([CLUSTER_AUTHORIZATION_FAILED])
    with pytest.raises(BrokerError, match="refused: ClusterAuthorizationFailed"):
        asyncio.run(_cluster(conn).init_producer_id())
    assert conn.asked == 1
