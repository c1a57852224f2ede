"""A run's Kafka in containers, with its faults: what ``broker_target(broker="docker")``
and ``--broker kafka --fault`` use.

While the cluster runs, SIGTERM raises KeyboardInterrupt in the main thread (as for
``--broker kafka``), so a terminated kbatch unwinds and removes its containers and network.
Faults need timeouts short enough to act within seconds: with any ``--fault`` the brokers
declare a broker dead after 3 s without a heartbeat (Kafka's default is 9 s), so an
isolated leader is replaced while it is cut off, as a real partition would do.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

from producer_core.brokers.docker import DockerKafkaCluster
from producer_core.brokers.faults.runner import FaultRunner
from producer_core.brokers.faults.spec import FaultSpec
from producer_core.brokers.kafka_target import sigterm_as_interrupt

#: Brokers fenced 3 s after their last heartbeat, so faults of a few seconds matter.
FAULT_PROPERTIES = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
}


@contextlib.contextmanager
def docker_target(nodes: int, image: str | None = None,
                  faults: list[FaultSpec] | None = None,
                  progress: Callable[[str], None] | None = None,
                  ) -> Iterator[tuple[DockerKafkaCluster, FaultRunner]]:
    """A running containerised cluster and its (started) fault runner."""
    say = progress or _stderr
    properties = FAULT_PROPERTIES if faults else {}
    with contextlib.ExitStack() as stack:
        stack.enter_context(sigterm_as_interrupt())
        cluster = stack.enter_context(
            DockerKafkaCluster(nodes, image=image, progress=say, server_properties=properties,
                               metrics_exporter=True))
        runner = stack.enter_context(FaultRunner(list(faults or []), cluster, log=say))
        yield cluster, runner


@contextlib.contextmanager
def faults_on(cluster: Any, faults: list[FaultSpec],
              progress: Callable[[str], None] | None = None) -> Iterator[FaultRunner]:
    """The fault runner of ``--broker kafka`` (JVM nodes)."""
    from producer_core.brokers.faults.nodes import KafkaNodes

    with FaultRunner(faults, KafkaNodes(cluster), log=progress or _stderr) as runner:
        yield runner


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
