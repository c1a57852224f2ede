"""Where a run's brokers come from: the embedded Tansu broker, real Apache Kafka started
here (``--broker kafka``), or a cluster the user names.

This package's own module holds only what the choice is (`BrokerTarget`, the names and
their checks), so the broker modules and the lab can import it; `target.broker_target`
makes the choice and imports them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from producer_core.errors import UsageError
from producer_core.results.run_facts import RunFacts

#: The broker implementations kbatch can start itself (``--broker``); tansu is the default.
BROKERS = ("tansu", "kafka", "docker")
KAFKA_NODE_COUNTS = (1, 3)


@dataclass(frozen=True)
class BrokerProcesses:
    """The broker processes kbatch started, now (their cost is measured, measure/)."""

    pids: dict[str, int] = field(default_factory=dict)
    """node name -> pid of each broker process."""
    metrics_urls: dict[str, str] = field(default_factory=dict)
    """node name -> its Prometheus endpoint (the JMX exporter on Kafka nodes)."""
    other_pids: tuple[int, ...] = ()
    """Child processes that are neither broker nor client (the lab's facade)."""
    warning: str | None = None
    """Why something is not measured."""


@dataclass(frozen=True)
class BrokerTarget:
    """The bootstrap servers of a run and a short description for reports.

    ``implementation`` is ``tansu``, ``kafka`` or ``external``; ``version`` is the broker's
    version when kbatch knows it from what it started (Kafka's release; Tansu's `--version`,
    filled in when not given; None for an external cluster: the results say 'unknown');
    ``started_in_s`` how long starting it took.
    """

    bootstrap: str
    description: str
    embedded: bool
    implementation: str = "tansu"
    version: str | None = None
    started_in_s: float | None = None
    processes: Callable[[], BrokerProcesses] | None = None
    """The broker processes as they are now (None: kbatch started none)."""
    image: str | None = None  # --broker docker: the container image that ran
    faults: Any = None  # a producer_core.brokers.faults.runner.FaultRunner when --fault is given

    def __post_init__(self) -> None:
        if self.version is None and self.embedded and self.implementation == "tansu":
            # Tansu kbatch starts (here, per run, per Spark task): the binary's --version
            from producer_core.brokers.embedded import tansu_version

            object.__setattr__(self, "version", tansu_version())

    def facts(self) -> RunFacts:
        """What the results say about this target. Take them once its brokers have stopped:
        stopping undoes the faults still active and closes their records."""
        return RunFacts(self.description, self.embedded, self.implementation, self.version,
                        self.image, self.faults.report() if self.faults is not None else None)


def validate_broker_choice(broker: str, bootstrap: str | None, brokers: int,
                           kafka_home: str | Path | None) -> None:
    """Refuse combinations of --broker, --bootstrap-servers, --brokers, --kafka-home."""
    if broker not in BROKERS:
        raise UsageError(f"--broker {broker!r} is not known; choose one of {', '.join(BROKERS)}.")
    if bootstrap and broker != "tansu":
        raise UsageError(
            f"--broker {broker} starts a broker on this machine; it cannot be combined with "
            "--bootstrap-servers, which names a cluster that already runs.")
    if kafka_home and broker != "kafka":
        raise UsageError("--kafka-home says where Apache Kafka is installed; it only applies "
                         "with --broker kafka.")
    if broker in ("kafka", "docker"):
        check_kafka_nodes(broker, brokers)


def check_kafka_nodes(broker: str, nodes: int) -> None:
    """Refuse a Kafka cluster of another size than 1 or 3 nodes (``--broker broker``)."""
    if nodes not in KAFKA_NODE_COUNTS:
        raise UsageError(
            f"--brokers {nodes} with --broker {broker}: kbatch starts a Kafka cluster of 1 "
            "node or of 3 (3 = a real controller quorum, with leaders spread over three "
            "brokers).")
