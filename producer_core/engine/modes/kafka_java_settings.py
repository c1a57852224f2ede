"""Which kbatch settings reach the Java producer, and under which names (Java's own).

kbatch's setting names are the Java producer's, so the mapping is a set, not a rename.
Every one of them is passed with its kbatch value, explicit or default, so `kafka-java`
runs with exactly the settings the emulation (`java`) runs with. Settings the Java
producer does not have (kbatch's own modes' knobs) are refused when given explicitly.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from producer_core.errors import ConfigError

JAVA_NAMES = (
    "linger.ms", "batch.size", "acks", "max.in.flight.requests.per.connection",
    "request.timeout.ms", "delivery.timeout.ms", "retries", "retry.backoff.ms",
    "max.request.size", "buffer.memory", "max.block.ms", "compression.type", "client.id",
    "enable.idempotence",
)
"""kbatch settings that are KafkaProducer properties of the same name and meaning."""


def check_mode(explicit: Iterable[str], values: object, warnings: list[str]) -> None:
    """Mode kafka-java's settings check (`producer_core.engine.modes`)."""
    check_settings(explicit)


def check_settings(explicit: Iterable[str]) -> None:
    """Refuse settings the Java producer has no equivalent of, rather than ignore them."""
    refused = sorted(k for k in explicit if k not in JAVA_NAMES)
    if refused:
        accepted = sorted(JAVA_NAMES)
        raise ConfigError(
            f"Mode kafka-java has no equivalent of {', '.join(refused)}: the Java producer "
            "batches per partition (linger.ms, batch.size) and puts every ready partition "
            "of a broker into one ProduceRequest, with no broker-level collector or "
            "partition cap. Settings mode kafka-java accepts: "
            f"{', '.join(accepted)}."
        )


def java_properties(values: dict[str, Any]) -> dict[str, str]:
    """The KafkaProducer properties for these kbatch setting values."""
    properties = {}
    for name in JAVA_NAMES:
        if name in values:
            value = values[name]
            properties[name] = str(value).lower() if isinstance(value, bool) else str(value)
    return properties
