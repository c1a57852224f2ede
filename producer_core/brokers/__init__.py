"""Where a run's brokers come from: the embedded Tansu broker, or a cluster the user names."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class BrokerTarget:
    """The bootstrap servers of a run and a short description for reports."""

    bootstrap: str
    description: str
    embedded: bool


@contextmanager
def broker_target(bootstrap: str | None) -> Iterator[BrokerTarget]:
    """Yield the cluster to run against; starts (and always stops) Tansu if none is given."""
    if bootstrap:
        yield BrokerTarget(bootstrap, f"external cluster {bootstrap}", embedded=False)
        return
    from producer_core.brokers.embedded import EmbeddedBroker

    with EmbeddedBroker() as broker:
        yield BrokerTarget(
            broker.bootstrap, f"embedded Tansu broker at {broker.bootstrap}", embedded=True
        )
