"""The lab's restart and watch path (issue 49), as pure state machines with fake nodes and
synthetic time: a node started again waits for the nodes that run, not for all (with two
of three down, all never serve); the documented --timeout reaches the node's wait; an old
restart's error never answers a new request; a node restarted, even by a restart that
failed its wait, is watched again (a later death is reported and the state file says so)."""

from __future__ import annotations

from typing import Any

import pytest

from cli.lab.serve import KafkaNodes, Watcher
from producer_core.brokers import node_cluster
from producer_core.brokers.lab.state import (
    RestartRequest,
    request_restart,
    take_restart_request,
)
from producer_core.errors import BrokerError


class FakeNodes:
    """Three nodes; ``restart`` starts the node (a new pid) and may then fail its wait."""

    kind = "Kafka"

    def __init__(self) -> None:
        self.pids: dict[int, int | None] = {1: 101, 2: 102, 3: 103}
        self.fail_wait: set[int] = set()
        self.restarts: list[tuple[int, float | None]] = []
        self.next_pid = 200

    def node_ids(self) -> list[int]:
        return [1, 2, 3]

    def address(self, node_id: int) -> tuple[str, int]:
        return "127.0.0.1", 9000 + node_id

    def node_pid(self, node_id: int) -> int | None:
        return self.pids[node_id]

    def restart(self, node_id: int, timeout_s: float | None = None) -> None:
        self.restarts.append((node_id, timeout_s))
        self.next_pid += 1
        self.pids[node_id] = self.next_pid
        if node_id in self.fail_wait:
            raise BrokerError(f"node {node_id} did not serve Metadata in time")

    def serving(self) -> bool:
        return True


class Harness:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.nodes = FakeNodes()
        self.requests: list[RestartRequest] = []
        self.written: list[dict[str, Any]] = []
        self.said: list[str] = []
        # every pid counts as a live process with a start time (state: running)
        monkeypatch.setattr("cli.lab.serve.start_time", lambda pid: 1000 + pid)
        self.watcher = Watcher(self.nodes, {"nodes": []}, write=self._write,
                               take=self._take, say=self.said.append)

    def _write(self, document: dict[str, Any]) -> None:
        self.written.append({n["node_id"]: dict(n) for n in document["nodes"]})

    def _take(self) -> RestartRequest | None:
        return self.requests.pop(0) if self.requests else None

    def state(self, node_id: int) -> dict[str, Any]:
        return self.written[-1][node_id]


@pytest.fixture()
def lab(monkeypatch: pytest.MonkeyPatch) -> Harness:
    return Harness(monkeypatch)


def test_two_nodes_down_restarted_one_after_the_other(lab):
    lab.nodes.pids[2] = lab.nodes.pids[3] = None
    lab.watcher.poll()
    assert lab.state(2)["state"] == "down" and lab.state(3)["state"] == "down"
    assert sum("exited" in line for line in lab.said) == 2
    lab.requests.append(RestartRequest(2, 30.0, "a"))
    lab.watcher.poll()
    assert lab.state(2)["state"] == "running" and lab.state(2)["restart_request"] == "a"
    assert "restart_error" not in lab.state(2) and lab.state(3)["state"] == "down"
    lab.requests.append(RestartRequest(3, 30.0, "b"))
    lab.watcher.poll()
    assert all(lab.state(n)["state"] == "running" for n in (1, 2, 3))
    assert lab.nodes.restarts == [(2, 30.0), (3, 30.0)]  # --timeout reached the node


def test_an_old_error_is_cleared_before_the_next_restart_and_never_answers_it(lab):
    lab.nodes.pids[2] = None
    lab.nodes.fail_wait.add(2)
    lab.watcher.poll()
    lab.requests.append(RestartRequest(2, 5.0, "first"))
    lab.watcher.poll()
    assert lab.state(2)["restart_error"] and lab.state(2)["restart_request"] == "first"
    lab.nodes.pids[2] = None  # it died again
    lab.nodes.fail_wait.clear()
    lab.requests.append(RestartRequest(2, 5.0, "second"))
    lab.watcher.poll()
    # the write made before the restart began holds no error, and no answer to "second"
    before = [w[2] for w in lab.written if w[2].get("restart_request") != "second"][-1]
    assert "restart_error" not in before
    assert lab.state(2)["restart_request"] == "second" and "restart_error" not in lab.state(2)


def test_a_node_restarted_by_a_failed_restart_is_still_watched(lab):
    lab.nodes.pids[2] = None
    lab.watcher.poll()
    lab.nodes.fail_wait.add(2)
    lab.requests.append(RestartRequest(2, None, "r"))
    lab.watcher.poll()
    assert lab.state(2)["state"] == "running"  # its process runs, whatever the wait said
    lab.said.clear()
    lab.nodes.pids[2] = None  # a later death
    lab.watcher.poll()
    assert lab.said and "node 2 (Kafka) exited" in lab.said[0]
    assert lab.state(2)["state"] == "down"  # the state file no longer calls a dead pid running


def test_a_restart_request_carries_its_timeout_and_its_id(tmp_path):
    path = tmp_path / "lab.json"
    tmp_path.chmod(0o700)
    request = request_restart(2, 45.0, path)
    taken = take_restart_request(path)
    assert taken == RestartRequest(2, 45.0, request) and len(request) == 16
    assert take_restart_request(path) is None  # consumed


def test_kafka_nodes_pass_the_timeout_on():
    class Cluster:
        calls: list[tuple[int, float | None]] = []

        def start_node(self, node_id: int, timeout_s: float | None = None) -> None:
            self.calls.append((node_id, timeout_s))

    cluster = Cluster()
    KafkaNodes(cluster).restart(3, 42.0)  # type: ignore[arg-type]
    assert cluster.calls == [(3, 42.0)]


class ThreeNodes(node_cluster.NodeCluster):
    """Just enough of a cluster for start_node's readiness wait; node 3 stays down."""

    host = "127.0.0.1"
    FIRST_POLL_S = 0.0
    version = "test"
    started = True

    def __init__(self, nodes: int) -> None:
        super().__init__(nodes)
        self.running = {1: True, 2: False, 3: False}

    def _layout(self) -> str: return ""
    def _client_ports(self) -> list[int]: return [1, 2, 3]
    def _probe_port(self, node_id: int) -> int: return node_id
    def _prepare(self) -> None: pass
    def _launch_nodes(self) -> None: pass
    def _exit_reason(self, node_id: int) -> str | None: return None
    def _node_running(self, node_id: int) -> bool: return self.running[node_id]
    def _bring_up(self, node_id: int) -> bool:
        self.running[node_id] = True
        return True
    def stop_node(self, node_id: int, timeout_s: float = 30.0) -> None: pass
    def kill_node(self, node_id: int) -> None: pass
    def log_tail(self, node_id: int, lines: int = 25) -> str: return ""
    def stop(self) -> None: pass


def test_a_node_started_again_waits_for_the_running_nodes_not_all(monkeypatch):
    # node 2 comes back while node 3 is still down: Metadata lists the 2 that run
    monkeypatch.setattr(node_cluster, "metadata_brokers", lambda *a, **k: 2)
    monkeypatch.setattr(node_cluster.time, "sleep", lambda s: None)
    cluster = ThreeNodes(3)
    cluster.start_node(2, timeout_s=5.0)  # returned: ready, not "all 3 node(s)" timing out
    assert cluster.running_count() == 2


def test_the_wait_still_ends_at_the_timeout(monkeypatch):
    monkeypatch.setattr(node_cluster, "metadata_brokers", lambda *a, **k: None)
    clock = iter(range(0, 1000, 1))
    monkeypatch.setattr(node_cluster.time, "monotonic", lambda: float(next(clock)))
    monkeypatch.setattr(node_cluster.time, "sleep", lambda s: None)
    with pytest.raises(BrokerError, match="the running 2 node"):
        ThreeNodes(3).start_node(2, timeout_s=7.0)
