"""Real Apache Kafka in containers (``--broker docker``): 1 or 3 KRaft nodes.

    with DockerKafkaCluster(nodes=3) as kafka:
        run(workload, settings, mode, kafka.bootstrap)
        kafka.isolate_node(2); kafka.heal_node(2)      # faults only containers give

Each node is one container of the Kafka image (``docker_image``), started through
testcontainers-python, on a bridge network of the run's own. Only the client listener
(9092) is published, on 127.0.0.1 and a free port, and advertised as ``127.0.0.1:<port>``;
controller (9093) and inter-broker (9094) traffic stays on the private network, where the
nodes reach each other by alias (``kafka-<id>``).

testcontainers' reaper (Ryuk) is an image pulled from a registry, which many machines
cannot reach, so it is disabled and kbatch removes what it started itself: on every exit
of the ``with`` (error, Ctrl-C, and SIGTERM, which ``docker_target`` turns into Ctrl-C),
from an ``atexit`` hook, and, for a kbatch that was SIGKILLed, on the next start: every
container and network carries the labels ``io.kbatch.managed`` and ``io.kbatch.owner-pid``,
and those whose owner process is gone are removed (never those of a live kbatch).

Isolating a node cuts it off from its peers while the client still reaches it: packet
filters (iptables) in the node's own network namespace drop traffic from and to the
other nodes' addresses on the run's network. Traffic to the published port arrives from
the bridge's gateway, so it still passes. (Disconnecting the container from the network
would take the published port with it: it is the only network the node has.)
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from producer_core.brokers.docker_image import ImageChoice, choose_image
from producer_core.brokers.node_cluster import NodeCluster, free_ports, pid_alive
from producer_core.errors import BrokerError, UsageError

LABEL_MANAGED = "io.kbatch.managed"
LABEL_OWNER = "io.kbatch.owner-pid"
LABEL_RUN = "io.kbatch.run"
CLIENT_PORT = 9092
CONTROLLER_PORT = 9093
INTERNAL_PORT = 9094
METRICS_PORT = 9404
"""The JMX exporter's /metrics inside each container, published on 127.0.0.1."""
EXPORTER_MOUNT = "/opt/kbatch-jmx"
"""Where the exporter's jar and rules are mounted (read-only) in each container."""
DEFAULT_HEAP = "768m"
#: docker-py's read timeout: a daemon on a loaded 2-core machine can take a minute to
#: answer while three JVMs start (the default, 60 s, was seen to expire).
DOCKER_TIMEOUT_S = 300
_CLIENT_KW = {"timeout": DOCKER_TIMEOUT_S}
TESTCONTAINERS_PIN = "testcontainers==4.15.0"
#: As BASE_PROPERTIES of the JVM route (kafka.py): two cores on this machine.
NODE_PROPERTIES = {
    "num.network.threads": "2",
    "num.io.threads": "4",
    "num.partitions": "1",
    "group.initial.rebalance.delay.ms": "0",
    "auto.create.topics.enable": "true",
}

class DockerUnavailable(UsageError):
    """No Docker engine to run containers (or no client library to talk to it)."""


def docker_client() -> Any:
    """A docker-py client whose daemon answers; DockerUnavailable (exit 2) otherwise."""
    os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
    try:
        import docker
        import testcontainers  # noqa: F401 - the route runs its containers through it
    except ImportError as exc:
        raise DockerUnavailable(
            f"--broker docker runs Kafka through testcontainers-python, which is not installed "
            f"(the Python module `{exc.name}` is missing from {sys.executable}). Install it "
            f"with `pip install '{TESTCONTAINERS_PIN}'` (or `pip install -e .` again in a "
            "clone of kbatch: it is one of kbatch's dependencies), or use --broker kafka "
            "(needs a JDK) or the embedded Tansu broker (no --broker)."
        ) from exc
    try:
        client = docker.from_env(timeout=DOCKER_TIMEOUT_S)
        client.ping()
    except Exception as exc:  # noqa: BLE001 - every failure here means: no usable engine
        installed = shutil.which("dockerd") is not None
        what = ("the Docker daemon is not running or not reachable"
                if installed else "Docker is not installed on this machine")
        raise DockerUnavailable(
            f"--broker docker needs a Docker engine, but {what} ({_first_line(exc)}). "
            + ("Start it (`systemctl start docker`, or `dockerd &` as root) and check "
               "`docker info`; a non-root user needs access to /var/run/docker.sock "
               "(the docker group). " if installed else
               "Install it (Debian/Ubuntu: `apt-get install docker.io`, then start "
               "`dockerd`) and check `docker info`. ")
            + "Or use --broker kafka (needs a JDK) or the embedded Tansu broker (no --broker)."
        ) from exc
    return client


def jvm_of(pid: int, proc: Path = Path("/proc")) -> int:
    """The Java process at or under ``pid`` (a container's main process: kbatch's image
    execs the JVM, another image may start it from a shell); ``pid`` when none is found."""
    pending = [pid]
    while pending:
        current = pending.pop(0)
        try:
            if b"java" in (proc / str(current) / "cmdline").read_bytes():
                return current
            for task in (proc / str(current) / "task").iterdir():
                pending.extend(int(c) for c in (task / "children").read_text().split())
        except (OSError, ValueError):
            continue
    return pid


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else type(exc).__name__


def sweep_stale(client: Any) -> list[str]:
    """Remove containers and networks of kbatch processes that died without cleaning up."""
    removed: list[str] = []
    for container in client.containers.list(all=True, filters={"label": LABEL_MANAGED}):
        if _owner_alive(container.labels):
            continue
        with contextlib.suppress(Exception):
            container.remove(force=True)
            removed.append(container.name)
    for network in client.networks.list(filters={"label": LABEL_MANAGED}):
        if _owner_alive(network.attrs.get("Labels") or {}):
            continue
        with contextlib.suppress(Exception):
            network.remove()
            removed.append(network.name)
    return removed


def _owner_alive(labels: Mapping[str, str]) -> bool:
    try:
        pid = int(labels.get(LABEL_OWNER, ""))
    except ValueError:
        return False
    return pid_alive(pid)


class DockerKafkaCluster(NodeCluster):
    """Apache Kafka in ``nodes`` containers, clients on 127.0.0.1 published ports."""

    host = "127.0.0.1"
    ROUTE = "docker"
    WHERE = " in Docker"
    NOT_RUNNING = "The Kafka containers are not running"
    NODES_NOUN = "Kafka container(s) for node(s)"
    START_TIMEOUT_S = 180.0
    NODE_START_TIMEOUT_S = 90.0
    FIRST_POLL_S = 0.5  # a docker API call per probe: no need to ask sooner

    def __init__(self, nodes: int = 1, *, image: str | None = None,
                 progress: Callable[[str], None] | None = None,
                 server_properties: Mapping[str, str] | None = None,
                 heap: str = DEFAULT_HEAP, metrics_exporter: bool = False) -> None:
        super().__init__(nodes)
        self._metrics_exporter = metrics_exporter  # brokers.jmx_exporter in each container
        self._exporter_jar: Path | None = None
        self._metrics_ports: dict[int, int] = {}
        self.metrics_warning: str | None = None
        """Why the containers have no metrics endpoint although one was asked for."""
        self.heap = heap
        self._requested_image = image
        self._progress = progress or (lambda _message: None)
        self._properties = dict(server_properties or {})
        self.image: ImageChoice | None = None
        self.run_id = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self._client: Any = None
        self._network: Any = None
        self._containers: dict[int, Any] = {}  # node id -> testcontainers DockerContainer
        self._pid_cache: dict[int, tuple[str, int]] = {}  # node id -> (container id, pid)
        self._ports: dict[int, int] = {}
        self._isolated: set[int] = set()

    # ------------------------------------------------------------------ views

    @property
    def version(self) -> str:
        return self.image.kafka_version if self.image else "unknown"

    @property
    def network_name(self) -> str:
        return f"kbatch-{self.run_id}"

    @property
    def node_pids(self) -> dict[int, int]:
        """node id -> the host pid of each running node's JVM, so broker cost reads its CPU
        from /proc as for a local node (a container's processes are host processes). Asked
        of Docker once per container; empty where Docker or /proc cannot tell."""
        pids: dict[int, int] = {}
        for node_id in list(self._containers):
            try:
                wrapped = self._wrapped(node_id)
                cached = self._pid_cache.get(node_id)
                if cached is None or cached[0] != wrapped.id or not pid_alive(cached[1]):
                    wrapped.reload()
                    main = int(wrapped.attrs.get("State", {}).get("Pid") or 0)
                    self._pid_cache[node_id] = (wrapped.id, jvm_of(main) if main else 0)
                pid = self._pid_cache[node_id][1]
            except Exception:  # noqa: BLE001 - a node being restarted has no pid now
                continue
            if pid:
                pids[node_id] = pid
        return pids

    @property
    def started(self) -> bool:
        return bool(self._ports)

    @property
    def metrics_urls(self) -> dict[int, str]:
        """node id -> the JMX exporter's /metrics URL on its published port (empty without
        the exporter), read as `--broker kafka`'s nodes are."""
        return {i: f"http://{self.host}:{port}/metrics"
                for i, port in self._metrics_ports.items()}

    def _client_ports(self) -> list[int]:
        return list(self._ports.values())

    def _probe_port(self, node_id: int) -> int:
        return self._ports[node_id]

    def port(self, node_id: int) -> int:
        return self._ports[node_id]

    def _layout(self) -> str:
        return f"image {self.image.name if self.image else '?'}"

    def container_name(self, node_id: int) -> str:
        return f"kbatch-{self.run_id}-kafka-{node_id}"

    # ------------------------------------------------------------------ lifecycle

    def _prepare(self) -> None:
        """Reach Docker, remove what a killed kbatch left, choose (or build) the image."""
        self._client = docker_client()
        removed = sweep_stale(self._client)
        if removed:
            self._progress(f"Removed {len(removed)} container(s)/network(s) left by a kbatch "
                           f"that was killed: {', '.join(removed)}.")
        self.image = choose_image(self._requested_image, self._progress)
        self._progress(f"Starting Apache Kafka {self.version} in Docker ({self.nodes} "
                       f"node{'s' if self.nodes > 1 else ''}, image {self.image.name})...")

    @contextlib.contextmanager
    def _start_errors(self) -> Iterator[None]:
        try:
            yield
        except Exception as exc:  # docker-py's APIError, timeouts: say what Docker said
            if isinstance(exc, BrokerError | UsageError):
                raise
            raise BrokerError(f"Docker could not start the Kafka containers: "
                              f"{_first_line(exc)}") from exc

    def _launch_nodes(self) -> None:
        self._create_network()
        exporter = self._exporter()
        ports = free_ports(self.host, self.nodes * (2 if exporter else 1))
        for node_id in self.node_ids:
            self._ports[node_id] = ports.pop()
            if exporter is not None:
                self._metrics_ports[node_id] = ports.pop()
        for node_id in self.node_ids:
            self._start_container(node_id)

    def _labels(self) -> dict[str, str]:
        return {LABEL_MANAGED: "true", LABEL_OWNER: str(os.getpid()), LABEL_RUN: self.run_id}

    def _exporter(self) -> Path | None:
        """The JMX exporter jar when asked for (``metrics_warning`` says why not)."""
        if self._metrics_exporter and self._exporter_jar is None:
            from producer_core.brokers.jmx_exporter import exporter_or_warning

            self._exporter_jar, self.metrics_warning = exporter_or_warning(self._progress)
            self._metrics_exporter = self._exporter_jar is not None
        return self._exporter_jar if self._metrics_exporter else None

    def _create_network(self) -> None:
        from testcontainers.core.network import Network

        network = Network(docker_client_kw=_CLIENT_KW,
                          docker_network_kw={"driver": "bridge", "labels": self._labels()})
        network.name = self.network_name
        self._network = network.create()

    def _environment(self, node_id: int) -> dict[str, str]:
        voters = ",".join(f"{i}@kafka-{i}:{CONTROLLER_PORT}" for i in self.node_ids)
        replicas = str(self.nodes)
        props = {
            "process.roles": "broker,controller",
            "node.id": str(node_id),
            "controller.quorum.voters": voters,
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "INTERNAL",
            "listeners": (f"CLIENT://:{CLIENT_PORT},CONTROLLER://:{CONTROLLER_PORT},"
                          f"INTERNAL://:{INTERNAL_PORT}"),
            "advertised.listeners": (f"CLIENT://{self.host}:{self._ports[node_id]},"
                                     f"INTERNAL://kafka-{node_id}:{INTERNAL_PORT}"),
            "listener.security.protocol.map":
                "CLIENT:PLAINTEXT,CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT",
            "log.dirs": "/var/lib/kafka/data",
            "offsets.topic.replication.factor": replicas,
            "transaction.state.log.replication.factor": replicas,
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": replicas,
            "share.coordinator.state.topic.min.isr": "1",
            **NODE_PROPERTIES,
            **self._properties,
        }
        env = {property_variable(k): v for k, v in props.items()}
        env["CLUSTER_ID"] = self.cluster_id
        env["KAFKA_HEAP_OPTS"] = f"-Xmx{self.heap} -Xms{self.heap}"
        if node_id in self._metrics_ports and self._exporter_jar is not None:
            from producer_core.brokers.jmx_exporter import RULES, javaagent_flag

            mounted = Path(EXPORTER_MOUNT)
            env["KAFKA_OPTS"] = javaagent_flag(mounted / self._exporter_jar.name, "0.0.0.0",
                                               METRICS_PORT, mounted / RULES.name)
        return env

    def _start_container(self, node_id: int) -> None:
        from testcontainers.core.container import DockerContainer

        assert self.image is not None
        container = (DockerContainer(self.image.name, docker_client_kw=_CLIENT_KW)
                     .with_name(self.container_name(node_id))
                     .with_network(self._network)
                     .with_network_aliases(f"kafka-{node_id}")
                     .with_envs(**self._environment(node_id))
                     .with_kwargs(labels=self._labels(), hostname=f"kafka-{node_id}"))
        # Published on the host's loopback only (docker-py's (host ip, port) form).
        # testcontainers types the value as a port only
        container.ports[f"{CLIENT_PORT}/tcp"] = (  # type: ignore[assignment]  # see above
            self.host, self._ports[node_id])
        if node_id in self._metrics_ports and self._exporter_jar is not None:
            from producer_core.brokers.jmx_exporter import RULES

            for path in (self._exporter_jar, RULES):  # one file each: the daemon's host's
                container.with_volume_mapping(path, f"{EXPORTER_MOUNT}/{path.name}", "ro")
            container.ports[f"{METRICS_PORT}/tcp"] = (  # type: ignore[assignment]  # as above
                self.host, self._metrics_ports[node_id])
        self._containers[node_id] = container
        container.start()

    def _wrapped(self, node_id: int) -> Any:
        container = self._containers.get(node_id)
        if container is None or container._container is None:
            raise BrokerError(f"No Kafka container for node {node_id}; the nodes are "
                              f"{self.node_ids}.")
        return container.get_wrapped_container()

    def _status(self, node_id: int) -> str:
        wrapped = self._wrapped(node_id)
        wrapped.reload()
        return str(wrapped.status)

    def _node_running(self, node_id: int) -> bool:
        try:
            return self._status(node_id) == "running"
        except Exception:  # noqa: BLE001 - a removed container is not running
            return False

    def log_tail(self, node_id: int, lines: int = 25) -> str:
        try:
            text = self._wrapped(node_id).logs(tail=lines).decode("utf-8", "replace")
        except Exception as exc:  # noqa: BLE001 - a log is a courtesy in an error message
            return f"(no log: {_first_line(exc)})"
        return text.rstrip() or "(log is empty)"

    def _exit_reason(self, node_id: int) -> str | None:
        try:
            status = self._status(node_id)
        except Exception:  # noqa: BLE001 - a slow daemon: ask again
            return None
        if status in ("exited", "dead"):
            return f"Kafka container {self.container_name(node_id)} exited during start"
        return None

    def stop(self) -> None:
        """Remove every container and the network; idempotent, never raises."""
        for container in list(self._containers.values()):
            with contextlib.suppress(Exception):
                if container._container is not None:
                    container._container.remove(force=True, v=True)
        self._containers = {}
        self._ports = {}
        self._metrics_ports = {}
        if self._network is not None:
            with contextlib.suppress(Exception):
                self._network.remove()
            self._network = None
        if self._client is not None:
            # Belt and braces: anything of this run that escaped (a half-created container).
            with contextlib.suppress(Exception):
                label = f"{LABEL_RUN}={self.run_id}"
                for leftover in self._client.containers.list(all=True,
                                                             filters={"label": label}):
                    leftover.remove(force=True, v=True)
                for net in self._client.networks.list(filters={"label": label}):
                    net.remove()
            with contextlib.suppress(Exception):
                self._client.close()
            self._client = None
        self._forget()

    # ------------------------------------------------------------------ faults

    def pause_node(self, node_id: int) -> None:
        """Freeze every process of the node (cgroup freezer): sockets stay open, nothing
        answers, like a stop-the-world pause."""
        self._wrapped(node_id).pause()

    def unpause_node(self, node_id: int) -> None:
        self._wrapped(node_id).unpause()

    def kill_node(self, node_id: int) -> None:
        """SIGKILL the node's JVM; the container (and its data) stays for a restart."""
        self._wrapped(node_id).kill()

    def stop_node(self, node_id: int, timeout_s: float = 30.0) -> None:
        """``docker stop``: SIGTERM (controlled shutdown), SIGKILL after ``timeout_s``; the
        container (and its data) stays for a restart."""
        self._wrapped(node_id).stop(timeout=round(timeout_s))

    def _bring_up(self, node_id: int) -> bool:
        """Unpause a paused container, start a stopped one (same data and port)."""
        wrapped = self._wrapped(node_id)
        wrapped.reload()
        if wrapped.status == "paused":
            wrapped.unpause()
        elif wrapped.status != "running":
            wrapped.start()
        return True

    def leader_of(self, partition: int, topic_hint: str | None) -> int | None:
        """The node leading ``partition`` of the run's topic, asked of a reachable node."""
        from producer_core.brokers.faults.nodes import leader_of

        reachable = [i for i in self.node_ids if i not in self._isolated]
        return leader_of([(self.host, self._ports[i]) for i in reachable], partition,
                         topic_hint)

    def node_address(self, node_id: int) -> str:
        """The node's IP address on the run's private network."""
        wrapped = self._wrapped(node_id)
        wrapped.reload()
        return str(wrapped.attrs["NetworkSettings"]["Networks"][self.network_name]["IPAddress"])

    def isolate_node(self, node_id: int) -> None:
        """Cut the node off from its peers (both ways); its client port still answers."""
        peers = [self.node_address(i) for i in self.node_ids if i != node_id]
        rules = []
        for address in peers:
            rules += [["-I", "INPUT", "-s", address, "-j", "DROP"],
                      ["-I", "OUTPUT", "-d", address, "-j", "DROP"]]
        self._iptables(node_id, rules)
        self._isolated.add(node_id)

    def heal_node(self, node_id: int) -> None:
        """Undo ``isolate_node``: flush the node's filter rules."""
        self._iptables(node_id, [["-F", "INPUT"], ["-F", "OUTPUT"]])
        self._isolated.discard(node_id)

    def _iptables(self, node_id: int, rules: list[list[str]]) -> None:
        """Run iptables in the node's network namespace (and only there), via nsenter."""
        pid = int(self._wrapped(node_id).attrs["State"]["Pid"])
        iptables = shutil.which("iptables") or "/usr/sbin/iptables"
        nsenter = shutil.which("nsenter") or "/usr/bin/nsenter"
        if not os.path.exists(iptables) or not os.path.exists(nsenter):
            raise UsageError("Isolating a node needs iptables and nsenter on this machine "
                             "(Debian: `apt-get install iptables util-linux`).")
        for rule in rules:
            proc = subprocess.run([nsenter, "-t", str(pid), "-n", iptables, "-w", *rule],
                                  capture_output=True, text=True, timeout=30, check=False)
            if proc.returncode != 0:
                raise BrokerError(
                    f"Could not change node {node_id}'s packet filter ({' '.join(rule)}): "
                    f"{proc.stderr.strip() or proc.stdout.strip()} (nsenter needs root).")


def property_variable(key: str) -> str:
    """``node.id`` -> ``KAFKA_NODE_ID``: apache/kafka's convention (``_`` stands for ``.``,
    ``__`` for ``_``, ``___`` for ``-``), which kbatch's own image follows too."""
    return "KAFKA_" + key.replace("_", "__").replace("-", "___").replace(".", "_").upper()

