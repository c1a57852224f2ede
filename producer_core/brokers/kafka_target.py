"""A run's Apache Kafka: the cluster, the lab's round trip in front of it, and clean exits.

``kafka_target`` is what ``broker_target(..., broker="kafka")`` uses: it starts a
``KafkaCluster`` of 1 or 3 nodes; with ``--rtt-ms``/``--jitter-ms`` each node advertises a
delaying relay (``lab.relay``) so every response takes the round trip; and while the
cluster runs, SIGTERM (when nothing of kbatch's handles it already) is turned into
``Interrupted(SIGTERM)`` in the main thread, so a terminated kbatch unwinds its ``with``
blocks, stops the JVMs and deletes their data like Ctrl-C does, and exits 143 (the default
SIGTERM action would skip every cleanup).
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import FrameType
from typing import Any

from producer_core.brokers.kafka import KafkaCluster
from producer_core.brokers.lab.delay import DelayModel
from producer_core.brokers.lab.relay import DelayRelays
from producer_core.errors import Interrupted


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises Interrupted(SIGTERM) (exit 143), unless a handler
    of kbatch's own already takes SIGTERM (a run's StopOnSignal stops the run gracefully
    and keeps partial results: replacing it would lose them). Main thread only."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None)):
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second one must not cut the cleanup
        raise Interrupted(signal.SIGTERM)

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def kafka_target(nodes: int, rtt_ms: float = 0.0, jitter_ms: float = 0.0,
                 kafka_home: str | Path | None = None,
                 progress: Callable[[str], None] | None = None,
                 cluster_options: Mapping[str, Any] | None = None) -> Iterator[KafkaCluster]:
    """A running cluster of ``nodes`` (1 or 3), behind delaying relays if a delay is asked."""
    delay = DelayModel(rtt_ms, jitter_ms)
    with contextlib.ExitStack() as stack:
        stack.enter_context(sigterm_as_interrupt())
        advertised: dict[int, int] = {}
        relays = None
        if delay.enabled:
            relays = DelayRelays(nodes, delay)
            stack.callback(relays.stop)
            advertised = dict(enumerate(relays.start(), start=1))
        options = {"metrics_exporter": True, **(cluster_options or {})}
        cluster = KafkaCluster(nodes, kafka_home=kafka_home, advertised_ports=advertised,
                               progress=progress or _stderr, **options)
        stack.enter_context(cluster)
        if relays is not None:
            relays.set_upstreams([(cluster.host, cluster.port(i)) for i in cluster.node_ids])
        yield cluster


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
