"""The foreground loop of `kbatch lab up`: keep serving when a node dies, restart on request.

A lab that stopped as soon as one node exited could not be used for a node-kill fault run.
So the loop only watches: a node that died is reported (on the terminal and in the state
file, for `lab status`), the other nodes keep serving, and a `kbatch lab restart NODE`
(a request file next to the state, see ``lab.state``) starts it again. The loop ends when
the lab's own front (the Tansu facade) stops, or by a signal, as before.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Protocol

from cli.render import console
from producer_core.brokers.lab.state import start_time, take_restart_request, write_state
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

    def restart(self, node_id: int) -> None: ...

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

    def restart(self, node_id: int) -> None:
        self._lab.restart_node(node_id)

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

    def restart(self, node_id: int) -> None:
        self._cluster.start_node(node_id)

    def serving(self) -> bool:
        return True  # no front to lose: the nodes serve clients themselves


def node_documents(nodes: LabNodes, previous: list[dict[str, Any]] | None = None,
                   errors: dict[int, str] | None = None) -> list[dict[str, Any]]:
    """The state file's view of every node: address, pid and start time, running or not."""
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
        if errors and node_id in errors:
            record["restart_error"] = errors[node_id]
        records.append(record)
    return records


def serve(nodes: LabNodes, document: dict[str, Any]) -> None:
    """Watch the nodes until the lab's front stops (or a signal ends the caller)."""
    down: set[int] = set()
    errors: dict[int, str] = {}
    while nodes.serving():
        changed = False
        for node_id in nodes.node_ids():
            if nodes.node_pid(node_id) is None and node_id not in down:
                down.add(node_id)
                changed = True
                console.print(f"node {node_id} ({nodes.kind}) exited; the lab keeps serving "
                              f"with the other nodes. Start it again with `kbatch lab restart "
                              f"{node_id}`.")
        wanted = take_restart_request()
        if wanted is not None and wanted in nodes.node_ids():
            errors.pop(wanted, None)
            try:
                nodes.restart(wanted)
            except KbatchError as exc:
                errors[wanted] = str(exc)
                console.print(f"node {wanted} could not be restarted: {exc}")
            else:
                down.discard(wanted)
                pid = nodes.node_pid(wanted)
                console.print(f"node {wanted} restarted ({nodes.kind} pid {pid}).")
            changed = True
        if changed:
            document["nodes"] = node_documents(nodes, document.get("nodes"), errors)
            document["backend_pids"] = [n["pid"] for n in document["nodes"]
                                        if n["state"] == "running"]
            write_state(document)
        time.sleep(POLL_S)
