"""A ProduceRequest written straight to a broker connection, its answer as a plain future.

In mode partition at 10,000 partitions nearly every message is its own request, so what a
request costs in Python is most of kbatch's cost per message there
(docs/findings/partitions-scaling.md). aiokafka's `AIOKafkaConnection.send` builds the
request header through its generic `Struct` types, returns the answer through
`asyncio.wait_for` (a coroutine: a task and a timer per request) and decodes the response
header field by field. The producer core times its requests out itself (the sender's
deadline, after which it closes the connection), so a request here is one `struct.pack`
for the frame and header, the body from `produce_wire`, one write, and a future that the
connection's frame handler answers with `produce_wire`'s decoding.

The connection's own correlation ids and queue of waiting requests (`_requests`) are used,
so requests sent here and through aiokafka's `send` interleave on one connection, and
closing the connection fails the futures of both alike.
"""

from __future__ import annotations

import asyncio
import struct
import time
from typing import Any, NamedTuple

from aiokafka.conn import AIOKafkaConnection, CloseReason
from aiokafka.errors import KafkaConnectionError

from producer_core.engine.transport.produce_wire import (
    FAST_FROM,
    ProduceRequest,
    decode_produce_response,
    encode_produce,
)

PRODUCE_API_KEY = 0
_FRAME_HEAD = struct.Struct(">ihhih")
"""Frame size, then request header v1: api key, api version, correlation id, client id
length."""
_HEAD_AFTER_SIZE = _FRAME_HEAD.size - 4
"""The header bytes the frame size counts (all but the size itself), client id aside."""


class ProduceAnswer(NamedTuple):
    """A ProduceResponse as the engine reads it (the names of aiokafka's response)."""

    topics: list[tuple[str, list[tuple[int, ...]]]]
    throttle_time_ms: int


class ProduceExpected:
    """Stands in a connection's queue of waiting requests for a ProduceResponse of one
    version; the frame handler (`answer`) decodes the response with it."""

    __slots__ = ("version",)

    def __init__(self, version: int) -> None:
        self.version = version

    def decode(self, frame: bytes) -> ProduceAnswer:
        """The response body after its header (a correlation id: header v0)."""
        topics, throttle = decode_produce_response(memoryview(frame)[4:], self.version)
        return ProduceAnswer(topics, throttle)


class ProduceLine:
    """Produce requests on one connection, written straight to its stream."""

    __slots__ = ("conn", "_expected", "_client_id")

    def __init__(self, conn: AIOKafkaConnection) -> None:
        self.conn = conn
        self._expected: ProduceExpected | None = None
        """The negotiated version's stand-in, found at the first send (None: not yet)."""
        client_id = conn._client_id
        self._client_id = b"" if client_id is None else client_id.encode("utf-8")

    def send(self, request: ProduceRequest) -> asyncio.Future[Any] | Any:
        """Write `request`; a future of its `ProduceAnswer`. A broker that negotiates a
        version older than v3 (no transactional id) gets aiokafka's own send."""
        conn = self.conn
        expected = self._expected
        if expected is None:
            version = type(request.prepare(conn._versions)).API_VERSION
            expected = self._expected = ProduceExpected(version)
        if expected.version < FAST_FROM:
            return conn.send(request)
        correlation_id = conn._next_correlation_id()
        body = encode_produce(request._transactional_id, request._required_acks,
                              request._timeout, request._topics)
        client_id = self._client_id
        head = _FRAME_HEAD.pack(_HEAD_AFTER_SIZE + len(client_id) + len(body), PRODUCE_API_KEY,
                                expected.version, correlation_id,
                                len(client_id) if conn._client_id is not None else -1)
        try:
            conn._writer.write(head + client_id + body)
        except OSError as err:  # as aiokafka's send does
            conn.close(reason=CloseReason.CONNECTION_BROKEN)
            raise KafkaConnectionError(
                f"Connection at {conn._host}:{conn._port} broken: {err}") from err
        future = conn._loop.create_future()
        conn._requests.append((correlation_id, expected, future))
        return future


def answer(conn: AIOKafkaConnection, frame: bytes) -> bool:
    """Answer the oldest waiting request if `ProduceLine` sent it (True); False leaves the
    frame to aiokafka. The caller has checked that the frame's correlation id is its."""
    correlation_id, expected, future = conn._requests[0]
    if type(expected) is not ProduceExpected:
        return False
    answer = expected.decode(frame)
    if not future.done():
        future.set_result(answer)
    conn._last_action = time.monotonic()  # aiokafka's idle timer
    conn._requests.popleft()  # after the answer, as aiokafka does: a failure leaves it to close()
    return True
