"""Per-broker delaying relays: the lab's round trip in front of real brokers.

A real cluster (Apache Kafka, ``--broker kafka``) needs no facade: its nodes lead their own
partitions. To add the lab's round trip anyway, each node gets a relay port that it
*advertises* as its client address, so every client connection, bootstrap and later ones,
goes through the relay. A relay forwards requests at once and holds every response by the
lab's delay model (``delay.DelayModel``, the same per-connection ``OrderedRelease`` as the
facade), so requests in flight overlap as on a real network and order is kept.

The ports are bound first (``start``), the brokers started advertising them, and then the
relays are pointed at the brokers (``set_upstreams``). The relays run on their own event
loop in a daemon thread of this process; like a facade thread, they share the interpreter
lock with an engine in the same process, which can add to small emulated round trips.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import Sequence
from functools import partial

from producer_core.brokers.lab.delay import DelayModel
from producer_core.errors import BrokerError
from producer_core.loop_thread import LoopThread

_SIZE = struct.Struct(">i")
_CHUNK = 256 * 1024
_STREAM_LIMIT = 16 * 1024 * 1024


class DelayRelays:
    """``count`` loopback relays; relay k forwards to upstream k with the lab's delay."""

    def __init__(self, count: int, delay: DelayModel, host: str = "127.0.0.1") -> None:
        self.count = count
        self.delay = delay
        self.host = host
        self.ports: list[int] = []
        self._upstreams: list[tuple[str, int]] | None = None
        self._servers: list[asyncio.Server] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._thread = LoopThread("kbatch-delay-relays")

    def start(self) -> list[int]:
        """Bind every relay's port (the OS picks them) and return them, node order."""
        self.ports = self._thread.start(
            self._listen, 10.0, BrokerError("The delay relays did not start within 10 s."))
        return list(self.ports)

    def set_upstreams(self, upstreams: Sequence[tuple[str, int]]) -> None:
        """Where relay k forwards to; connections accepted before this wait for it."""
        if len(upstreams) != self.count:
            raise ValueError(f"{len(upstreams)} upstreams for {self.count} relays")
        self._upstreams = list(upstreams)

    def stop(self) -> None:
        self._thread.stop(self._shutdown, 5.0)

    async def _listen(self) -> list[int]:
        ports = []
        for index in range(self.count):
            server = await asyncio.start_server(
                partial(self._serve, index), self.host, 0, limit=_STREAM_LIMIT)
            self._servers.append(server)
            ports.append(int(server.sockets[0].getsockname()[1]))
        return ports

    async def _shutdown(self) -> None:
        for server in self._servers:
            server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(self, index: int, reader: asyncio.StreamReader,
                     writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        up_writer = None
        try:
            while self._upstreams is None:
                await asyncio.sleep(0.01)
            host, port = self._upstreams[index]
            up_reader, up_writer = await asyncio.open_connection(host, port,
                                                                 limit=_STREAM_LIMIT)
            queue: asyncio.Queue[tuple[float, bytes] | None] = asyncio.Queue()
            pumps = [asyncio.ensure_future(_copy(reader, up_writer)),
                     asyncio.ensure_future(self._responses(up_reader, queue)),
                     asyncio.ensure_future(_release(queue, writer))]
            try:
                await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for pump in pumps:
                    pump.cancel()
                await asyncio.gather(*pumps, return_exceptions=True)
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            for w in (writer, up_writer):
                if w is not None:
                    with contextlib.suppress(Exception):
                        w.close()
            self._tasks.discard(task)

    async def _responses(self, reader: asyncio.StreamReader,
                         queue: asyncio.Queue[tuple[float, bytes] | None]) -> None:
        """Frame the broker's responses and stamp each with its release time on arrival."""
        loop = asyncio.get_running_loop()
        release = self.delay.connection()
        try:
            while True:
                head = await reader.readexactly(4)
                body = await reader.readexactly(_SIZE.unpack(head)[0])
                queue.put_nowait((release.release_at(loop.time()), head + body))
        except (asyncio.IncompleteReadError, OSError):
            queue.put_nowait(None)
            raise


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while data := await reader.read(_CHUNK):
        writer.write(data)
        await writer.drain()


async def _release(queue: asyncio.Queue[tuple[float, bytes] | None],
                   writer: asyncio.StreamWriter) -> None:
    loop = asyncio.get_running_loop()
    while (item := await queue.get()) is not None:
        when, frame = item
        wait = when - loop.time()
        if wait > 0:
            await asyncio.sleep(wait)
        writer.write(frame)
        await writer.drain()
