"""Real Apache Kafka (KRaft) on loopback: 1 or 3 combined broker+controller JVMs.

    with KafkaCluster(nodes=3) as kafka:
        run(workload, settings, mode, kafka.bootstrap)
        kafka.kill_node(2); kafka.start_node(2)       # leader-change fault tests

Each node is one ``java ... kafka.Kafka server.properties`` process with
``process.roles=broker,controller`` and a static controller quorum of all nodes (3 nodes =
a real Raft quorum). Every node has its own temporary data directory, formatted by us
with ``kafka.tools.StorageTool format``, and three loopback ports: CLIENT (what clients
use; it may advertise another port, e.g. a delaying proxy's), INTERNAL (replication
between brokers, never proxied) and CONTROLLER. ``extra_listeners`` adds listeners with
their own ports (for SASL/SSL), ``server_properties`` adds or overrides any property; its
values may name ``{node_id}``, ``{host}``, ``{data_dir}`` and ``{port:NAME}`` (the port
of listener NAME on this node).

No JVM may outlive the Python process that started it, and no data directory may stay
behind. The layers, as for the embedded Tansu broker (``embedded.py``): ``stop()`` on
every exit of the ``with`` (SIGTERM, then SIGKILL), an ``atexit`` hook, the kernel's
parent-death signal (SIGKILL) for a parent that is itself SIGKILLed, and the children run
in their own session so a terminal Ctrl-C reaches only Python. A parent killed outright
cannot remove its directory; each directory names its owner's pid and the next start
removes those whose owner is gone.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from producer_core.brokers.child_process import SPAWNER, pdeathsig_preexec
from producer_core.brokers.kafka_dist import KafkaDist, resolve
from producer_core.brokers.node_cluster import NodeCluster, free_ports, pid_alive
from producer_core.errors import BrokerError, UsageError

__all__ = ["DIR_PREFIX", "KafkaCluster"]

DIR_PREFIX = "kbatch-kafka-"
#: Sized for a 2-core, 24 GB machine that also runs the load generator: 1 GB per node.
DEFAULT_HEAP = "1g"
JVM_FLAGS = ("-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:+ExitOnOutOfMemoryError",
             "-Djava.awt.headless=true")
#: Fewer threads than Kafka's defaults (3 network, 8 io): this machine has two cores.
BASE_PROPERTIES = {
    "num.network.threads": "2",
    "num.io.threads": "4",
    "num.partitions": "1",
    "group.initial.rebalance.delay.ms": "0",
    "log.segment.bytes": str(64 * 1024 * 1024),
    "auto.create.topics.enable": "true",
    # A node keeps a file open per partition, and a deleted topic's (or segment's) files
    # until this delay has passed (Kafka's default: 60 s; a topic's file.delete.delay.ms
    # defaults to it). A topic created meanwhile needs
    # as many again: past the open-files limit (`ulimit -n`, 20,000 on the machines this
    # runs on) the node fails to take the new partitions over and refuses them until it
    # restarts (10,000 partitions deleted, then created again). One second frees them
    # before the next run's topic; the deleting task's first round (like the node's other
    # log tasks) comes 1 s after the start instead of 30 s.
    "log.segment.delete.delay.ms": "1000",
    "log.initial.task.delay.ms": "1000",
}
_LOG_TAIL_LINES = 25
_LOG4J = """\
status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.out.ref = OUT
logger.server.name = kafka.server.KafkaRaftServer
logger.server.level = INFO
"""

@dataclass
class _Node:
    node_id: int
    data_dir: Path
    ports: dict[str, int]  # listener name -> port
    advertised_port: int
    proc: subprocess.Popen[bytes] | None = None
    log: IO[bytes] | None = field(default=None, repr=False)
    metrics_port: int | None = None
    """The JMX exporter's /metrics port (None: no exporter on this node)."""

    @property
    def log_path(self) -> Path:
        return self.data_dir / "server.log"


class KafkaCluster(NodeCluster):
    """Apache Kafka on 127.0.0.1, ``nodes`` combined broker+controller processes."""

    def __init__(
        self,
        nodes: int = 1,
        *,
        host: str = "127.0.0.1",
        kafka_home: str | Path | None = None,
        heap: str = DEFAULT_HEAP,
        server_properties: Mapping[str, str] | None = None,
        extra_listeners: Mapping[str, str] | None = None,
        advertised_ports: Mapping[int, int] | None = None,
        progress: Callable[[str], None] | None = None,
        dist: KafkaDist | None = None,
        format_args: Sequence[str] = (),
        metrics_exporter: bool = False,
    ) -> None:
        super().__init__(nodes)
        self.host = host
        self.heap = heap
        self._kafka_home = kafka_home
        self._properties = dict(server_properties or {})
        self._extra_listeners = dict(extra_listeners or {})
        self._advertised = dict(advertised_ports or {})
        self._progress = progress
        self._dist = dist
        self._format_args = tuple(format_args)  # e.g. --add-scram for SCRAM users
        self._metrics_exporter = metrics_exporter  # brokers.jmx_exporter on each node
        self._exporter_jar: Path | None = None
        self.metrics_warning: str | None = None
        """Why the nodes have no metrics endpoint although one was asked for."""
        self._root: Path | None = None
        self._nodes: dict[int, _Node] = {}

    # ------------------------------------------------------------------ views

    @property
    def version(self) -> str:
        return self._distribution().version

    @property
    def started(self) -> bool:
        return bool(self._nodes)

    def _client_ports(self) -> list[int]:
        """Every node's CLIENT port as advertised (a relay's, with a delay)."""
        return [n.advertised_port for n in self._nodes.values()]

    def _probe_port(self, node_id: int) -> int:
        return self._nodes[node_id].ports["CLIENT"]

    def listener_bootstrap(self, name: str) -> str:
        """Bootstrap servers of one listener (``CLIENT`` or a name from ``extra_listeners``)."""
        self._require_started()
        return ",".join(f"{self.host}:{n.ports[name]}" for n in self._nodes.values())

    def port(self, node_id: int, listener: str = "CLIENT") -> int:
        """The port node ``node_id`` listens on for ``listener``."""
        self._require_started()
        return self._nodes[node_id].ports[listener]

    @property
    def node_pids(self) -> dict[int, int]:
        """node id -> pid of every node process that is running."""
        return {i: n.proc.pid for i, n in self._nodes.items()
                if n.proc is not None and n.proc.poll() is None}

    @property
    def metrics_urls(self) -> dict[int, str]:
        """node id -> the JMX exporter's /metrics URL (empty without the exporter)."""
        return {i: f"http://{self.host}:{n.metrics_port}/metrics"
                for i, n in self._nodes.items() if n.metrics_port is not None}

    @property
    def pids(self) -> list[int]:
        return list(self.node_pids.values())

    @property
    def data_root(self) -> Path | None:
        """The temporary directory holding every node's data (None once stopped)."""
        return self._root

    def _layout(self) -> str:
        return "node 1" if self.nodes == 1 else f"nodes 1-{self.nodes}"

    def log_tail(self, node_id: int, lines: int = _LOG_TAIL_LINES) -> str:
        node = self._nodes.get(node_id)
        if node is None:
            return "(no log)"
        try:
            text = node.log_path.read_bytes()[-64 * 1024:].decode("utf-8", "replace")
        except OSError as exc:
            return f"(could not read {node.log_path}: {exc})"
        return "\n".join(text.rstrip().splitlines()[-lines:]) or "(log is empty)"

    # ------------------------------------------------------------------ lifecycle

    def _distribution(self) -> KafkaDist:
        if self._dist is None:
            self._dist = resolve(self._kafka_home, self._progress)
        return self._dist

    def _prepare(self) -> None:
        dist = self._distribution()
        if self._progress is not None:
            self._progress(f"Starting Apache Kafka {dist.version}, {self.nodes} KRaft "
                           f"node{'s' if self.nodes > 1 else ''} on {self.host}...")

    def _launch_nodes(self) -> None:
        """Format every node's storage in a directory of our own, launch the nodes."""
        sweep_stale_dirs()
        self._root = Path(tempfile.mkdtemp(prefix=f"{DIR_PREFIX}{os.getpid()}-"))
        self._plan()
        self._format_all(self._distribution())
        for node_id in self.node_ids:
            self._launch(node_id)

    def _plan(self) -> None:
        assert self._root is not None
        names = ["CLIENT", "INTERNAL", "CONTROLLER", *self._extra_listeners]
        exporter = self._exporter()
        ports = free_ports(self.host, (len(names) + (exporter is not None)) * self.nodes)
        for node_id in self.node_ids:
            data_dir = self._root / f"node-{node_id}"
            (data_dir / "log").mkdir(parents=True)
            own = {name: ports.pop() for name in names}
            self._nodes[node_id] = _Node(
                node_id, data_dir, own, self._advertised.get(node_id, own["CLIENT"]),
                metrics_port=ports.pop() if exporter is not None else None)
        (self._root / "log4j2.properties").write_text(_LOG4J)
        for node in self._nodes.values():
            (node.data_dir / "server.properties").write_text(self._properties_text(node))

    def _properties_text(self, node: _Node) -> str:
        host = self.host
        protocols = {"CLIENT": "PLAINTEXT", "INTERNAL": "PLAINTEXT", "CONTROLLER": "PLAINTEXT",
                     **self._extra_listeners}
        advertised = {name: port for name, port in node.ports.items() if name != "CONTROLLER"}
        advertised["CLIENT"] = node.advertised_port
        voters = ",".join(f"{n.node_id}@{host}:{n.ports['CONTROLLER']}"
                          for n in self._nodes.values())
        replicas = str(self.nodes)
        props = {
            "process.roles": "broker,controller",
            "node.id": str(node.node_id),
            "controller.quorum.voters": voters,
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "INTERNAL",
            "listeners": ",".join(f"{n}://{host}:{p}" for n, p in node.ports.items()),
            "advertised.listeners": ",".join(f"{n}://{host}:{p}" for n, p in advertised.items()),
            "listener.security.protocol.map": ",".join(f"{n}:{p}" for n, p in protocols.items()),
            "log.dirs": str(node.data_dir / "log"),
            "offsets.topic.replication.factor": replicas,
            "transaction.state.log.replication.factor": replicas,
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": replicas,
            "share.coordinator.state.topic.min.isr": "1",
            **BASE_PROPERTIES,
        }
        values = {"node_id": str(node.node_id), "host": host, "data_dir": str(node.data_dir)}
        for key, value in self._properties.items():
            props[key] = _expand(value, values, node.ports)
        return "".join(f"{k}={v}\n" for k, v in props.items())

    def _java(self, dist: KafkaDist, main: str, *args: str, heap: str) -> list[str]:
        assert self._root is not None
        return [dist.java, f"-Xmx{heap}", f"-Xms{heap}" if heap == self.heap else "-Xms64m",
                *JVM_FLAGS, f"-Dlog4j2.configurationFile={self._root / 'log4j2.properties'}",
                "-cp", dist.classpath, main, *args]

    def _exporter(self) -> Path | None:
        """The JMX exporter jar when asked for (``metrics_warning`` says why not)."""
        if self._metrics_exporter and self._exporter_jar is None:
            from producer_core.brokers.jmx_exporter import exporter_or_warning

            progress = self._progress or (lambda _m: None)
            self._exporter_jar, self.metrics_warning = exporter_or_warning(progress)
            self._metrics_exporter = self._exporter_jar is not None
        return self._exporter_jar if self._metrics_exporter else None

    def _format_all(self, dist: KafkaDist) -> None:
        """``kafka-storage format`` for every node, in parallel (each is a JVM start)."""
        procs = []
        for node in self._nodes.values():
            cmd = self._java(dist, "kafka.tools.StorageTool", "format", "-t", self.cluster_id,
                             "-c", str(node.data_dir / "server.properties"),
                             *self._format_args, heap="256m")
            procs.append((node, self._spawn(cmd, subprocess.PIPE)))
        failures = []
        for node, proc in procs:
            try:
                output, _ = proc.communicate(timeout=120)
            except BaseException:
                for _, other in procs:
                    with contextlib.suppress(ProcessLookupError):
                        other.kill()
                    other.wait()
                raise
            if proc.returncode != 0:
                text = output.decode("utf-8", "replace").strip()
                failures.append(f"node {node.node_id}: {text[-2000:]}")
        if failures:
            raise BrokerError("Formatting Kafka's storage failed:\n" + "\n".join(failures))

    def _spawn(self, cmd: list[str], stdout: int | IO[bytes]) -> subprocess.Popen[bytes]:
        preexec = pdeathsig_preexec(os.getpid())
        env = {k: v for k, v in os.environ.items()
               if k not in ("KAFKA_OPTS", "KAFKA_HEAP_OPTS", "JAVA_TOOL_OPTIONS")}

        def spawn() -> subprocess.Popen[bytes]:
            return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=stdout,
                                    stderr=subprocess.STDOUT, env=env, start_new_session=True,
                                    preexec_fn=preexec, close_fds=True)

        try:
            return SPAWNER.run(spawn)
        except OSError as exc:
            raise BrokerError(f"Could not launch {cmd[0]}: {exc}") from exc

    def _launch(self, node_id: int) -> None:
        node = self._nodes[node_id]
        dist = self._distribution()
        if node.log is None:
            node.log = open(node.log_path, "ab")  # noqa: SIM115 - lives as long as the node
        cmd = self._java(dist, "kafka.Kafka", str(node.data_dir / "server.properties"),
                         heap=self.heap)
        if node.metrics_port is not None and self._exporter_jar is not None:
            from producer_core.brokers.jmx_exporter import javaagent_flag

            cmd.insert(1, javaagent_flag(self._exporter_jar, self.host, node.metrics_port))
        node.proc = self._spawn(cmd, node.log)

    def _exit_reason(self, node_id: int) -> str | None:
        proc = self._nodes[node_id].proc
        assert proc is not None
        code = proc.poll()
        return (None if code is None
                else f"Kafka node {node_id} exited during startup (exit code {code})")

    def _node_running(self, node_id: int) -> bool:
        proc = self._nodes[node_id].proc
        return proc is not None and proc.poll() is None

    # -------------------------------------------------------- single-node faults

    def stop_node(self, node_id: int, timeout_s: float = 30.0) -> None:
        _terminate([self._node(node_id)], timeout_s)

    def kill_node(self, node_id: int) -> None:
        _terminate([self._node(node_id)], 0.0)

    def _bring_up(self, node_id: int) -> bool:
        """Launch a stopped node again on its old ports and data (a running one is left)."""
        self._node(node_id)  # refuses a node the cluster does not have
        if self._node_running(node_id):
            return False
        self._launch(node_id)
        return True

    def _node(self, node_id: int) -> _Node:
        self._require_started()
        if node_id not in self._nodes:
            raise BrokerError(f"No Kafka node {node_id}; the nodes are {self.node_ids}.")
        return self._nodes[node_id]

    def stop(self, timeout_s: float = 8.0) -> None:
        """Stop every node (SIGTERM, then SIGKILL) and delete the data; idempotent.

        All nodes get SIGTERM together: the data is thrown away, so the grace period only
        lets a node close its files before the directory goes.
        """
        nodes = list(self._nodes.values())
        _terminate(nodes, timeout_s)
        for node in nodes:
            if node.log is not None:
                with contextlib.suppress(OSError):
                    node.log.close()
                node.log = None
        if all(n.proc is None for n in nodes):
            self._nodes = {}
            root, self._root = self._root, None
            if root is not None:
                shutil.rmtree(root, ignore_errors=True)
            self._forget()

    def stop_at_exit(self) -> None:
        self.stop(timeout_s=2.0)

    def __del__(self) -> None:
        for node in list(getattr(self, "_nodes", {}).values()):
            if node.proc is not None and node.proc.poll() is None:
                with contextlib.suppress(Exception):
                    node.proc.kill()

    def __repr__(self) -> str:
        state = self.bootstrap if self._nodes else "stopped"
        return f"KafkaCluster(nodes={self.nodes}, {state})"


def _terminate(nodes: list[_Node], timeout_s: float) -> None:
    """SIGTERM (or SIGKILL when ``timeout_s`` is 0) every node, wait, then SIGKILL the rest."""
    live = [n for n in nodes if n.proc is not None and n.proc.poll() is None]
    first = signal.SIGTERM if timeout_s > 0 else signal.SIGKILL
    for node in live:
        with contextlib.suppress(ProcessLookupError):
            node.proc.send_signal(first)  # type: ignore[union-attr]  # live: proc is set
    deadline = time.monotonic() + timeout_s
    for node in live:
        proc = node.proc
        assert proc is not None
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10.0)
    for node in nodes:
        if node.proc is not None and node.proc.poll() is not None:
            node.proc = None


def _expand(value: str, values: Mapping[str, str], ports: Mapping[str, int]) -> str:
    def port(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in ports:
            raise UsageError(f"server property refers to {{port:{name}}}, but node has "
                             f"listeners {sorted(ports)} only.")
        return str(ports[name])

    text = re.sub(r"\{port:([A-Za-z0-9_]+)\}", port, value)
    for key, replacement in values.items():
        text = text.replace("{" + key + "}", replacement)
    return text


def sweep_stale_dirs(tmp: Path | None = None) -> list[Path]:
    """Remove data directories of kbatch processes that died without cleaning up."""
    removed = []
    base = Path(tmp or tempfile.gettempdir())
    for path in base.glob(f"{DIR_PREFIX}*"):
        match = re.match(rf"{re.escape(DIR_PREFIX)}(\d+)-", path.name)
        if match is None or not path.is_dir() or pid_alive(int(match.group(1))):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed
