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

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from producer_core.engine.modes.adaptive import ADAPTIVE
from producer_core.engine.modes.aimd import AIMD
from producer_core.engine.modes.broker import BROKER
from producer_core.engine.modes.bruce import BRUCE
from producer_core.engine.modes.franz_go import FRANZ_GO
from producer_core.engine.modes.java import JAVA
from producer_core.engine.modes.kafka_go import KAFKA_GO
from producer_core.engine.modes.kafka_java import KAFKA_JAVA
from producer_core.engine.modes.librdkafka import LIBRDKAFKA
from producer_core.engine.modes.librdkafka_broker import LIBRDKAFKA_BROKER
from producer_core.engine.modes.partition import NONE, PARTITION
from producer_core.engine.modes.sarama import SARAMA
from producer_core.engine.modes.spec import ModeSpec, SettingSpec
from producer_core.engine.modes.versions import base_mode, parse_label, topic_part

if TYPE_CHECKING:
    from producer_core.engine.core.linger.base import LingerPolicy, QueueView
    from producer_core.settings import ProducerSettings
    from producer_core.workload.workload import TopicSpec

__all__ = [
    "BY_NAME", "COLLECTOR_MODES", "MODES", "PASSTHROUGH_MODES", "REGISTRY", "ModeSpec",
    "SettingSpec", "base_mode", "install_clients", "keeps_request_log", "make_policy", "mode",
    "mode_help", "mode_problem", "mode_settings", "modes_reading", "parse_label",
    "register_build", "topic_part", "versioned_modes",
]

REGISTRY: tuple[ModeSpec, ...] = (
    PARTITION,
    NONE,
    BROKER,
    JAVA,
    BRUCE,
    LIBRDKAFKA,
    LIBRDKAFKA_BROKER,
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
    """The registry entry for `name`; ValueError for a name that is not a mode.

    A versioned label (``kafka-java@3.9.1``, `versions`) gets its mode's entry under the
    label's name, so whatever names the run (results, tables) keeps the version."""
    spec = BY_NAME.get(name)
    if spec is not None:
        return spec
    if "@" not in name:
        raise ValueError(f"unknown mode {name!r}")
    problem = mode_problem(name)
    if problem is not None:
        raise ValueError(problem)
    return replace(BY_NAME[base_mode(name)], name=parse_label(name).label)


def mode_problem(name: str) -> str | None:
    """Why `name` is not a mode label (one sentence for the user), or None."""
    if name in BY_NAME:
        return None
    try:
        parsed = parse_label(name)
    except ValueError as exc:
        return f"Mode {exc}."
    spec = BY_NAME.get(parsed.base)
    if spec is None:
        return f"Unknown mode {name!r}. Allowed modes: {', '.join(MODES)}."
    if parsed.version is None:
        return f"Mode {name!r} has an empty name."
    if spec.versions is None:
        versioned = ", ".join(s.name for s in REGISTRY if s.versions) or "none"
        return (f"Mode {parsed.base} takes no @VERSION ({name!r}): it is kbatch's own "
                f"engine or a pinned client. Modes that take one: {versioned}.")
    return None


def versioned_modes() -> tuple[str, ...]:
    """The modes that take ``@VERSION``."""
    return tuple(spec.name for spec in REGISTRY if spec.versions)


def install_clients(names: Sequence[str], progress: Callable[[str], None]) -> None:
    """Fetch and build every client the labels name (each version once, cached per user),
    before any broker starts: a version its registry lacks fails here, not mid-run."""
    for name in dict.fromkeys(names):
        installer = mode(name).load_install()
        if installer is not None:
            installer(parse_label(name).version, progress)


def modes_reading(setting: str) -> tuple[str, ...]:
    """The modes that read `setting` (empty: a common setting, read by every mode)."""
    return tuple(spec.name for spec in REGISTRY if setting in spec.reads)


def keeps_request_log(name: str) -> bool:
    """Whether a run of mode `name` logs each Produce request (a results file's mode that
    this version does not know is assumed to, as every engine mode does)."""
    spec = BY_NAME.get(base_mode(name))
    return spec is None or spec.request_log


def mode_help() -> str:
    """`--mode`'s help text: every mode with its one-line meaning."""
    versioned = " or ".join(f"{name}@VERSION" for name in versioned_modes())
    return ("Mode: " + "; ".join(f"'{spec.name}' = {spec.help}" for spec in REGISTRY) + "."
            + (f" {versioned} runs that release of the client (fetched once)."
               if versioned else ""))


def make_policy(
    name: str, accumulator: QueueView, leaders: list[int], settings: ProducerSettings,
    topics: Sequence[TopicSpec] = (),
) -> LingerPolicy:
    """The policy object for a mode name, configured from the settings.

    `topics` are the workload's topics in slot order (topic i's partitions follow topic
    i-1's in the accumulator), for modes with per-topic options.
    """
    from producer_core.engine.core.linger.base import RequestLimits

    limits = RequestLimits(settings.max_request_size, settings.max_partitions_per_request)
    factory: Any = mode(name).load_policy()
    return factory(accumulator, leaders, limits, settings, topics)


def register_build(name: str, path: str, progress: Callable[[str], None]) -> str:
    """``--client-build MODE=PATH``: register your own build of mode `name`'s client and
    return the label that runs it (``kafka-java@build-<hash>``); ValueError where the mode
    takes no build."""
    spec = BY_NAME.get(name)
    builders = ", ".join(s.name for s in REGISTRY if s.build) or "none"
    if spec is None or spec.build is None:
        raise ValueError(f"--client-build {name}={path}: mode {name!r} takes no build of "
                         f"its own. Modes that do: {builders}.")
    module, _, function = spec.build.partition(":")
    import importlib

    version = getattr(importlib.import_module(module), function)(path, progress)
    return f"{name}@{version}"
