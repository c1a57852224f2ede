"""Where a run's brokers come from: the embedded Tansu broker, or a cluster the user names."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from producer_core.errors import UsageError


@dataclass(frozen=True)
class BrokerTarget:
    """The bootstrap servers of a run and a short description for reports."""

    bootstrap: str
    description: str
    embedded: bool


@contextmanager
def broker_target(
    bootstrap: str | None, brokers: int = 1, rtt_ms: float = 0.0, jitter_ms: float = 0.0
) -> Iterator[BrokerTarget]:
    """Yield the cluster to run against; starts (and always stops) Tansu if none is given.

    ``brokers`` > 1 or a delay starts an embedded lab of that shape instead (N Tansu
    brokers behind a facade, see producer_core.lab); 1 broker without delay is plain Tansu.
    """
    lab_wanted = brokers != 1 or rtt_ms != 0 or jitter_ms != 0
    if bootstrap:
        if lab_wanted:
            raise UsageError(
                "--brokers, --rtt-ms and --jitter-ms shape an embedded lab; they cannot be "
                "combined with --bootstrap-servers, whose cluster has its own brokers and "
                "network."
            )
        yield BrokerTarget(bootstrap, f"external cluster {bootstrap}", embedded=False)
        return
    if lab_wanted:
        from producer_core.lab import Lab

        with Lab(brokers, rtt_ms, jitter_ms) as lab:
            yield BrokerTarget(lab.bootstrap, lab.description, embedded=True)
        return
    from producer_core.brokers.embedded import EmbeddedBroker

    with EmbeddedBroker() as broker:
        yield BrokerTarget(
            broker.bootstrap, f"embedded Tansu broker at {broker.bootstrap}", embedded=True
        )
