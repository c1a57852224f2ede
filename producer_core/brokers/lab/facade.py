"""The lab facade: N listening ports that present N single-node backends as one cluster.

Node k listens on its own loopback port. A client connection on node k gets a connection
to backend k, and every request it sends is forwarded there unchanged, so a Produce or
Fetch for a partition reaches the backend of the node that "leads" it. The exceptions:
topic creation and deletion go to every backend (answers merged), and a Metadata request
that names topics goes to every backend too (Tansu creates unknown topics on Metadata, and
that must happen everywhere or nowhere); the client gets backend k's answer. So does
InitProducerId: every backend then knows the idempotent producer's id (they hand ids out
in the same order, since every InitProducerId reaches them all). Responses
that name brokers are rewritten (``protocol``), and every response is held back by the
delay model (``delay``) while keeping the connection's order.

The facade runs its own asyncio loop in a daemon thread, so sync code (the CLI, tests)
and an engine with its own loop can use it alike. Counts of requests per node and api key
are taken as requests arrive, before they are forwarded.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import struct
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import producer_core.brokers.lab.protocol as protocol
from producer_core.brokers.lab.delay import DelayModel, OrderedRelease
from producer_core.brokers.lab.layout import Layout, Node
from producer_core.errors import BrokerError
from producer_core.loop_thread import LoopThread

_SIZE = struct.Struct(">i")
API_INIT_PRODUCER_ID = 22
MAX_FRAME_BYTES = 128 * 1024 * 1024
#: StreamReader buffer limit: asyncio pauses reading at twice this, so with the 64 KiB
#: default a 1 MB ProduceRequest arrives in many pause/resume rounds; large frames are
#: the normal case here.
_STREAM_LIMIT = 16 * 1024 * 1024


@dataclass
class _Pending:
    """A request whose response the client is waiting for, in the connection's order."""

    info: protocol.RequestInfo
    replies: list[asyncio.Future[tuple[bytes, float]]]
    key: str | None = None
    merge: bool = False


class _BackendLink:
    """One connection to a backend; replies are matched to requests by correlation id."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writer = writer
        self._loop = asyncio.get_running_loop()
        self._waiting: dict[int, asyncio.Future[tuple[bytes, float]]] = {}
        self._closed: BaseException | None = None
        self._task = asyncio.ensure_future(self._read(reader))

    async def send(
        self, data: bytes, correlation_id: int | None
    ) -> asyncio.Future[tuple[bytes, float]] | None:
        if self._closed is not None:
            raise ConnectionError(f"backend connection lost: {self._closed}")
        future = None
        if correlation_id is not None:
            future = self._loop.create_future()
            self._waiting[correlation_id] = future
        self._writer.write(data)
        await self._writer.drain()
        return future

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                (size,) = _SIZE.unpack(await reader.readexactly(4))
                frame = await reader.readexactly(size)
                future = self._waiting.pop(_SIZE.unpack_from(frame)[0], None)
                if future is not None and not future.done():
                    future.set_result((frame, self._loop.time()))
        except (asyncio.IncompleteReadError, ConnectionError, OSError) as exc:
            self._fail(exc)
        except asyncio.CancelledError:
            self._fail(ConnectionError("closed"))
            raise

    def _fail(self, exc: BaseException) -> None:
        self._closed = exc
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(ConnectionError(f"backend connection lost: {exc}"))
        self._waiting.clear()

    def close(self) -> None:
        self._task.cancel()
        self._writer.close()


class Facade:
    """The N-node front of a lab (see the module docstring)."""

    def __init__(
        self,
        nodes: int,
        delay: DelayModel | None = None,
        host: str = "127.0.0.1",
        assignment: Mapping[str, Sequence[int]] | None = None,
    ) -> None:
        self.host = host
        self._node_count = nodes
        self._delay = delay or DelayModel()
        self._assignment = assignment
        self.layout: Layout | None = None
        self._backends: dict[int, tuple[str, int]] = {}
        self._lock = threading.Lock()
        self._counts: dict[int, Counter[int]] = {n: Counter() for n in range(1, nodes + 1)}
        self._connections: Counter[int] = Counter()
        self._errors: list[str] = []
        self._init_producer_frames: list[bytes] = []
        self._runner = LoopThread("kbatch-lab-facade")
        self._servers: list[asyncio.Server] = []
        self._tasks: set[asyncio.Task[Any]] = set()

    # ------------------------------------------------------------------ public API

    def start(self, ports: Sequence[int] | None = None, timeout_s: float = 5.0) -> Layout:
        """Listen on one port per node (0 or None: the OS picks) and return the layout.

        Every port is bound before this returns, so nothing can take them while the
        backends start. A taken port fails with all taken ports named.
        """
        if self._runner.running:
            assert self.layout is not None
            return self.layout
        wanted = list(ports) if ports is not None else [0] * self._node_count
        self.layout = self._runner.start(
            lambda: self._listen(wanted), timeout_s,
            BrokerError("The lab facade did not start listening in time."))
        return self.layout

    def set_backends(self, backends: Sequence[tuple[str, int]]) -> None:
        """Backend k (1-based, in order) serves node k; connections made before wait."""
        if len(backends) != self._node_count:
            raise ValueError(f"need {self._node_count} backends, got {len(backends)}")
        with self._lock:
            # tuple(b): the (host, port) pair itself, as a tuple (a list is accepted too)
            self._backends = {
                i + 1: tuple(b) for i, b in enumerate(backends)}  # type: ignore[misc]  # see above

    def counts(self) -> dict[int, dict[int, int]]:
        """Requests received so far: node id -> api key -> count."""
        with self._lock:
            return {node: dict(counter) for node, counter in self._counts.items()}

    def connections(self) -> dict[int, int]:
        """Client connections accepted so far, per node."""
        with self._lock:
            return {n: self._connections[n] for n in self._counts}

    def errors(self) -> list[str]:
        """Protocol problems that made the facade drop a client connection."""
        with self._lock:
            return list(self._errors)

    def init_producer_frames(self) -> list[bytes]:
        """Every InitProducerId request the cluster got, framed, in order (see ``replay``)."""
        with self._lock:
            return list(self._init_producer_frames)

    def reset_counts(self) -> None:
        with self._lock:
            for counter in self._counts.values():
                counter.clear()
            self._connections.clear()

    @property
    def serving(self) -> bool:
        return self._runner.running

    def stop(self, timeout_s: float = 5.0) -> None:
        """Close the listeners and every connection, then end the loop thread; idempotent."""
        self._runner.stop(self._shutdown, timeout_s)

    # ------------------------------------------------------------------ internals

    async def _listen(self, ports: list[int]) -> Layout:
        taken: list[int] = []
        nodes: list[Node] = []
        try:
            for index, port in enumerate(ports):
                node_id = index + 1
                try:
                    server = await asyncio.start_server(
                        partial(self._accept, node_id),
                        self.host, port, backlog=1024, reuse_address=True,
                        limit=_STREAM_LIMIT,
                    )
                except OSError as exc:
                    if exc.errno == errno.EADDRINUSE:
                        taken.append(port)
                        continue
                    raise BrokerError(
                        f"The lab cannot listen on {self.host}:{port}: {exc.strerror or exc}."
                    ) from exc
                self._servers.append(server)
                bound = int(server.sockets[0].getsockname()[1])
                nodes.append(Node(node_id, self.host, bound))
            if taken:
                listed = ", ".join(str(p) for p in taken)
                raise BrokerError(
                    f"Port{'s' if len(taken) > 1 else ''} {listed} on {self.host} "
                    f"{'are' if len(taken) > 1 else 'is'} already in use, so the lab cannot "
                    f"listen there (node k listens on base port + k - 1). Pick another "
                    "--base-port, stop whatever holds the port, or leave --base-port out to "
                    "let kbatch choose free ports."
                )
            return Layout(nodes, self._assignment)
        except BaseException:
            for server in self._servers:
                server.close()
            self._servers.clear()
            raise

    async def _shutdown(self) -> None:
        for server in self._servers:
            server.close()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _count(self, node_id: int, api_key: int) -> None:
        with self._lock:
            self._counts[node_id][api_key] += 1

    def _error(self, node_id: int, message: str) -> None:
        with self._lock:
            self._errors.append(f"node {node_id}: {message}")

    async def _accept(
        self, node_id: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        with self._lock:
            self._connections[node_id] += 1
        links: dict[int, _BackendLink] = {}
        pending: asyncio.Queue[_Pending] = asyncio.Queue()
        requests = asyncio.ensure_future(self._requests(node_id, reader, links, pending))
        responses = asyncio.ensure_future(
            self._responses(node_id, writer, pending, self._delay.connection()))
        try:
            # Either side ending ends the connection: Kafka never half-closes.
            await asyncio.wait({requests, responses}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            pass  # stop(): end quietly (the server's done-callback dislikes a cancelled task)
        finally:
            for part in (requests, responses):
                part.cancel()
            await asyncio.gather(requests, responses, return_exceptions=True)
            for link in links.values():
                link.close()
            writer.close()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await writer.wait_closed()
            self._tasks.discard(task)

    async def _link(self, links: dict[int, _BackendLink], node_id: int) -> _BackendLink:
        link = links.get(node_id)
        if link is None:
            while True:
                with self._lock:
                    backend = self._backends.get(node_id)
                if backend is not None:
                    break
                await asyncio.sleep(0.05)  # the lab is still starting its backends
            reader, writer = await asyncio.open_connection(*backend, limit=_STREAM_LIMIT)
            link = links[node_id] = _BackendLink(reader, writer)
        return link

    async def _requests(
        self, node_id: int, reader: asyncio.StreamReader, links: dict[int, _BackendLink],
        pending: asyncio.Queue[_Pending],
    ) -> None:
        assert self.layout is not None
        try:
            while True:
                size_bytes = await reader.readexactly(4)
                (size,) = _SIZE.unpack(size_bytes)
                if not 0 < size <= MAX_FRAME_BYTES:
                    self._error(node_id, f"request frame size {size} is out of range")
                    return
                frame = await reader.readexactly(size)
                try:
                    info = protocol.parse_request(frame)
                    self._count(node_id, info.api_key)
                    targets, key = self._route(node_id, info, frame)
                    expects = protocol.expects_response(info, frame)
                except (protocol.ProtocolError, struct.error, ValueError) as exc:
                    self._error(node_id, str(exc))
                    return
                data = size_bytes + frame
                if info.api_key == API_INIT_PRODUCER_ID:
                    with self._lock:
                        self._init_producer_frames.append(data)
                replies = []
                for target in targets:
                    link = await self._link(links, target)
                    reply = await link.send(data, info.correlation_id if expects else None)
                    if reply is not None:
                        replies.append(reply)
                if expects:
                    pending.put_nowait(_Pending(info, replies, key, len(targets) > 1))
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            return

    def _route(
        self, node_id: int, info: protocol.RequestInfo, frame: bytes
    ) -> tuple[list[int], str | None]:
        """Backends a request goes to (the node's own first) and the coordinator key."""
        everyone = [node_id, *(n for n in self._counts if n != node_id)]
        if info.api_key in protocol.FAN_OUT_APIS:
            protocol.check_version(info.api_key, info.api_version)
            return everyone, None
        if info.api_key == protocol.API_METADATA and protocol.metadata_topics(info, frame):
            return everyone, None
        if info.api_key == API_INIT_PRODUCER_ID:  # producer ids are cluster-wide
            return everyone, None
        if info.api_key == protocol.API_FIND_COORDINATOR:
            return [node_id], protocol.coordinator_key(info, frame)
        return [node_id], None

    async def _responses(
        self, node_id: int, writer: asyncio.StreamWriter, pending: asyncio.Queue[_Pending],
        clock: OrderedRelease,
    ) -> None:
        assert self.layout is not None
        loop = asyncio.get_running_loop()
        try:
            while True:
                item = await pending.get()
                replies = await asyncio.gather(*item.replies)
                frames = [frame for frame, _ in replies]
                try:
                    if item.merge and item.info.api_key in protocol.FAN_OUT_APIS:
                        frame = protocol.merge_topic_results(item.info, frames)
                    else:
                        frame = protocol.rewrite_response(
                            item.info, frames[0], self.layout, item.key)
                except protocol.ProtocolError as exc:
                    self._error(node_id, str(exc))
                    return
                release = clock.release_at(max(t for _, t in replies))
                wait = release - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                writer.write(_SIZE.pack(len(frame)) + frame)
                await writer.drain()
        except (ConnectionError, OSError):
            return
