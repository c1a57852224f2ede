"""The mode registry: one entry per mode, and everything that lists modes reads it.

Each mode lives in its own module of this package, which declares its `ModeSpec`: its
settings (with defaults and help), its checks, its help text, and either the factory of
its linger policy (run by kbatch's engine) or the driver of another client. `config`'s
settings table and mode list, `make_policy`, the engine's dispatch, `--mode`'s help,
compare-modes' `--linger-ms` and sweep's `--windows` all derive from `REGISTRY`, so adding
a mode is one new module here plus one line in `REGISTRY` (docs/contributing/producer-core.md).

Drivers are named as "module:function" and imported on first use, so a run of mode
partition never loads the Java or librdkafka driver. Likewise each policy factory imports
its linger module (numpy, the accumulator) when called: reading the registry, as every
`--help` does, stays light (tests/cli/test_startup_imports.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from producer_core.modes.adaptive import ADAPTIVE
from producer_core.modes.aimd import AIMD
from producer_core.modes.broker import BROKER
from producer_core.modes.bruce import BRUCE
from producer_core.modes.franz_go import FRANZ_GO
from producer_core.modes.java import JAVA
from producer_core.modes.kafka_go import KAFKA_GO
from producer_core.modes.kafka_java import KAFKA_JAVA
from producer_core.modes.librdkafka import LIBRDKAFKA
from producer_core.modes.partition import NONE, PARTITION
from producer_core.modes.sarama import SARAMA
from producer_core.modes.spec import ModeSpec, SettingSpec

if TYPE_CHECKING:
    from producer_core.core.linger.base import LingerPolicy, QueueView
    from producer_core.settings import ProducerSettings
    from producer_core.workload.workload import TopicSpec

REGISTRY: tuple[ModeSpec, ...] = (
    PARTITION,
    NONE,
    BROKER,
    JAVA,
    BRUCE,
    LIBRDKAFKA,
    ADAPTIVE,
    AIMD,
    KAFKA_JAVA,
    FRANZ_GO,
    SARAMA,
    KAFKA_GO,
)
"""Every mode, in the order `--mode` lists them (charts colour modes by this order)."""

BY_NAME: dict[str, ModeSpec] = {spec.name: spec for spec in REGISTRY}
MODES: tuple[str, ...] = tuple(spec.name for spec in REGISTRY)
COLLECTOR_MODES: tuple[str, ...] = tuple(spec.name for spec in REGISTRY if spec.collector)
PASSTHROUGH_MODES: tuple[str, ...] = tuple(spec.name for spec in REGISTRY if spec.passthrough)


def mode_settings(registry: Sequence[ModeSpec] = REGISTRY) -> dict[str, SettingSpec]:
    """The settings the modes own, each once, in registry order."""
    owned: dict[str, SettingSpec] = {}
    for spec in registry:
        for setting in spec.settings:
            owned.setdefault(setting.name, setting)
    return owned


def mode(name: str) -> ModeSpec:
    """The registry entry for `name`; ValueError for a name that is not a mode."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown mode {name!r}") from None


def modes_reading(setting: str) -> tuple[str, ...]:
    """The modes that read `setting` (empty: a common setting, read by every mode)."""
    return tuple(spec.name for spec in REGISTRY if setting in spec.reads)


def keeps_request_log(name: str) -> bool:
    """Whether a run of mode `name` logs each Produce request (a results file's mode that
    this version does not know is assumed to, as every engine mode does)."""
    spec = BY_NAME.get(name)
    return spec is None or spec.request_log


def mode_help() -> str:
    """`--mode`'s help text: every mode with its one-line meaning."""
    return "Mode: " + "; ".join(f"'{spec.name}' = {spec.help}" for spec in REGISTRY) + "."


def make_policy(
    name: str, accumulator: QueueView, leaders: list[int], settings: ProducerSettings,
    topics: Sequence[TopicSpec] = (),
) -> LingerPolicy:
    """The policy object for a mode name, configured from the settings.

    `topics` are the workload's topics in slot order (topic i's partitions follow topic
    i-1's in the accumulator), for modes with per-topic options.
    """
    from producer_core.core.linger.base import RequestLimits

    limits = RequestLimits(settings.max_request_size, settings.max_partitions_per_request)
    factory: Any = mode(name).load_policy()
    return factory(accumulator, leaders, limits, settings, topics)
