"""The life of a Kafka cluster kbatch starts node by node, whatever a node is.

A node is a JVM process on loopback (``kafka.KafkaCluster``, ``--broker kafka``) or a
container (``docker.DockerKafkaCluster``, ``--broker docker``). What does not depend on
that lives here once: the node ids and cluster id, the description, starting every node
and waiting until each serves Metadata listing them all (stopping what started if not),
starting, stopping and restarting one node, whether all run, and stopping every live
cluster when Python exits. A backend says only how its nodes are launched, stopped,
killed, probed and seen to have died.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import os
import socket
import time
import uuid
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Self

from producer_core.brokers import check_kafka_nodes
from producer_core.brokers.probe import metadata_brokers
from producer_core.errors import BrokerError

_LIVE: weakref.WeakSet[NodeCluster] = weakref.WeakSet()


@atexit.register
def _stop_all_at_exit() -> None:
    """Last line of defence on a normal interpreter exit: stop every cluster we started."""
    for cluster in list(_LIVE):
        with contextlib.suppress(Exception):
            cluster.stop_at_exit()


def new_cluster_id(random_uuid: Callable[[], uuid.UUID] = uuid.uuid4) -> str:
    """A KRaft cluster id: a random UUID in URL-safe base64 that does not start with '-'
    (the storage tool would read such an id as an option; one in 64 would, so Kafka's own
    Uuid.randomUuid draws again, and so do we)."""
    while True:
        text = base64.urlsafe_b64encode(random_uuid().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def free_ports(host: str, count: int) -> list[int]:
    """``count`` distinct ports free right now: all bound at once, so none repeats."""
    socks = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            socks.append(sock)
            sock.bind((host, 0))
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for sock in socks:
            sock.close()


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (one of another user's counts as alive): what the
    sweeps of a killed kbatch's leftovers ask of the owner's pid."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class NodeCluster(ABC):
    """Apache Kafka of ``nodes`` (1 or 3) combined broker+controller KRaft nodes, clients on
    ``host``. Subclasses implement the abstract methods for their kind of node."""

    host: str
    #: ``--broker`` name of this route (in the refusal of a node count).
    ROUTE = "kafka"
    #: Between "Apache Kafka <version>" and the node count in the description.
    WHERE = ""
    #: How errors name nodes that are not running or not ready.
    NOT_RUNNING = "The Kafka cluster is not running"
    NODES_NOUN = "Kafka node(s)"
    START_TIMEOUT_S = 120.0
    NODE_START_TIMEOUT_S = 60.0
    #: The first pause between readiness probes (it grows by half up to 0.5 s).
    FIRST_POLL_S = 0.1

    def __init__(self, nodes: int) -> None:
        check_kafka_nodes(self.ROUTE, nodes)
        self.nodes = nodes
        self.cluster_id = new_cluster_id()
        self.start_time_s: float | None = None

    # ------------------------------------------------------------------ what a backend says

    @property
    @abstractmethod
    def version(self) -> str:
        """Kafka's release the nodes run."""

    @property
    @abstractmethod
    def started(self) -> bool:
        """Whether the nodes were launched (and not stopped since)."""

    @abstractmethod
    def _layout(self) -> str:
        """What the description says after the node count (node ids, the image)."""

    @abstractmethod
    def _client_ports(self) -> list[int]:
        """Every node's client port as clients are told it (a relay's, if one is in front)."""

    @abstractmethod
    def _probe_port(self, node_id: int) -> int:
        """The port the readiness probe asks the node itself on."""

    @abstractmethod
    def _prepare(self) -> None:
        """What comes before the start clock runs (find Kafka, say what starts)."""

    @abstractmethod
    def _launch_nodes(self) -> None:
        """Launch every node (they become ready later)."""

    @abstractmethod
    def _exit_reason(self, node_id: int) -> str | None:
        """Why the node cannot become ready (it exited), or None while it may."""

    @abstractmethod
    def _node_running(self, node_id: int) -> bool: ...

    @abstractmethod
    def _bring_up(self, node_id: int) -> bool:
        """Start a stopped, killed or paused node again; whether to wait for it."""

    @abstractmethod
    def stop_node(self, node_id: int, timeout_s: float = 30.0) -> None:
        """Shut one node down politely (SIGTERM: controlled shutdown), SIGKILL if it hangs;
        its data stays for a restart."""

    @abstractmethod
    def kill_node(self, node_id: int) -> None:
        """SIGKILL one node, like a crashed machine; its data stays for a restart."""

    @abstractmethod
    def log_tail(self, node_id: int, lines: int = 25) -> str: ...

    @abstractmethod
    def stop(self) -> None:
        """Stop every node and remove what the cluster made; idempotent, never leaves a
        node behind. Ends with ``_forget()``."""

    def stop_at_exit(self) -> None:
        """``stop`` as the interpreter exits (a backend may hurry it)."""
        self.stop()

    @contextlib.contextmanager
    def _start_errors(self) -> Iterator[None]:
        """Around launching and waiting: a backend may turn its library's errors into
        BrokerError here."""
        yield

    # ------------------------------------------------------------------ views

    @property
    def node_ids(self) -> list[int]:
        return list(range(1, self.nodes + 1))

    @property
    def bootstrap(self) -> str:
        """Every node's client address (any one is enough to bootstrap)."""
        self._require_started()
        return ",".join(f"{self.host}:{port}" for port in self._client_ports())

    @property
    def description(self) -> str:
        kind = "broker" if self.nodes == 1 else "brokers"
        return (f"Apache Kafka {self.version}{self.WHERE} ({self.nodes} KRaft {kind}, "
                f"{self._layout()}) at {self.bootstrap}")

    def all_running(self) -> bool:
        """Whether every node runs (a lab stops when one does not)."""
        return self.started and all(self._node_running(i) for i in self.node_ids)

    def _require_started(self) -> None:
        if not self.started:
            raise BrokerError(f"{self.NOT_RUNNING}; call start() first.")

    # ------------------------------------------------------------------ lifecycle

    def start(self, timeout_s: float | None = None) -> Self:
        """Launch every node and wait until all serve Metadata listing them all; whatever
        fails (Ctrl-C included) stops what started, so nothing half-started is left."""
        if self.started:
            return self
        self._prepare()
        began = time.monotonic()
        _LIVE.add(self)
        try:
            with self._start_errors():
                self._launch_nodes()
                self._wait_ready(self.node_ids,
                                 began + (timeout_s if timeout_s is not None
                                          else self.START_TIMEOUT_S))
        except BaseException:
            self.stop()
            raise
        self.start_time_s = time.monotonic() - began
        return self

    def _forget(self) -> None:
        """The cluster is stopped: the exit hook need not stop it."""
        _LIVE.discard(self)

    def running_count(self) -> int:
        """How many nodes run now (a node started again waits for these, not for all)."""
        return sum(1 for i in self.node_ids if self._node_running(i))

    def _wait_ready(self, node_ids: list[int], deadline: float,
                    expect: Callable[[], int] | None = None) -> None:
        """Until every node in ``node_ids`` answers Metadata listing all nodes (``expect``:
        how many it must list, asked on every probe; default every node of the cluster)."""
        waiting = list(node_ids)
        delay = self.FIRST_POLL_S
        wanted = self.nodes
        while waiting:
            wanted = expect() if expect is not None else self.nodes
            for node_id in list(waiting):
                exited = self._exit_reason(node_id)
                if exited is not None:
                    raise BrokerError(f"{exited}. Last lines of its log:\n"
                                      f"{self.log_tail(node_id)}")
                count = metadata_brokers(self.host, self._probe_port(node_id), 1.0, version=4)
                if count is not None and count >= wanted:
                    waiting.remove(node_id)
            if not waiting:
                return
            if time.monotonic() > deadline:
                which = "all" if wanted == self.nodes else "the running"
                raise BrokerError(
                    f"{self.NODES_NOUN} {waiting} did not serve Metadata with {which} {wanted} "
                    f"node(s) in time. Last lines of node {waiting[0]}'s log:\n"
                    f"{self.log_tail(waiting[0])}")
            time.sleep(delay)
            delay = min(delay * 1.5, 0.5)

    def start_node(self, node_id: int, timeout_s: float | None = None) -> None:
        """Start a stopped, killed or paused node again on its data and port; wait until it
        serves Metadata listing the nodes that run (with another node down, all of them
        never will: waiting for all made a restart fail although the node served)."""
        if self._bring_up(node_id):
            self._wait_ready([node_id], time.monotonic() + (
                timeout_s if timeout_s is not None else self.NODE_START_TIMEOUT_S),
                expect=self.running_count)

    def restart_node(self, node_id: int, timeout_s: float | None = None) -> None:
        """Stop the node politely (SIGTERM: controlled shutdown) and start it again."""
        self.stop_node(node_id)
        self.start_node(node_id, timeout_s)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
