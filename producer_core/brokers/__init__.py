"""Where a run's brokers come from: the embedded Tansu broker, real Apache Kafka started
here (``--broker kafka``), or a cluster the user names."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from producer_core.errors import UsageError

#: The broker implementations kbatch can start itself (``--broker``); tansu is the default.
BROKERS = ("tansu", "kafka", "docker")
KAFKA_NODE_COUNTS = (1, 3)


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
    image: str | None = None  # --broker docker: the container image that ran
    faults: Any = None  # a producer_core.faults.runner.FaultRunner when --fault is given


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
    if broker in ("kafka", "docker") and brokers not in KAFKA_NODE_COUNTS:
        raise UsageError(
            f"--brokers {brokers} with --broker {broker}: kbatch starts a Kafka cluster of 1 "
            "node or of 3 (3 = a real controller quorum, with leaders spread over three "
            "brokers).")


@contextmanager
def broker_target(
    bootstrap: str | None, brokers: int = 1, rtt_ms: float = 0.0, jitter_ms: float = 0.0,
    broker: str = "tansu", kafka_home: str | Path | None = None,
    kafka_image: str | None = None, faults: tuple[str, ...] = (),
) -> Iterator[BrokerTarget]:
    """Yield the cluster to run against; starts (and always stops) a broker if none is given.

    ``broker="kafka"`` starts real Apache Kafka (1 or 3 KRaft nodes; a delay goes through a
    relay per node). With Tansu, ``brokers`` > 1 or a delay starts an embedded lab of that
    shape instead (N Tansu brokers behind a facade, see producer_core.lab); 1 broker without
    delay is plain Tansu.
    """
    validate_broker_choice(broker, bootstrap, brokers, kafka_home)
    fault_specs = check_container_options(broker, bootstrap, brokers, kafka_image, faults)
    lab_wanted = brokers != 1 or rtt_ms != 0 or jitter_ms != 0
    if broker == "docker":
        if rtt_ms or jitter_ms:
            raise UsageError("--rtt-ms and --jitter-ms apply to the embedded lab and "
                             "--broker kafka; --broker docker runs without added delay.")
        from producer_core.brokers.docker_target import docker_target

        with docker_target(brokers, kafka_image, fault_specs) as (cluster, runner):
            yield BrokerTarget(cluster.bootstrap, cluster.description, embedded=True,
                               implementation="docker", version=cluster.version,
                               started_in_s=cluster.start_time_s,
                               image=cluster.image.name if cluster.image else None,
                               faults=runner if fault_specs else None)
        return
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
        from producer_core.brokers.docker_target import FAULT_PROPERTIES, faults_on

        options = {"server_properties": FAULT_PROPERTIES} if fault_specs else None
        with kafka_target(brokers, rtt_ms, jitter_ms, kafka_home,
                          cluster_options=options) as cluster, \
                faults_on(cluster, fault_specs) as runner:
            description = cluster.description
            if delay.enabled:
                description += f", {delay.describe()} through a relay per broker"
            yield BrokerTarget(cluster.bootstrap, description, embedded=True,
                               implementation="kafka", version=cluster.version,
                               started_in_s=cluster.start_time_s,
                               faults=runner if fault_specs else None)
        return
    if lab_wanted:
        from producer_core.lab import Lab

        with Lab(brokers, rtt_ms, jitter_ms) as lab:
            yield BrokerTarget(lab.bootstrap, lab.description, embedded=True)
        return
    from producer_core.brokers.embedded import EmbeddedBroker

    with EmbeddedBroker() as tansu:
        yield BrokerTarget(
            tansu.bootstrap, f"embedded Tansu broker at {tansu.bootstrap}", embedded=True
        )


def check_container_options(broker: str, bootstrap: str | None, brokers: int,
                            kafka_image: str | None, faults: tuple[str, ...]) -> list[Any]:
    """Refuse --kafka-image without --broker docker and faults the broker cannot take;
    return the parsed faults."""
    from producer_core.faults.spec import check_supported, parse_faults

    if kafka_image and broker != "docker":
        raise UsageError("--kafka-image names the container image of --broker docker; it "
                         "only applies with --broker docker.")
    specs = parse_faults(faults)
    check_supported(specs, broker, bootstrap, brokers)
    return specs
