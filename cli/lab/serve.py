"""The foreground loop of `kbatch lab up`: keep serving when a node dies, restart on request.

A lab that stopped as soon as one node exited could not be used for a node-kill fault run.
So the loop only watches: a node that died is reported (on the terminal and in the state
file, for `lab status`), the other nodes keep serving, and a `kbatch lab restart NODE`
(a request file next to the state, see ``lab.state``) starts it again. The loop ends when
the lab's own front (the Tansu facade) stops, or by a signal, as before.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from cli.render.tables import console
from producer_core.brokers.lab.state import (
    RestartRequest,
    start_time,
    take_restart_request,
    write_state,
)
from producer_core.errors import KbatchError

if TYPE_CHECKING:
    from producer_core.brokers.kafka import KafkaCluster
    from producer_core.brokers.lab import Lab

POLL_S = 0.2


class LabNodes(Protocol):
    """The nodes of a running lab, whichever broker serves them."""

    kind: str

    def node_ids(self) -> list[int]: ...

    def address(self, node_id: int) -> tuple[str, int]: ...

    def node_pid(self, node_id: int) -> int | None: ...

    def restart(self, node_id: int, timeout_s: float | None = None) -> None: ...

    def serving(self) -> bool: ...


class TansuNodes:
    kind = "Tansu"

    def __init__(self, lab: Lab) -> None:
        self._lab = lab

    def node_ids(self) -> list[int]:
        return [n.node_id for n in self._lab.nodes]

    def address(self, node_id: int) -> tuple[str, int]:
        node = self._lab.layout.node(node_id) if self._lab.layout else None
        return (node.host, node.port) if node else ("?", 0)

    def node_pid(self, node_id: int) -> int | None:
        return self._lab.node_pid(node_id)

    def restart(self, node_id: int, timeout_s: float | None = None) -> None:
        if timeout_s is None:
            self._lab.restart_node(node_id)
        else:
            self._lab.restart_node(node_id, timeout_s)

    def serving(self) -> bool:
        return self._lab.facade_alive


class KafkaNodes:
    kind = "Kafka"

    def __init__(self, cluster: KafkaCluster) -> None:
        self._cluster = cluster

    def node_ids(self) -> list[int]:
        return list(self._cluster.node_ids)

    def address(self, node_id: int) -> tuple[str, int]:
        return self._cluster.host, self._cluster.port(node_id)

    def node_pid(self, node_id: int) -> int | None:
        return self._cluster.node_pids.get(node_id)

    def restart(self, node_id: int, timeout_s: float | None = None) -> None:
        self._cluster.start_node(node_id, timeout_s)

    def serving(self) -> bool:
        return True  # no front to lose: the nodes serve clients themselves


def node_documents(nodes: LabNodes, previous: list[dict[str, Any]] | None = None,
                   errors: dict[int, str] | None = None,
                   answered: dict[int, str] | None = None) -> list[dict[str, Any]]:
    """The state file's view of every node: address, pid and start time, running or not;
    the last restart request the lab answered for it (``restart_request``) and, if that
    restart failed, why (``restart_error``)."""
    before = {n["node_id"]: n for n in previous or []}
    records = []
    for node_id in nodes.node_ids():
        host, port = nodes.address(node_id)
        record: dict[str, Any] = {"node_id": node_id, "host": host, "port": port}
        pid = nodes.node_pid(node_id)
        start = start_time(pid) if pid is not None else None
        if pid is not None and start is not None:
            record.update(pid=pid, start=start, state="running")
        else:
            old = before.get(node_id, {})
            record.update({k: old[k] for k in ("pid", "start") if k in old}, state="down")
        if answered and node_id in answered:
            record["restart_request"] = answered[node_id]
        if errors and node_id in errors:
            record["restart_error"] = errors[node_id]
        records.append(record)
    return records


class Watcher:
    """One pass at a time (``poll``) over a lab's nodes: deaths and comebacks are read from
    the processes on every pass (a node restarted, even by a restart that then failed its
    readiness wait, is watched again), restart requests are carried out with the request's
    timeout, and the state file is rewritten whenever what it says changed. A restart's old
    error is cleared in the state file before the restart begins, and every answer names its
    request, so `lab restart` never reads an older request's verdict as its own."""

    def __init__(self, nodes: LabNodes, document: dict[str, Any],
                 write: Callable[[dict[str, Any]], Any] = write_state,
                 take: Callable[[], RestartRequest | None] = take_restart_request,
                 say: Callable[[str], Any] = console.print) -> None:
        self.nodes, self.document = nodes, document
        self._write, self._take, self._say = write, take, say
        self.down: set[int] = set()
        self.pids: dict[int, int | None] = {n: nodes.node_pid(n) for n in nodes.node_ids()}
        self.errors: dict[int, str] = {}
        self.answered: dict[int, str] = {}

    def poll(self) -> None:
        changed = self._look()
        request = self._take()
        if request is not None and request.node_id in self.nodes.node_ids():
            self._restart(request)
            changed = True
        if changed:
            self.save()

    def _look(self) -> bool:
        """Note deaths and comebacks; whether anything the state file says changed."""
        changed = False
        for node_id in self.nodes.node_ids():
            pid = self.nodes.node_pid(node_id)
            if pid is None and node_id not in self.down:
                self.down.add(node_id)
                self._say(f"node {node_id} ({self.nodes.kind}) exited; the lab keeps serving "
                          f"with the other nodes. Start it again with `kbatch lab restart "
                          f"{node_id}`.")
                changed = True
            elif pid is not None:
                self.down.discard(node_id)
            changed = changed or pid != self.pids.get(node_id)
            self.pids[node_id] = pid
        return changed

    def _restart(self, request: RestartRequest) -> None:
        node_id = request.node_id
        self.errors.pop(node_id, None)
        self.save()  # the old verdict goes before the restart (which may take a while)
        try:
            self.nodes.restart(node_id, request.timeout_s)
        except KbatchError as exc:
            self.errors[node_id] = str(exc)
            self._say(f"node {node_id} could not be restarted: {exc}")
        else:
            self._say(f"node {node_id} restarted ({self.nodes.kind} pid "
                      f"{self.nodes.node_pid(node_id)}).")
        self.answered[node_id] = request.request
        self._look()  # watch the node from its new process on, whatever the verdict

    def save(self) -> None:
        self.document["nodes"] = node_documents(self.nodes, self.document.get("nodes"),
                                                self.errors, self.answered)
        self.document["backend_pids"] = [n["pid"] for n in self.document["nodes"]
                                         if n["state"] == "running"]
        self._write(self.document)


def serve(nodes: LabNodes, document: dict[str, Any]) -> None:
    """Watch the nodes until the lab's front stops (or a signal ends the caller)."""
    watcher = Watcher(nodes, document)
    while nodes.serving():
        watcher.poll()
        time.sleep(POLL_S)
