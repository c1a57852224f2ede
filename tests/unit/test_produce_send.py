"""The direct produce path (`produce_send`) writes the bytes aiokafka's `send` writes, and
answers its future from the response frame; aiokafka's own requests on the same
connection are still answered by aiokafka."""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import pytest
from aiokafka.conn import AIOKafkaConnection
from aiokafka.protocol.metadata import MetadataRequest
from aiokafka.protocol.produce import ProduceResponse_v3, ProduceResponse_v7

from producer_core.engine.transport.produce_send import ProduceAnswer, ProduceLine, answer
from producer_core.engine.transport.produce_wire import ProduceRequest
from producer_core.engine.transport.transport import tolerant_frame

TOPICS = [("t", [(0, b"\x01" * 70), (3, b"\x02" * 11)]), ("u", [(1, b"\x03" * 5)])]


class Written:
    """Stands in for the connection's StreamWriter: keeps what was written."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.frames.append(bytes(data))


def _conn(max_version: int, client_id: str | None = "kbatch-test") -> AIOKafkaConnection:
    conn = AIOKafkaConnection("127.0.0.1", 9, client_id=client_id)
    conn._versions = {0: (0, max_version)}
    conn._writer = Written()
    return conn


def _run(test: Any) -> None:
    asyncio.run(test())


@pytest.mark.parametrize("client_id", ["kbatch-test", "ü", None])
@pytest.mark.parametrize("transactional_id", [None, "txn"])
@pytest.mark.parametrize("max_version", [3, 5, 7])
def test_the_frame_is_aiokafkas(max_version: int, transactional_id: str | None,
                                client_id: str | None) -> None:
    async def test() -> None:
        conn = _conn(max_version, client_id)
        request = ProduceRequest(transactional_id, -1, 30_000, TOPICS)
        theirs = conn.send(request)
        theirs.close()  # the wait_for coroutine: not awaited here
        conn._correlation_id = 0  # the same correlation id again
        ours = ProduceLine(conn).send(request)
        assert isinstance(ours, asyncio.Future)
        first, second = conn._writer.frames
        assert second == first
        (size,) = struct.unpack_from(">i", second)
        assert size == len(second) - 4
        ours.cancel()

    _run(test)


@pytest.mark.parametrize("response_type", [ProduceResponse_v3, ProduceResponse_v7])
def test_the_response_frame_answers_the_future(response_type: type) -> None:
    async def test() -> None:
        conn = _conn(response_type.API_VERSION)
        future = ProduceLine(conn).send(ProduceRequest(None, -1, 30_000, TOPICS))
        (correlation_id,) = struct.unpack_from(">i", conn._writer.frames[0], 8)
        entry = (0, 0, 41, -1) if response_type is ProduceResponse_v3 else (0, 0, 41, -1, 0)
        body = response_type([("t", [entry])], 17).encode()
        tolerant_frame(conn, conn._handle_frame, struct.pack(">i", correlation_id) + body)
        assert future.done()
        assert future.result() == ProduceAnswer([("t", [entry])], 17)
        assert not conn._requests

    _run(test)


def test_aiokafkas_own_requests_are_left_to_aiokafka() -> None:
    async def test() -> None:
        conn = _conn(7)
        conn._versions[3] = (0, 1)
        waiting = conn.send(MetadataRequest([], False))
        assert not answer(conn, b"\x00\x00\x00\x01")  # not ours: aiokafka's frame handler
        assert len(conn._requests) == 1
        waiting.close()

    _run(test)


def test_a_broker_older_than_v3_gets_aiokafkas_send() -> None:
    async def test() -> None:
        conn = _conn(2)
        sent = ProduceLine(conn).send(ProduceRequest(None, -1, 30_000, TOPICS))
        assert asyncio.iscoroutine(sent)  # aiokafka's wait_for
        sent.close()
        assert conn._writer.frames  # written, by aiokafka

    _run(test)
