"""Mode librdkafka-broker: the real librdkafka with the project's patches (issue 45):
multi-partition ProduceRequests and the seed's broker-level collector, beside mode
librdkafka (stock) and mode broker (kbatch's emulation of the same design).

It takes mode broker's settings under the same names, which are also the patched
library's: `broker.linger.ms`, `broker.batch.max.partitions`, `broker.batch.max.bytes`,
always passed (kbatch's defaults are the seed's, so a run says exactly what it asked the
library for), and `produce.request.max.partitions` when given. As in mode broker,
`linger.ms` is not used: the collector's window replaces it (the seed deprecates it).
Everything else is mode librdkafka's mapping and passthrough. The library is built on
first use (`drivers.librdkafka_patched`) and run out of process like any other build of
librdkafka (`drivers.librdkafka_broker`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from producer_core.engine.modes.collector_settings import COLLECTOR_READS
from producer_core.engine.modes.librdkafka import (
    ALWAYS_PASSED,
    CLIENT_NAMES,
    LIBRDKAFKA_NAMES,
    LIBRDKAFKA_OWN,
    create_producer,
    librdkafka_config,
)
from producer_core.engine.modes.spec import ModeSpec
from producer_core.errors import ConfigError

if TYPE_CHECKING:
    from producer_core.settings import ProducerSettings

NAME = "librdkafka-broker"

COLLECTOR_NAMES = {
    "broker.linger.ms": "broker.linger.ms",
    "broker.batch.max.partitions": "broker.batch.max.partitions",
    "broker.batch.max.bytes": "broker.batch.max.bytes",
    "produce.request.max.partitions": "produce.request.max.partitions",
}
"""kbatch setting -> the patched library's property (clients/librdkafka/README.md)."""

BROKER_NAMES = {**{k: v for k, v in LIBRDKAFKA_NAMES.items() if k != "linger.ms"},
                **COLLECTOR_NAMES}
ALWAYS = (*ALWAYS_PASSED, "broker.linger.ms", "broker.batch.max.partitions",
          "broker.batch.max.bytes")
CLIENT_NAMES[NAME] = (BROKER_NAMES, ALWAYS)

PATCH_PROPERTIES = frozenset(COLLECTOR_NAMES.values())
"""Properties only the patched library knows (the stock one refuses them)."""


def check_settings(explicit: set[str], values: Mapping[str, Any], warnings: list[str]) -> None:
    """Refuse settings the patched librdkafka has no equivalent of."""
    own = {*BROKER_NAMES, *LIBRDKAFKA_OWN, "linger.ms"}
    refused = sorted(k for k in explicit if k not in own)
    if refused:
        raise ConfigError(
            f"Mode {NAME} has no equivalent of {', '.join(refused)}: it runs librdkafka with "
            "the project's patches, which add only the broker-level collector's settings. "
            f"Settings mode {NAME} accepts: {', '.join(sorted(own))}.")
    if "max.request.size" in explicit and values["max.request.size"] > 1_000_000_000:
        raise ConfigError(
            f"max.request.size={values['max.request.size']} is above librdkafka's "
            "message.max.bytes limit of 1000000000.")


def check_built(settings: ProducerSettings) -> None:
    """As mode librdkafka's check: passed-on properties are judged by librdkafka now, by
    the stock library kbatch runs in process, without the properties only the patched
    one has (the patched one is judged when its run starts)."""
    passthrough = dict(settings.librdkafka_properties)
    clashes = sorted(f"{key} (set through {kbatch})" for kbatch, key in BROKER_NAMES.items()
                     if key in passthrough and kbatch in settings.explicit and kbatch != key)
    if clashes:
        raise ConfigError(f"Mode {NAME}: {', '.join(clashes)} given twice; set it once.")
    if settings.librdkafka_properties or settings.client_properties:
        config = librdkafka_config(settings, NAME)[0]
        create_producer({k: v for k, v in config.items() if k not in PATCH_PROPERTIES})


LIBRDKAFKA_BROKER = ModeSpec(
    NAME, "librdkafka with the project's patches: multi-partition requests and the "
          "broker-level collector (broker.linger.ms), built on first use",
    driver="producer_core.engine.drivers.librdkafka_broker:run_async", collector=True,
    window="broker.linger.ms", sweep_window="broker.linger.ms",
    reads=("broker.linger.ms", *COLLECTOR_READS, "batch.num.messages"),
    request_log=False, passthrough=True, check=check_settings, check_built=check_built,
    transactions=False,
    ignores=(("linger.ms", f"linger.ms is ignored in mode {NAME}; use broker.linger.ms "
              "(deprecated per the broker-level linger design)"),),
    install="producer_core.engine.drivers.librdkafka_patched:install")
