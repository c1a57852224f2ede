"""Where a run's brokers come from: the embedded Tansu broker, real Apache Kafka started
here (``--broker kafka``), or a cluster the user names."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from producer_core.errors import UsageError

#: The broker implementations kbatch can start itself (``--broker``); tansu is the default.
BROKERS = ("tansu", "kafka")
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
    version when kbatch knows it from what it started (None: results_io asks Tansu, or
    'unknown' for an external cluster); ``started_in_s`` how long starting it took.
    """

    bootstrap: str
    description: str
    embedded: bool
    implementation: str = "tansu"
    version: str | None = None
    started_in_s: float | None = None
    processes: Callable[[], BrokerProcesses] | None = None
    """The broker processes as they are now (None: kbatch started none)."""


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
    if broker == "kafka" and brokers not in KAFKA_NODE_COUNTS:
        raise UsageError(
            f"--brokers {brokers} with --broker kafka: kbatch starts a Kafka cluster of 1 node "
            "or of 3 (3 = a real controller quorum, with leaders spread over three brokers).")


@contextmanager
def broker_target(
    bootstrap: str | None, brokers: int = 1, rtt_ms: float = 0.0, jitter_ms: float = 0.0,
    broker: str = "tansu", kafka_home: str | Path | None = None,
) -> Iterator[BrokerTarget]:
    """Yield the cluster to run against; starts (and always stops) a broker if none is given.

    ``broker="kafka"`` starts real Apache Kafka (1 or 3 KRaft nodes; a delay goes through a
    relay per node). With Tansu, ``brokers`` > 1 or a delay starts an embedded lab of that
    shape instead (N Tansu brokers behind a facade, see producer_core.lab); 1 broker without
    delay is plain Tansu.
    """
    validate_broker_choice(broker, bootstrap, brokers, kafka_home)
    lab_wanted = brokers != 1 or rtt_ms != 0 or jitter_ms != 0
    if bootstrap:
        if lab_wanted:
            raise UsageError(
                "--brokers, --rtt-ms and --jitter-ms shape an embedded lab; they cannot be "
                "combined with --bootstrap-servers, whose cluster has its own brokers and "
                "network."
            )
        yield BrokerTarget(bootstrap, f"external cluster {bootstrap}", embedded=False,
                           implementation="external")
        return
    if broker == "kafka":
        from producer_core.brokers.kafka_target import kafka_target
        from producer_core.lab.delay import DelayModel

        delay = DelayModel(rtt_ms, jitter_ms)
        with kafka_target(brokers, rtt_ms, jitter_ms, kafka_home) as cluster:
            description = cluster.description
            if delay.enabled:
                description += f", {delay.describe()} through a relay per broker"
            yield BrokerTarget(cluster.bootstrap, description, embedded=True,
                               implementation="kafka", version=cluster.version,
                               started_in_s=cluster.start_time_s,
                               processes=lambda: BrokerProcesses(
                                   {str(i): p for i, p in cluster.node_pids.items()},
                                   {str(i): u for i, u in cluster.metrics_urls.items()},
                                   warning=cluster.metrics_warning))
        return
    if lab_wanted:
        from producer_core.lab import Lab

        with Lab(brokers, rtt_ms, jitter_ms) as lab:
            yield BrokerTarget(lab.bootstrap, lab.description, embedded=True,
                               processes=lambda: BrokerProcesses(
                                   {str(i): p for i, p in enumerate(lab.pids, start=1)},
                                   other_pids=tuple(p for p in [lab.facade_pid] if p)))
        return
    from producer_core.brokers.embedded import EmbeddedBroker

    with EmbeddedBroker() as tansu:
        yield BrokerTarget(
            tansu.bootstrap, f"embedded Tansu broker at {tansu.bootstrap}", embedded=True,
            processes=lambda: BrokerProcesses({"1": tansu.pid} if tansu.pid else {}))
