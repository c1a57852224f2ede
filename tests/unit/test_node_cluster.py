"""The node lifecycle both Kafka routes share (``brokers.node_cluster``), on a backend whose
nodes are stand-ins: what start does when a launch fails or a node dies, how restart and
start of one node go, the description, and the node counts refused."""

from __future__ import annotations

import pytest

from producer_core.brokers import node_cluster
from producer_core.brokers.node_cluster import NodeCluster, free_ports, pid_alive
from producer_core.errors import BrokerError, UsageError


class StandIn(NodeCluster):
    """Nodes that are entries in a dict; nothing listens on their ports, so a readiness
    probe finds none ready and only an exit or the deadline ends the wait."""

    WHERE = " on paper"

    def __init__(self, nodes: int = 1, fail_launch: bool = False,
                 exits: bool = False) -> None:
        super().__init__(nodes)
        self.host = "127.0.0.1"
        self.fail_launch, self.exits = fail_launch, exits
        self.ports: dict[int, int] = {}
        self.calls: list[str] = []

    version = "9.9"  # type: ignore[assignment]  # a fake's version, a plain str

    @property
    def started(self) -> bool:
        return bool(self.ports)

    def _layout(self) -> str:
        return "stand-ins"

    def _client_ports(self) -> list[int]:
        return list(self.ports.values())

    def _probe_port(self, node_id: int) -> int:
        return self.ports[node_id]

    def _prepare(self) -> None:
        self.calls.append("prepare")

    def _launch_nodes(self) -> None:
        self.calls.append("launch")
        self.ports = dict(zip(self.node_ids, free_ports(self.host, self.nodes), strict=True))
        if self.fail_launch:
            raise BrokerError("no room for a node")

    def _exit_reason(self, node_id: int) -> str | None:
        return f"node {node_id} exited" if self.exits else None

    def _node_running(self, node_id: int) -> bool:
        return node_id in self.ports

    def _bring_up(self, node_id: int) -> bool:
        self.calls.append(f"bring up {node_id}")
        return True

    def stop_node(self, node_id: int, timeout_s: float = 30.0) -> None:
        self.calls.append(f"stop {node_id}")

    def kill_node(self, node_id: int) -> None:
        self.calls.append(f"kill {node_id}")

    def log_tail(self, node_id: int, lines: int = 25) -> str:
        return f"last words of {node_id}"

    def stop(self) -> None:
        self.calls.append("stop")
        self.ports = {}
        self._forget()


def test_a_failed_launch_stops_what_started_and_is_not_left_for_the_exit_hook():
    cluster = StandIn(fail_launch=True)
    with pytest.raises(BrokerError, match="no room"):
        cluster.start()
    assert cluster.calls == ["prepare", "launch", "stop"]
    assert cluster not in node_cluster._LIVE and cluster.start_time_s is None


def test_a_node_that_exits_while_starting_is_named_with_its_log():
    cluster = StandIn(exits=True)
    with pytest.raises(BrokerError) as failed:
        cluster.start(timeout_s=5)
    assert str(failed.value) == "node 1 exited. Last lines of its log:\nlast words of 1"
    assert cluster.calls[-1] == "stop" and not cluster.started


def test_nodes_that_never_serve_end_the_wait_at_the_deadline():
    cluster = StandIn(nodes=3)
    with pytest.raises(BrokerError) as failed:
        cluster.start(timeout_s=0)
    assert str(failed.value).startswith(
        "Kafka node(s) [1, 2, 3] did not serve Metadata with all 3 node(s) in time. Last "
        "lines of node 1's log:\nlast words of 1")


def test_restart_stops_the_node_then_brings_it_up_and_waits(monkeypatch):
    cluster = StandIn()
    cluster.ports = {1: 1}
    waited: list[list[int]] = []
    monkeypatch.setattr(cluster, "_wait_ready", lambda ids, deadline: waited.append(ids))
    cluster.restart_node(1)
    assert cluster.calls == ["stop 1", "bring up 1"] and waited == [[1]]


def test_a_node_already_up_is_not_waited_for(monkeypatch):
    cluster = StandIn()
    monkeypatch.setattr(cluster, "_bring_up", lambda node_id: False)
    monkeypatch.setattr(cluster, "_wait_ready", lambda *_: pytest.fail("waited"))
    cluster.start_node(1)


def test_description_bootstrap_and_status():
    cluster = StandIn(nodes=3)
    with pytest.raises(BrokerError, match="The Kafka cluster is not running; call start"):
        _ = cluster.bootstrap
    assert not cluster.all_running()
    cluster.ports = {1: 9001, 2: 9002, 3: 9003}
    assert cluster.all_running()
    assert cluster.description == ("Apache Kafka 9.9 on paper (3 KRaft brokers, stand-ins) "
                                   "at 127.0.0.1:9001,127.0.0.1:9002,127.0.0.1:9003")


@pytest.mark.parametrize("nodes", [0, 2, 4])
def test_only_one_or_three_nodes(nodes):
    with pytest.raises(UsageError, match=f"--brokers {nodes} with --broker kafka: .*1 node "
                                         "or of 3"):
        StandIn(nodes=nodes)


def test_pid_alive():
    import os

    assert pid_alive(os.getpid())
    assert not pid_alive(2**22 + 1)  # above Linux's pid_max
