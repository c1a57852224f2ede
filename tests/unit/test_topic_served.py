"""ensure_topic's wait for the leaders to serve a new topic: a leader that closes the
connection (a node out of file descriptors does) is a refusal to name and ask again, not a
traceback; the reasons of every poll are kept for the error (a CI run on another machine
met a closed connection where this machine met NOT_LEADER answers). The loop's clock moves
only when ensure_topic sleeps, so the number of polls is the same on any machine."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiokafka.errors import KafkaConnectionError

from producer_core.engine.transport.transport import BrokerAddress, Cluster, ClusterView
from producer_core.errors import BrokerError


class _Answer:
    def __init__(self, partitions: list[int], code: int) -> None:
        self.partitions, self.code = partitions, code

    def to_object(self) -> dict[str, Any]:
        return {"topics": [{"partitions": [{"error_code": self.code} for _ in self.partitions]}]}


class _Conn:
    """Answers ListOffsets from a script: an error code for every partition, or a closed
    connection."""

    def __init__(self, script: list[int | None]) -> None:
        self.script = script

    async def send(self, request: Any) -> _Answer:
        code = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if code is None:
            raise KafkaConnectionError("Connection at 127.0.0.1:9092 closed")
        partitions = [p for _, parts in request._topics for p, _ in parts]
        return _Answer(partitions, code)


class _Cluster(Cluster):
    """Metadata names node 1 the leader of 3 partitions, or closes the connection when
    `metadata` says so (True: closed), one entry per poll, the last one repeated."""

    def __init__(self, script: list[int | None], metadata: list[bool] | None = None) -> None:
        super().__init__("127.0.0.1:9092")
        self.conn = _Conn(script)
        self.metadata = metadata or [False]

    async def refresh_metadata(self, topics: list[str] | None = None) -> ClusterView:
        closed = self.metadata.pop(0) if len(self.metadata) > 1 else self.metadata[0]
        if closed:
            raise KafkaConnectionError("Connection at 127.0.0.1:9092 closed")
        self.view = ClusterView({1: BrokerAddress(1, "127.0.0.1", 9092)}, 1,
                                {"t": [1, 1, 1]}, {"t": 0})
        return self.view

    async def connection(self, node_id: int) -> Any:
        return self.conn


def run_in_synthetic_time(coroutine: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Run `coroutine` on a loop whose clock moves only when it sleeps: how many polls fit
    before a deadline does not depend on this machine's speed."""
    loop = asyncio.new_event_loop()
    now = [0.0]
    real_sleep = asyncio.sleep

    async def sleep(delay: float, result: Any = None) -> Any:
        now[0] += delay
        return await real_sleep(0, result)

    monkeypatch.setattr(loop, "time", lambda: now[0])
    monkeypatch.setattr(asyncio, "sleep", sleep)
    try:
        return loop.run_until_complete(coroutine)
    finally:
        loop.close()


def refusal(cluster: _Cluster, timeout_s: float, monkeypatch: pytest.MonkeyPatch) -> str:
    """The error ensure_topic gives for `cluster` after `timeout_s` of synthetic time."""
    with pytest.raises(BrokerError) as refused:
        run_in_synthetic_time(cluster.ensure_topic("t", 3, timeout_s=timeout_s), monkeypatch)
    return str(refused.value)


def test_a_leader_that_closes_the_connection_is_asked_again_and_named(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # NOT_LEADER first, then a closed connection until the deadline: both are named
    text = refusal(_Cluster([6, None]), 0.3, monkeypatch)
    assert "the brokers still refuse 3 of them" in text, text  # (a partition counts once)
    assert "NOT_LEADER_FOR_PARTITION (error 6) for 3" in text, text
    assert "the leader closed the connection (node 1) for 3" in text, text


def test_a_leader_that_closes_once_and_then_serves_is_ready(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert run_in_synthetic_time(_Cluster([None, 0]).ensure_topic("t", 3, timeout_s=5),
                                 monkeypatch) is False


def test_a_broker_that_closes_the_metadata_request_is_asked_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # the first poll finds the topic (created), then Metadata closes twice, then it serves
    cluster = _Cluster([0], metadata=[False, True, True, False])
    assert run_in_synthetic_time(cluster.ensure_topic("t", 3, timeout_s=5),
                                 monkeypatch) is False


def test_a_broker_that_keeps_closing_the_metadata_request_is_named(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # leaders shown once, refused, then every Metadata request closed until the deadline
    text = refusal(_Cluster([6], metadata=[False, False, True]), 0.5, monkeypatch)
    assert "metadata names a leader for each of its 3 partitions" in text, text
    assert "NOT_LEADER_FOR_PARTITION (error 6) for 3" in text, text
    assert "the broker closed the connection when asked for metadata for 3" in text, text


def test_a_topic_whose_metadata_never_arrives_says_so(
        monkeypatch: pytest.MonkeyPatch) -> None:
    text = refusal(_Cluster([0], metadata=[False, True]), 0.5, monkeypatch)
    assert "no metadata answered showed any of its 3 partitions" in text, text
    assert "the broker closed the connection when asked for metadata" in text, text
