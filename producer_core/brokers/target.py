"""Starting (and always stopping) the brokers a run asked for: one of the broker modules,
the embedded lab, or nothing for a cluster the user names."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from producer_core.brokers import BrokerProcesses, BrokerTarget, validate_broker_choice
from producer_core.brokers.docker_target import FAULT_PROPERTIES, docker_target, faults_on
from producer_core.brokers.embedded import EmbeddedBroker
from producer_core.brokers.faults.spec import FaultSpec, check_supported, parse_faults
from producer_core.brokers.kafka_target import kafka_target
from producer_core.brokers.lab import Lab
from producer_core.brokers.lab.delay import DelayModel
from producer_core.brokers.lab_target import lab_target, running_lab
from producer_core.errors import UsageError


@contextmanager
def broker_target(
    bootstrap: str | None, brokers: int = 1, rtt_ms: float = 0.0, jitter_ms: float = 0.0,
    broker: str = "tansu", kafka_home: str | Path | None = None,
    kafka_image: str | None = None, faults: tuple[str, ...] = (),
) -> Iterator[BrokerTarget]:
    """Yield the cluster to run against; starts (and always stops) a broker if none is given.

    ``broker="kafka"`` starts real Apache Kafka (1 or 3 KRaft nodes; a delay goes through a
    relay per node). With Tansu, ``brokers`` > 1 or a delay starts an embedded lab of that
    shape instead (N Tansu brokers behind a facade, see producer_core.brokers.lab); 1 broker without
    delay is plain Tansu. ``broker="docker"`` runs Kafka nodes as containers
    (``brokers.docker``). ``faults``: `--fault` specs, run against the nodes kbatch starts.
    """
    validate_broker_choice(broker, bootstrap, brokers, kafka_home)
    fault_specs = check_container_options(broker, bootstrap, brokers, kafka_image, faults)
    lab_wanted = brokers != 1 or rtt_ms != 0 or jitter_ms != 0
    if broker == "docker":
        if rtt_ms or jitter_ms:
            raise UsageError("--rtt-ms and --jitter-ms apply to the embedded lab and "
                             "--broker kafka; --broker docker runs without added delay.")
        with docker_target(brokers, kafka_image, fault_specs) as (containers, runner):
            yield BrokerTarget(containers.bootstrap, containers.description, embedded=True,
                               implementation="docker", version=containers.version,
                               started_in_s=containers.start_time_s,
                               image=containers.image.name if containers.image else None,
                               processes=lambda: BrokerProcesses(
                                   {str(i): p for i, p in containers.node_pids.items()},
                                   {str(i): u for i, u in containers.metrics_urls.items()},
                                   warning=containers.metrics_warning),
                               faults=runner if fault_specs else None)
        return
    if bootstrap:
        if lab_wanted:
            raise UsageError(
                "--brokers, --rtt-ms and --jitter-ms shape an embedded lab; they cannot be "
                "combined with --bootstrap-servers, whose cluster has its own brokers and "
                "network."
            )
        running = running_lab(bootstrap)  # a lab kbatch started: measured as one it starts
        yield (lab_target(bootstrap, running) if running is not None else
               BrokerTarget(bootstrap, f"external cluster {bootstrap}", embedded=False,
                            implementation="external"))
        return
    if broker == "kafka":
        delay = DelayModel(rtt_ms, jitter_ms)
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
                               processes=lambda: BrokerProcesses(
                                   {str(i): p for i, p in cluster.node_pids.items()},
                                   {str(i): u for i, u in cluster.metrics_urls.items()},
                                   warning=cluster.metrics_warning),
                               faults=runner if fault_specs else None)
        return
    if lab_wanted:
        with Lab(brokers, rtt_ms, jitter_ms) as lab:
            yield BrokerTarget(lab.bootstrap, lab.description, embedded=True,
                               processes=lambda: BrokerProcesses(
                                   {str(i): p for i, p in enumerate(lab.pids, start=1)},
                                   other_pids=tuple(p for p in [lab.facade_pid] if p)))
        return
    with EmbeddedBroker() as tansu:
        yield BrokerTarget(
            tansu.bootstrap, f"embedded Tansu broker at {tansu.bootstrap}", embedded=True,
            processes=lambda: BrokerProcesses({"1": tansu.pid} if tansu.pid else {}))


def check_container_options(broker: str, bootstrap: str | None, brokers: int,
                            kafka_image: str | None, faults: tuple[str, ...]) -> list[FaultSpec]:
    """Refuse --kafka-image without --broker docker and faults the broker cannot take;
    return the parsed faults."""
    if kafka_image and broker != "docker":
        raise UsageError("--kafka-image names the container image of --broker docker; it "
                         "only applies with --broker docker.")
    specs = parse_faults(faults)
    check_supported(specs, broker, bootstrap, brokers)
    return specs
