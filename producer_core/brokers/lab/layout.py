"""Who the lab's clients think leads what: node ids, addresses, partition leaders, coordinators.

A lab of N backends is presented as nodes 1..N. Leadership is round-robin by partition
(partition p of every topic is led by node ``p % N + 1``) unless an assignment names the
leader of each partition of a topic. Replicas and ISR are always just the leader: every
backend is a separate single-node broker, so there is no replication to show.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from producer_core.errors import UsageError


@dataclass(frozen=True)
class Node:
    """One broker as the lab's clients see it."""

    node_id: int
    host: str
    port: int

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


class Layout:
    """The cluster view the facade presents (pure: no sockets, no clock)."""

    def __init__(
        self, nodes: Sequence[Node], assignment: Mapping[str, Sequence[int]] | None = None
    ) -> None:
        if not nodes:
            raise UsageError("A lab needs at least one node.")
        self.nodes = list(nodes)
        self._by_id = {node.node_id: node for node in self.nodes}
        self._assignment = {topic: list(leaders) for topic, leaders in (assignment or {}).items()}
        for topic, leaders in self._assignment.items():
            unknown = sorted({n for n in leaders if n not in self._by_id})
            if not leaders or unknown:
                raise UsageError(
                    f"The leader assignment of topic {topic!r} must list node ids from "
                    f"{self.nodes[0].node_id} to {self.nodes[-1].node_id}"
                    + (f"; {unknown} are not nodes of this lab." if unknown else ".")
                )

    @property
    def controller(self) -> Node:
        """The node named as controller (the first; it also receives admin requests)."""
        return self.nodes[0]

    def node(self, node_id: int) -> Node:
        return self._by_id[node_id]

    def leader(self, topic: str, partition: int) -> int:
        """Node id that leads ``partition`` of ``topic``.

        An assignment shorter than the topic repeats from its start, so ``[1, 1, 2]``
        means "two partitions on node 1 for every one on node 2" for any partition count.
        """
        leaders = self._assignment.get(topic)
        if leaders:
            return leaders[partition % len(leaders)]
        return self.nodes[partition % len(self.nodes)].node_id

    def coordinator(self, key: str) -> Node:
        """Group or transaction coordinator for ``key``: a stable hash over the nodes."""
        return self.nodes[zlib.crc32(key.encode("utf-8")) % len(self.nodes)]
