"""Mode librdkafka: the real client (confluent-kafka) on the same workload.

Everything kbatch knows about librdkafka's configuration lives here: which kbatch
settings it has under which names (`LIBRDKAFKA_NAMES`), which it refuses, the properties
kbatch reserves for itself, and librdkafka's own judgement of a configuration, asked
when the settings are built (a bad property is the user's error, exit 2, before any
broker starts). The driver (`producer_core.engine.drivers.librdkafka`) is loaded only when a
run of this mode starts.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from producer_core.engine.modes.spec import ModeSpec, SettingSpec
from producer_core.errors import ConfigError, UsageError

if TYPE_CHECKING:
    from producer_core.settings import ProducerSettings

LIBRDKAFKA_NAMES = {
    "linger.ms": "linger.ms",
    "batch.size": "batch.size",
    "batch.num.messages": "batch.num.messages",
    "acks": "acks",
    "max.in.flight.requests.per.connection": "max.in.flight.requests.per.connection",
    "compression.type": "compression.type",
    "max.request.size": "message.max.bytes",
    "request.timeout.ms": "request.timeout.ms",
    "delivery.timeout.ms": "delivery.timeout.ms",
    "retries": "retries",
    "enable.idempotence": "enable.idempotence",
    "retry.backoff.ms": "retry.backoff.ms",
    "client.id": "client.id",
    "buffer.memory": "queue.buffering.max.kbytes",
}
"""kbatch setting -> the librdkafka property that means the same thing (mode librdkafka).
`buffer.memory` is converted to kilobytes. `max.block.ms` is not passed on: it bounds how
long kbatch's generator waits on a full librdkafka queue. Any other kbatch setting is refused;
a name kbatch does not know is a librdkafka property and is passed on as given."""

LIBRDKAFKA_OWN = frozenset({"max.block.ms", "partitioner", "sticky.partitioning.linger.ms"})

LIBRDKAFKA_RESERVED = frozenset({"bootstrap.servers", "metadata.broker.list",
                                 "statistics.interval.ms"})
"""librdkafka properties kbatch sets itself (the cluster, and the statistics its counts
come from)."""

ALWAYS_PASSED = ("acks", "client.id", "enable.idempotence")
"""Passed even at their defaults: kbatch's defaults (Java's) differ from librdkafka's."""

PATCHED_MAX_PARTITIONS = 100_000
"""The largest `produce.request.max.partitions` the patched librdkafka takes (its range is
1..100000; kbatch's -1 means no bound)."""

CLIENT_NAMES: dict[str, tuple[dict[str, str], tuple[str, ...]]] = {}
"""Modes that run librdkafka under names of their own: mode -> (kbatch setting -> property,
the settings passed even at their defaults). Filled by those modes' modules
(`modes.librdkafka_broker`); mode librdkafka uses `LIBRDKAFKA_NAMES` and `ALWAYS_PASSED`."""

BATCH_NUM_MESSAGES = SettingSpec(
    "batch.num.messages", 10000, "int", "mode librdkafka only: messages per partition batch "
    "at most (librdkafka's own setting)", 1, 1_000_000,
    modes=("librdkafka", "librdkafka-broker"))

log = logging.getLogger("kbatch.librdkafka")
log.addHandler(logging.NullHandler())
log.propagate = False


def check_librdkafka(explicit: set[str], values: Mapping[str, Any],
                     warnings: list[str]) -> None:
    """Mode librdkafka: refuse settings librdkafka does not have, rather than silently not
    applying them."""
    refused = sorted(k for k in explicit if k not in LIBRDKAFKA_NAMES and k not in LIBRDKAFKA_OWN)
    if refused:
        accepted = ", ".join(sorted([*LIBRDKAFKA_NAMES, *LIBRDKAFKA_OWN]))
        raise ConfigError(
            f"Mode librdkafka has no equivalent of {', '.join(refused)}: librdkafka has no "
            "broker-level collector, and puts exactly one partition in every ProduceRequest "
            f"(librdkafka issue #1700). Settings mode librdkafka accepts: {accepted}."
        )
    if "max.request.size" in explicit and values["max.request.size"] > 1_000_000_000:
        raise ConfigError(
            f"max.request.size={values['max.request.size']} is above librdkafka's "
            "message.max.bytes limit of 1000000000."
        )


def check_built(settings: ProducerSettings) -> None:
    """A librdkafka property may not also be set through kbatch's name for it; and when
    properties are passed on, librdkafka judges the configuration now."""
    passthrough = dict(settings.librdkafka_properties)
    clashes = sorted(f"{key} (set through {kbatch})" for kbatch, key in LIBRDKAFKA_NAMES.items()
                     if key in passthrough and kbatch in settings.explicit and kbatch != key)
    if clashes:
        raise ConfigError(f"Mode librdkafka: {', '.join(clashes)} given twice; set it once.")
    if settings.librdkafka_properties or settings.client_properties:
        create_producer(librdkafka_config(settings)[0])


def librdkafka_config(settings: ProducerSettings, mode: str = "librdkafka"
                      ) -> tuple[dict[str, Any], dict[str, Any]]:
    """(librdkafka properties, the kbatch settings they came from) for these settings, in
    mode librdkafka or a mode that names its own (`CLIENT_NAMES`: librdkafka-broker)."""
    from producer_core.security import redact
    from producer_core.workload.partitioners import Partitioning
    names, always = CLIENT_NAMES.get(mode, (LIBRDKAFKA_NAMES, ALWAYS_PASSED))
    config: dict[str, Any] = {}
    used: dict[str, Any] = {}
    for key in [*always, *sorted(settings.explicit)]:
        name = names.get(key)
        if name is None or key in used:
            continue
        value = settings[key]
        used[key] = value
        if key == "buffer.memory":
            value = max(1, math.ceil(value / 1024))
        if key == "produce.request.max.partitions" and value <= 0:
            value = PATCHED_MAX_PARTITIONS  # kbatch's -1 (no bound): the library's largest
        config[name] = str(value)
    if "max.block.ms" in settings.explicit:
        used["max.block.ms"] = settings["max.block.ms"]
    if Partitioning.from_settings(settings).librdkafka:  # librdkafka chooses (README)
        for key in ("partitioner", "sticky.partitioning.linger.ms"):
            config[key] = str(settings[key])
            used[key] = settings[key]
    config.update(settings.librdkafka_properties)
    config.update(settings.security.librdkafka_properties())
    used.update(dict(settings.librdkafka_properties))
    used.update(dict(settings.client_properties))
    used.update(settings.topic_creation.as_dict())
    return config, redact(used)


def shown_config(config: dict[str, Any]) -> dict[str, Any]:
    """librdkafka's configuration as results show it: secrets redacted, PEM text elided."""
    from producer_core.security import redact
    return {k: "(PEM)" if isinstance(v, str) and "-----BEGIN" in v else v
            for k, v in redact(config).items()}


def create_producer(config: dict[str, Any]) -> Any:
    """confluent-kafka's Producer for `config`; librdkafka's refusal is a ConfigError."""
    from producer_core.security import scrub
    try:
        from confluent_kafka import KafkaException, Producer
    except ImportError as exc:  # pragma: no cover - a dependency of kbatch
        raise UsageError(
            "Mode librdkafka needs the confluent-kafka package: pip install "
            "confluent-kafka==2.16.1."
        ) from exc
    try:
        return Producer({"logger": log, **config})
    except KafkaException as exc:
        raise ConfigError(
            f"librdkafka refused its configuration: {scrub(exc.args[0].str(), config)}. "
            f"(Properties kbatch passed to librdkafka: {', '.join(sorted(config))}.) See "
            "librdkafka's CONFIGURATION.md for the properties it knows."
        ) from None


LIBRDKAFKA = ModeSpec(
    "librdkafka", "the real client (confluent-kafka) on the same workload",
    driver="producer_core.engine.drivers.librdkafka:run_async",
    reads=("linger.ms", "batch.num.messages"), settings=(BATCH_NUM_MESSAGES,),
    request_log=False, passthrough=True, check=check_librdkafka, check_built=check_built,
    transactions=False, versions="a confluent-kafka release on PyPI (run out of process)",
    install="producer_core.engine.drivers.librdkafka_versions:install",
    build="producer_core.engine.drivers.librdkafka_build:register_build")
