"""A counting TCP proxy: proves on the wire how many Kafka requests a client sent.

Client-side counters (aiokafka's or ours) can lie about batching; the bytes a broker
receives cannot. The proxy forwards every byte unchanged in both directions and parses
only the client->broker stream's frame headers (4-byte big-endian length, then int16
api_key, int16 api_version, int32 correlation_id), tallying requests by api_key.

It runs its own asyncio loop in a daemon thread so sync tests and async tests (which
own a different loop) can both use it.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import threading
from collections import Counter
from types import TracebackType
from typing import Any

from producer_core.loop_thread import LoopThread

__all__ = ["API_FETCH", "API_METADATA", "API_PRODUCE", "CountingProxy", "FrameCounter",
           "produce_frames_of"]

API_PRODUCE = 0
API_FETCH = 1
API_METADATA = 3

_CHUNK = 256 * 1024


def produce_frames_of(results: Any) -> int:
    """The Produce frames a run puts on the wire: its `requests_sent`, and before its
    clock the priming requests (`producer_core.engine.transport.priming`, `results.priming`)."""
    return results.requests_sent + (results.priming or {}).get("requests", 0)
_HEADER = struct.Struct(">ihh")  # size, api_key, api_version


class FrameCounter:
    """Incremental Kafka request-frame parser for one connection's client->broker bytes.

    Feed it chunks exactly as they arrive; frames may be split across chunks at any
    byte, and one chunk may hold many pipelined frames.
    """

    def __init__(self) -> None:
        self._header = bytearray()
        self._skip = 0  # body bytes of the current frame still to pass over

    def feed(self, data: bytes | bytearray | memoryview) -> list[tuple[int, int]]:
        """Consume a chunk; return (api_key, api_version) of each frame header completed."""
        found: list[tuple[int, int]] = []
        view = memoryview(data)
        pos, end = 0, len(view)
        while pos < end:
            if self._skip:
                step = min(self._skip, end - pos)
                self._skip -= step
                pos += step
                continue
            need = _HEADER.size - len(self._header)
            take = view[pos : pos + need]
            self._header += take
            pos += len(take)
            if len(self._header) == _HEADER.size:
                size, api_key, api_version = _HEADER.unpack(self._header)
                self._header.clear()
                found.append((api_key, api_version))
                # size counts everything after the length prefix; 4 of it already read.
                self._skip = max(size - 4, 0)
        return found


class CountingProxy:
    """TCP proxy on 127.0.0.1:listen_port -> upstream, counting requests by api_key.

    ``listen_port=0`` lets the OS pick (read ``port`` after ``start()``). The upstream
    can be set after start with ``set_upstream()``, so a broker can be told to
    advertise the proxy's port before the broker itself has a port.
    """

    def __init__(
        self,
        upstream_host: str = "127.0.0.1",
        upstream_port: int | None = None,
        listen_port: int = 0,
        listen_host: str = "127.0.0.1",
    ) -> None:
        self.listen_host = listen_host
        self._listen_port = listen_port
        self._upstream: tuple[str, int] | None = (
            (upstream_host, upstream_port) if upstream_port is not None else None
        )
        self._lock = threading.Lock()
        self._counts: Counter[int] = Counter()
        self._versions: Counter[tuple[int, int]] = Counter()
        self._connections = 0
        self._runner = LoopThread("counting-proxy")
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._port: int | None = None

    # ------------------------------------------------------------------ public API

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("CountingProxy is not started")
        return self._port

    @property
    def address(self) -> str:
        """``host:port`` clients should bootstrap against."""
        return f"{self.listen_host}:{self.port}"

    def set_upstream(self, host: str, port: int) -> None:
        """Point new connections at host:port (existing ones keep their upstream)."""
        with self._lock:
            self._upstream = (host, port)

    def counts(self) -> dict[int, int]:
        """Snapshot of requests seen so far, by api_key."""
        with self._lock:
            return dict(self._counts)

    def version_counts(self) -> dict[tuple[int, int], int]:
        """Snapshot of requests seen so far, by (api_key, api_version)."""
        with self._lock:
            return dict(self._versions)

    @property
    def produce_requests(self) -> int:
        """Produce (api key 0) requests seen so far."""
        with self._lock:
            return self._counts[API_PRODUCE]

    @property
    def connections(self) -> int:
        """Client connections accepted so far."""
        with self._lock:
            return self._connections

    def reset(self) -> None:
        """Zero the counters (e.g. after setup traffic such as topic creation)."""
        with self._lock:
            self._counts.clear()
            self._versions.clear()
            self._connections = 0

    def start(self, timeout_s: float = 5.0) -> CountingProxy:
        """Start the loop thread and listen; returns once the port is bound."""
        if not self._runner.running:
            self._runner.start(self._listen, timeout_s,
                               RuntimeError("CountingProxy did not start listening in time"))
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        """Close the listener and every proxied connection, then end the thread."""
        self._runner.stop(self._shutdown, timeout_s)

    def __enter__(self) -> CountingProxy:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # ------------------------------------------------------------------ internals

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(
            self._handle, self.listen_host, self._listen_port, backlog=1024
        )
        self._port = int(self._server.sockets[0].getsockname()[1])

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        with self._lock:
            self._connections += 1
            upstream = self._upstream
        up_writer: asyncio.StreamWriter | None = None
        try:
            if upstream is None:
                return
            try:
                up_reader, up_writer = await asyncio.open_connection(*upstream)
            except OSError:
                return
            to_broker = asyncio.ensure_future(self._pump(reader, up_writer, FrameCounter()))
            to_client = asyncio.ensure_future(self._pump(up_reader, writer, None))
            try:
                # Either side closing ends the connection: Kafka never half-closes.
                await asyncio.wait({to_broker, to_client}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for pump in (to_broker, to_client):
                    pump.cancel()
                await asyncio.gather(to_broker, to_client, return_exceptions=True)
        finally:
            # Close both before awaiting either: a stop() cancelling us mid-await must
            # not leave the second socket open.
            writers = [w for w in (writer, up_writer) if w is not None]
            for w in writers:
                w.close()
            for w in writers:
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await w.wait_closed()
            self._tasks.discard(task)

    async def _pump(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        counter: FrameCounter | None,
    ) -> None:
        try:
            while True:
                data = await reader.read(_CHUNK)
                if not data:
                    return
                if counter is not None:
                    # Count before forwarding, so a response the client has received
                    # implies its request is already in the counts.
                    frames = counter.feed(data)
                    if frames:
                        with self._lock:
                            for api_key, api_version in frames:
                                self._counts[api_key] += 1
                                self._versions[(api_key, api_version)] += 1
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            return
