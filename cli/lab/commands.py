"""`kbatch lab up|down|status|restart`: a multi-broker Kafka lab on this machine. The
subcommands; the group, which lists them without importing this module, is cli.commands.lab."""

from __future__ import annotations

import os
import signal
import time
from types import FrameType
from typing import TYPE_CHECKING, Any

import click

from cli.app.errors import friendly_errors
from cli.lab.serve import KafkaNodes, TansuNodes, node_documents, serve
from cli.options.bounded import FiniteFloat
from cli.options.common import broker_options
from cli.render.tables import console
from producer_core import bounds
from producer_core.brokers import validate_broker_choice
from producer_core.brokers.kafka_security import LAB_LISTENER, LAB_PROTOCOLS, SecuredLab
from producer_core.brokers.lab.delay import DelayModel
from producer_core.brokers.lab.shape import MAX_BROKERS
from producer_core.brokers.lab.state import (
    UP_MARKER,
    backend_marker,
    identity,
    lab_process_alive,
    node_records,
    owned_process,
    read_state,
    remove_state,
    request_restart,
    state_path,
    write_state,
)
from producer_core.errors import BrokerError, UsageError

if TYPE_CHECKING:
    from producer_core.brokers.lab.cluster import Lab

_STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class _Stop(BaseException):
    """SIGTERM (`kbatch lab down`) or SIGHUP: leave the foreground loop and shut down."""


@click.command()
@click.option("--brokers", type=int, default=3, show_default=True,
              help=f"Brokers in the lab (1 to {MAX_BROKERS}).")
@click.option("--rtt-ms", type=FiniteFloat(0, bounds.MAX_RTT_MS, unit="ms"), default=0.0,
              show_default=True,
              help="Round trip added to every response, in ms.")
@click.option("--jitter-ms", type=FiniteFloat(0, bounds.MAX_RTT_MS, unit="ms"), default=0.0,
              show_default=True,
              help="Jitter: each response's delay is uniform in [rtt - jitter, rtt + jitter].")
@click.option("--base-port", type=int, default=None,
              help="Node k listens on BASE_PORT + k - 1. Default: free ports the OS picks. "
                   "Tansu only.")
@broker_options
@click.option("--kafka-image", default=None, metavar="IMAGE",
              help="With --broker docker: the container image (default apache/kafka at "
                   "kbatch's Kafka version, else kbatch's own build).")
@click.option("--security", type=click.Choice(["PLAINTEXT", *LAB_PROTOCOLS],
                                              case_sensitive=False),
              default="PLAINTEXT", show_default=True,
              help="With --broker kafka: a secured listener (generated CA and certificates; "
                   "SSL requires a client certificate; SASL offers PLAIN, SCRAM-SHA-256/512 "
                   "and OAUTHBEARER for a generated user) and a ready client.properties next "
                   "to the lab state, for --command-config.")
@friendly_errors
def up(brokers: int, rtt_ms: float, jitter_ms: float, base_port: int | None, broker: str,
       kafka_home: str | None, security: str, kafka_image: str | None = None) -> None:
    """Start a lab in the foreground; print its bootstrap servers on stdout.

    With --broker kafka the lab is real Apache Kafka: --brokers 1 or 3 KRaft nodes on their
    own ports (no facade: the nodes lead their own partitions), and a delay goes through a
    relay in front of each node.
    """
    validate_broker_choice(broker, None, brokers, kafka_home)
    if broker == "kafka" and base_port is not None:
        raise UsageError("--base-port applies to the Tansu lab; with --broker kafka every "
                         "node gets free ports the OS picks.")
    if kafka_image is not None and broker != "docker":
        raise UsageError("--kafka-image applies with --broker docker only.")
    security = security.upper()
    if security != "PLAINTEXT" and broker != "kafka":
        raise UsageError(f"--security {security} needs --broker kafka (the Tansu lab speaks "
                         "PLAINTEXT only).")
    if security != "PLAINTEXT" and (rtt_ms or jitter_ms):
        raise UsageError(f"--security {security} cannot be combined with --rtt-ms/--jitter-ms: "
                         "the delay relays sit in front of the PLAINTEXT listener only.")
    existing = read_state()
    if existing is not None and lab_process_alive(existing):
        raise BrokerError(
            f"A lab is already running (pid {existing['pid']}, bootstrap servers "
            f"{existing.get('bootstrap')}). Stop it first with `kbatch lab down`."
        )
    previous = {sig: signal.signal(sig, _raise_stop) for sig in _STOP_SIGNALS}
    try:
        if broker == "kafka":
            _run_kafka_lab(brokers, rtt_ms, jitter_ms, kafka_home, security)
            return
        if broker == "docker":
            from cli.lab.docker import serve_docker_lab

            serve_docker_lab(brokers, rtt_ms, jitter_ms, kafka_image, base_port)
            return
        from producer_core.brokers.lab.cluster import Lab  # the client library: not for --help

        with Lab(brokers, rtt_ms, jitter_ms, base_port=base_port, facade="thread") as running:
            nodes = TansuNodes(running)
            document = _state_document(running)
            document["nodes"] = node_documents(nodes)
            write_state(document)
            click.echo(running.bootstrap)
            for node, backend in zip(running.nodes, running.backends, strict=True):
                console.print(f"node {node.node_id}: {node.address}  (Tansu pid {backend.pid}, "
                              f"port {backend.port})")
            console.print(f"Running a {running.description}.\nStop it with `kbatch lab down` "
                          "or Ctrl-C.")
            serve(nodes, document)
            raise BrokerError("The lab's facade stopped unexpectedly, so the lab was stopped.")
    except (_Stop, KeyboardInterrupt):
        console.print("Lab stopped.")
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        remove_state(os.getpid())


def _run_kafka_lab(brokers: int, rtt_ms: float, jitter_ms: float,
                   kafka_home: str | None, security: str = "PLAINTEXT") -> None:
    """`lab up --broker kafka`: Apache Kafka nodes, until `lab down`, Ctrl-C or a node exits."""
    secured = None
    if security != "PLAINTEXT":
        path = state_path()
        secured = SecuredLab(security, path.with_name(f"{path.stem}-security"))
    try:
        _serve_kafka_lab(brokers, rtt_ms, jitter_ms, kafka_home, secured)
    finally:
        if secured is not None:  # keys and the password go with the lab
            secured.remove()


def _serve_kafka_lab(brokers: int, rtt_ms: float, jitter_ms: float, kafka_home: str | None,
                     secured: SecuredLab | None) -> None:
    from producer_core.brokers.kafka_target import kafka_target

    options = secured.cluster_options if secured is not None else None
    with kafka_target(brokers, rtt_ms, jitter_ms, kafka_home,
                      cluster_options=options) as cluster:
        delay = DelayModel(rtt_ms, jitter_ms)
        bootstrap = cluster.bootstrap
        extra: dict[str, Any] = {}
        if secured is not None:
            bootstrap = cluster.listener_bootstrap(LAB_LISTENER)
            extra = {"security": secured.protocol, "plaintext_bootstrap": cluster.bootstrap,
                     "client_properties": str(secured.write_client_properties(bootstrap))}
        nodes = KafkaNodes(cluster)
        document = {
            "pid": os.getpid(), "pid_start": identity(os.getpid())["start"],
            "bootstrap": bootstrap, **extra, "brokers": brokers,
            "broker": "kafka", "rtt_ms": rtt_ms, "jitter_ms": jitter_ms,
            "nodes": node_documents(nodes),
            "backend_pids": cluster.pids, "started_at": time.time(),
            # a run with --bootstrap-servers of this lab reads Kafka's own metrics here
            "metrics_urls": {str(i): u for i, u in cluster.metrics_urls.items()},
            "version": cluster.version,
        }
        write_state(document)
        click.echo(bootstrap)
        if secured is not None:
            console.print(f"Secured listener ({secured.protocol}): {bootstrap}. Client "
                          f"properties: {extra['client_properties']}\n  kbatch produce "
                          f"--command-config {extra['client_properties']}\nPLAINTEXT "
                          f"listener: {cluster.bootstrap}.")
        for node_id, pid in cluster.node_pids.items():
            address = cluster.bootstrap.split(",")[node_id - 1]
            console.print(f"node {node_id}: {address}  (Kafka pid {pid}, port "
                          f"{cluster.port(node_id)})")
        console.print(f"Running {cluster.description} ({delay.describe()}), started in "
                      f"{cluster.start_time_s:.1f} s.\nStop it with `kbatch lab down` or Ctrl-C.")
        serve(nodes, document)


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    for sig in _STOP_SIGNALS:  # a second signal must not interrupt the shutdown
        signal.signal(sig, signal.SIG_IGN)
    raise _Stop(signal.Signals(signum).name)


def _state_document(running: Lab) -> dict[str, Any]:
    return {
        "pid": os.getpid(),
        "pid_start": identity(os.getpid())["start"],
        "broker": "tansu",
        "bootstrap": running.bootstrap,
        "brokers": running.brokers,
        "rtt_ms": running.delay.rtt_s * 1000,
        "jitter_ms": running.delay.jitter_s * 1000,
        "backend_pids": running.pids,
        "started_at": time.time(),
    }


@click.command()
@click.option("--timeout", "timeout_s", type=FiniteFloat(0, 3600, unit="seconds"), default=15.0,
              show_default=True, help="Seconds to wait for the lab to stop before killing it.")
@friendly_errors
def down(timeout_s: float) -> None:
    """Stop the lab that `kbatch lab up` runs (nothing to do if none runs).

    Only a process the lab started is signalled: its pid, start time, user and command line
    must all match what `lab up` recorded.
    """
    document = read_state()
    if document is None:
        console.print(f"No lab is running (no state file at {state_path()}).")
        return
    pid, start = document["pid"], document["pid_start"]
    if not lab_process_alive(document):
        _kill_backends(document)
        remove_state()
        console.print(f"No lab is running (removed the stale state file of pid {pid}).")
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while owned_process(pid, start, UP_MARKER) and time.monotonic() < deadline:
        time.sleep(0.05)
    if owned_process(pid, start, UP_MARKER):
        os.kill(pid, signal.SIGKILL)  # its brokers die with it (parent-death signal)
        console.print(f"The lab (pid {pid}) did not stop within {timeout_s:g} s; killed it.")
    _kill_backends(document)
    remove_state()
    console.print(f"Lab stopped (pid {pid}).")


def _kill_backends(document: dict[str, Any]) -> None:
    """Last resort: a node that survived its lab (it should not) is killed, if provably ours."""
    marker = backend_marker(document)
    records = [(n["pid"], n.get("start")) for n in node_records(document) if "pid" in n]
    deadline = time.monotonic() + 2.0
    while (any(owned_process(p, s, marker) for p, s in records)
           and time.monotonic() < deadline):
        time.sleep(0.05)
    for pid, start in records:
        if owned_process(pid, start, marker):
            os.kill(pid, signal.SIGKILL)


def _running_lab() -> dict[str, Any]:
    document = read_state()
    if document is None or not lab_process_alive(document):
        raise BrokerError("No lab is running. Start one with `kbatch lab up`.")
    return document


@click.command()
@friendly_errors
def status() -> None:
    """Print the running lab's bootstrap servers and each node's state (exit 1 if none runs).

    A node that died is listed as DOWN; the lab keeps serving with the others, and
    `kbatch lab restart NODE` starts it again.
    """
    document = _running_lab()
    click.echo(document["bootstrap"])
    kind = {"kafka": "Apache Kafka", "docker": "Apache Kafka (Docker)"}.get(
        document.get("broker", ""), "Tansu")
    console.print(f"pid {document['pid']}, {document['brokers']} {kind} brokers, round trip "
                  f"{document['rtt_ms']:g} ms ± {document['jitter_ms']:g} ms.")
    marker = backend_marker(document)
    for node in node_records(document):
        where = f"{node.get('host')}:{node.get('port')}"
        if "container" in node:  # --broker docker: the lab stops if a container stops
            console.print(f"node {node['node_id']}: {where}  container {node['container']}")
        elif owned_process(node.get("pid"), node.get("start"), marker):
            console.print(f"node {node['node_id']}: {where}  running ({kind} pid {node['pid']})")
        else:
            console.print(f"node {node['node_id']}: {where}  DOWN ({kind} pid {node.get('pid')} "
                          f"exited); start it again with `kbatch lab restart {node['node_id']}`")


VERDICT_GRACE_S = 10.0
"""How long `lab restart` waits beyond --timeout for the lab's verdict (the lab picks the
request up within a poll and may spend a little on its own after the node's wait)."""


@click.command()
@click.argument("node_id", metavar="NODE", type=int)
@click.option("--timeout", "timeout_s", type=FiniteFloat(1, 600, unit="seconds"), default=120.0,
              show_default=True, help="Seconds to wait for the node to serve again.")
@friendly_errors
def restart(node_id: int, timeout_s: float) -> None:
    """Start node NODE of the running lab again after it died (or was killed).

    The node keeps its id and address. A Kafka node keeps its data; a Tansu node stores
    in memory, so it comes back empty.
    """
    document = _running_lab()
    if document.get("broker") == "docker":
        raise UsageError("`kbatch lab restart` restarts a node process of a Tansu or Kafka lab; "
                         "a --broker docker lab stops when one of its containers stops. Use "
                         "`--fault 'at=10s restart=node:N'` on a run with --broker docker to "
                         "restart a container during it.")
    nodes = {n["node_id"]: n for n in node_records(document)}
    if node_id not in nodes:
        raise UsageError(f"No node {node_id} in the running lab; its nodes are "
                         f"{', '.join(str(n) for n in sorted(nodes))}.")
    marker = backend_marker(document)
    old = nodes[node_id]
    if owned_process(old.get("pid"), old.get("start"), marker):
        console.print(f"Node {node_id} is running (pid {old['pid']}); nothing to restart.")
        return
    request = request_restart(node_id, timeout_s)
    # the lab waits up to timeout_s for the node to serve; its verdict comes a little later
    deadline = time.monotonic() + timeout_s + VERDICT_GRACE_S
    while time.monotonic() < deadline:
        time.sleep(0.2)
        current = _running_lab()
        node = next((n for n in node_records(current) if n["node_id"] == node_id), {})
        if node.get("restart_request") != request:
            continue  # not yet answered: an older request's verdict is not this one's
        if node.get("restart_error"):
            raise BrokerError(f"Node {node_id} could not be restarted: {node['restart_error']}")
        if owned_process(node.get("pid"), node.get("start"), marker):
            console.print(f"Node {node_id} is running again (pid {node['pid']}).")
            return
        raise BrokerError(f"Node {node_id} was started again but exited at once; see the "
                          "`kbatch lab up` terminal for why.")
    raise BrokerError(f"Node {node_id} did not serve again within {timeout_s:g} s; see the "
                      "`kbatch lab up` terminal for why.")
