"""The clusters faults act on: who leads a partition, and the node operations of
``--broker kafka`` (JVM processes) next to those ``DockerKafkaCluster`` has itself."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterable
from typing import Any

from producer_core.brokers.probe import partition_leaders


def leader_of(addresses: Iterable[tuple[str, int]], partition: int,
              topic_hint: str | None) -> int | None:
    """The node leading ``partition`` of the run's topic, by the first node that answers.

    The topic is ``topic_hint`` itself, else the newest-named topic starting with it
    (compare-modes and sweep add a suffix per run), else the only non-internal topic."""
    for host, port in addresses:
        topics = partition_leaders(host, port)
        if topics is None:
            continue
        own = {t: p for t, p in topics.items() if not t.startswith("__")}
        if topic_hint and topic_hint in own:
            chosen = own[topic_hint]
        elif topic_hint and any(t.startswith(topic_hint) for t in own):
            chosen = own[max(t for t in own if t.startswith(topic_hint))]
        elif len(own) == 1:
            chosen = next(iter(own.values()))
        else:
            return None
        return chosen.get(partition)
    return None


class KafkaNodes:
    """Faults on ``--broker kafka``'s JVMs (a ``KafkaCluster``): pause is SIGSTOP."""

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster

    def leader_of(self, partition: int, topic_hint: str | None) -> int | None:
        nodes = self.cluster.node_ids
        return leader_of([(self.cluster.host, self.cluster.port(i)) for i in nodes],
                         partition, topic_hint)

    def _pid(self, node_id: int) -> int:
        pid = self.cluster.node_pids.get(node_id)
        if pid is None:
            raise LookupError(f"Kafka node {node_id} is not running")
        return int(pid)

    def pause_node(self, node_id: int) -> None:
        os.kill(self._pid(node_id), signal.SIGSTOP)

    def unpause_node(self, node_id: int) -> None:
        os.kill(self._pid(node_id), signal.SIGCONT)

    def kill_node(self, node_id: int) -> None:
        self.cluster.kill_node(node_id)

    def start_node(self, node_id: int) -> None:
        self.cluster.start_node(node_id)

    def restart_node(self, node_id: int) -> None:
        self.cluster.restart_node(node_id)

    def isolate_node(self, node_id: int) -> None:
        raise NotImplementedError("isolate needs --broker docker")

    heal_node = isolate_node
