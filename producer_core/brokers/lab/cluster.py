"""A multi-broker Kafka lab on one machine: N Tansu backends behind the facade.

    with Lab(brokers=3, rtt_ms=1) as lab:
        run(workload, settings, mode, lab.bootstrap)
        lab.request_counts(API_PRODUCE)   # {1: ..., 2: ..., 3: ...}

The facade runs in a child process by default (``facade="thread"`` keeps it in this
process, for a process that does nothing else, like `kbatch lab up`): a facade thread
would share the interpreter lock with a busy engine and add its waits to every emulated
round trip. It binds every node's port first (so a taken port fails before any broker
starts, and no port can be stolen meanwhile), then the backends start; any failure or
interruption on the way stops whatever already runs. ``stop()`` is idempotent and runs
from ``__exit__``; the backends also carry EmbeddedBroker's own guarantees (atexit hook,
kernel parent-death signal), so no process outlives the one that started the lab.
"""

from __future__ import annotations

import contextlib
import socket
import struct
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType

from producer_core.brokers.embedded import EmbeddedBroker
from producer_core.brokers.lab.delay import DelayModel
from producer_core.brokers.lab.facade import Facade
from producer_core.brokers.lab.layout import Layout, Node
from producer_core.brokers.lab.process import FacadeProcess
from producer_core.brokers.lab.shape import validate_shape
from producer_core.errors import BrokerError, UsageError


def replay_frames(host: str, port: int, frames: Sequence[bytes], timeout_s: float) -> None:
    """Send each framed request to ``host:port`` and read its response, one at a time."""
    if not frames:
        return
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as conn:
            for frame in frames:
                conn.sendall(frame)
                (size,) = struct.unpack(">i", _read_exactly(conn, 4))
                _read_exactly(conn, size)
    except OSError as exc:
        raise BrokerError(f"The restarted broker at {host}:{port} did not take the lab's "
                          f"producer ids: {exc}.") from exc


def _read_exactly(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise ConnectionError("connection closed")
        data += chunk
    return data


class Lab:
    """N embedded Tansu brokers presented as one N-node cluster, with optional delay."""

    def __init__(
        self,
        brokers: int = 3,
        rtt_ms: float = 0.0,
        jitter_ms: float = 0.0,
        *,
        base_port: int | None = None,
        host: str = "127.0.0.1",
        assignment: Mapping[str, Sequence[int]] | None = None,
        seed: int | None = None,
        facade: str = "process",
        backend_factory: Callable[[], EmbeddedBroker] | None = None,
    ) -> None:
        validate_shape(brokers, base_port)
        if facade not in ("process", "thread"):
            raise ValueError(f"facade must be 'process' or 'thread', not {facade!r}")
        self._facade_kind = facade
        self.brokers = brokers
        self.base_port = base_port
        self.host = host
        self.delay = DelayModel(rtt_ms, jitter_ms, seed)
        self._assignment = assignment
        self._backend_factory = backend_factory or (lambda: EmbeddedBroker(host=host))
        self._facade: Facade | FacadeProcess | None = None
        self._backends: list[EmbeddedBroker] = []
        self.layout: Layout | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self, timeout_s: float = 15.0) -> Lab:
        if self._facade is not None:
            return self
        ports = None
        if self.base_port is not None:
            ports = [self.base_port + i for i in range(self.brokers)]
        kind = FacadeProcess if self._facade_kind == "process" else Facade
        facade = kind(self.brokers, self.delay, self.host, self._assignment)
        self._facade = facade
        try:
            self.layout = facade.start(ports)
            for _ in range(self.brokers):
                backend = self._backend_factory()
                self._backends.append(backend)
                backend.start(timeout_s)
            facade.set_backends([(b.host, b.port) for b in self._backends])
        except BaseException:
            # Ctrl-C or a failed start: nothing half-started is left behind.
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the facade and every backend; idempotent, safe on a half-started lab."""
        facade, self._facade = self._facade, None
        if facade is not None:
            with contextlib.suppress(Exception):
                facade.stop()
        backends, self._backends = self._backends, []
        for backend in backends:
            with contextlib.suppress(Exception):
                backend.stop()

    def __enter__(self) -> Lab:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # ------------------------------------------------------------------ views

    def _running(self) -> tuple[Facade | FacadeProcess, Layout]:
        if self._facade is None or self.layout is None:
            raise BrokerError("The lab is not running; call start() first.")
        return self._facade, self.layout

    @property
    def nodes(self) -> list[Node]:
        return list(self._running()[1].nodes)

    @property
    def bootstrap(self) -> str:
        """``host:port,...`` of every node (any one of them is enough to bootstrap)."""
        return ",".join(node.address for node in self.nodes)

    @property
    def backends(self) -> list[EmbeddedBroker]:
        """The Tansu processes, backend k serving node k (index k - 1)."""
        return list(self._backends)

    @property
    def pids(self) -> list[int]:
        return [pid for pid in (b.pid for b in self._backends) if pid is not None]

    def node_pid(self, node_id: int) -> int | None:
        """PID of node ``node_id``'s backend while it runs, else None (it died)."""
        return self._backends[node_id - 1].pid

    def restart_node(self, node_id: int, timeout_s: float = 15.0) -> None:
        """Start node ``node_id``'s backend again after it died; the facade reconnects to it.

        The backend stores in memory, so the restarted node starts empty (like a broker
        that lost its disk); the node keeps its id and client-facing port. Every
        InitProducerId the cluster answered is replayed to it first, so it knows the
        producer ids the other nodes handed out.
        """
        facade, _ = self._running()
        if not 1 <= node_id <= len(self._backends):
            raise UsageError(f"No node {node_id}: this lab has nodes 1 to {len(self._backends)}.")
        old = self._backends[node_id - 1]
        if old.running:
            return
        with contextlib.suppress(Exception):
            old.stop()
        backend = self._backend_factory()
        self._backends[node_id - 1] = backend
        backend.start(timeout_s)
        # Backends hand out producer ids in the order they see InitProducerId; the new
        # one has seen none, so an idempotent producer's id would be unknown to it.
        replay_frames(backend.host, backend.port, facade.init_producer_frames(), timeout_s)
        facade.set_backends([(b.host, b.port) for b in self._backends])

    @property
    def facade_alive(self) -> bool:
        facade = self._facade
        if isinstance(facade, FacadeProcess):
            return facade.pid is not None
        return facade is not None and facade.serving

    @property
    def facade_pid(self) -> int | None:
        """PID of the facade's child process (None when it runs as a thread here)."""
        facade = self._facade
        return facade.pid if isinstance(facade, FacadeProcess) else None

    @property
    def running(self) -> bool:
        facade = self._facade
        if facade is None or (isinstance(facade, FacadeProcess) and facade.pid is None):
            return False
        return all(b.running for b in self._backends)

    def leader(self, topic: str, partition: int) -> int:
        return self._running()[1].leader(topic, partition)

    def counts(self) -> dict[int, dict[int, int]]:
        """Requests the facade received: node id -> api key -> count."""
        return self._running()[0].counts()

    def request_counts(self, api_key: int) -> dict[int, int]:
        """Requests of one api key per node id (0: Produce), zeros included."""
        return {node: by_key.get(api_key, 0) for node, by_key in self.counts().items()}

    def reset_counts(self) -> None:
        self._running()[0].reset_counts()

    def errors(self) -> list[str]:
        """Protocol problems that made the facade drop a client connection (none, normally)."""
        return self._running()[0].errors()

    @property
    def description(self) -> str:
        ids = "node 1" if self.brokers == 1 else f"nodes 1-{self.brokers}"
        return (
            f"lab of {self.brokers} embedded Tansu broker{'s' if self.brokers > 1 else ''} "
            f"({ids}, {self.delay.describe()}) at {self.bootstrap}"
        )

    def __repr__(self) -> str:
        state = self.bootstrap if self._facade is not None and self.layout else "stopped"
        return f"Lab(brokers={self.brokers}, {state})"
