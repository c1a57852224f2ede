"""What a mode and a setting are: the two records every mode module fills in.

Hooks take the built settings (`producer_core.settings.ProducerSettings`), typed `Any`
here so that this leaf imports nothing of the project.

Kept apart from the registry (`producer_core.engine.modes`) so that a mode module can declare
itself without importing the registry that lists it, and `config` can read settings'
types without importing any mode.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

Check = Callable[[set[str], Mapping[str, Any], list[str]], None]
"""A mode's check of its settings before they are built: `(explicit, values, warnings)`;
raises ConfigError, may add warnings."""


@dataclass(frozen=True)
class SettingSpec:
    """How one setting is typed, bounded and explained."""

    name: str
    default: Any
    kind: str  # "int" | "float" | "acks" | "choice" | "str"
    help: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    modes: tuple[str, ...] = ()  # modes it applies to; empty means all


def setting(*args: Any, **kwargs: Any) -> tuple[str, SettingSpec]:
    """A (name, spec) pair, so a table of settings reads as `dict([setting(...), ...])`."""
    spec = SettingSpec(*args, **kwargs)
    return spec.name, spec


@dataclass(frozen=True)
class ModeSpec:
    """One mode. `policy`: the factory of its linger policy when kbatch's engine runs it,
    `(accumulator, leaders, limits, settings, topics) -> LingerPolicy`; `driver`:
    "module:function" of another client's `run_async` (a `run_types.RunDriver`), imported
    on first use so a run of an engine mode never loads it. `settings`: the settings this
    mode owns (declared in its module, listed in `config.SETTINGS`). `window`: the setting
    compare-modes' `--linger-ms` sets (None: the mode chooses its window itself);
    `sweep_window`: the setting sweep's `--windows` sets (for self-windowed modes the
    window's upper bound; None: the mode has no window). `reads`: the settings that apply
    to this mode only or to a few modes (not the common ones). `request_log`: the run logs
    each Produce request (librdkafka reports totals only). `passthrough`: a property kbatch
    does not know goes to the client as given. `ignores`: (setting, why) for settings that
    exist but this mode does not apply; given explicitly, each gets its warning. `check`:
    the mode's own check of its settings (`Check`); `check_built`: a check of the built
    settings (e.g. handing them to the real client). `transactions`: the mode can run with
    ``transactional.id``. `buffer_pool`: the engine accounts ``buffer.memory`` as Java's
    BufferPool does (batch.size per batch from its creation until its outcome) instead of
    by queued bytes. `batch_size`: the accumulator's record batch limit for these settings
    (None: ``batch.size``). `versions`: where ``MODE@VERSION`` takes its client from (a
    phrase for messages, e.g. "a kafka-clients release on Maven Central"; None: the mode
    takes no version, see `producer_core.engine.modes.versions`). `install`: "module:function"
    ``(version, progress) -> None`` that fetches and builds that client once into the
    per-user cache, called before any broker starts so a missing version fails first.
    `build`: "module:function" ``(path, progress) -> version`` that registers your own
    build of the client (``--client-build MODE=PATH``) as one more version, named by its
    content hash."""

    name: str
    help: str
    policy: Callable[..., Any] | None = None
    driver: str | None = None
    collector: bool = False
    window: str | None = "linger.ms"
    sweep_window: str | None = "linger.ms"
    reads: tuple[str, ...] = ()
    settings: tuple[SettingSpec, ...] = ()
    request_log: bool = True
    passthrough: bool = False
    ignores: tuple[tuple[str, str], ...] = ()
    check: Check | None = None
    check_built: Callable[[Any], None] | None = None
    transactions: bool = True
    buffer_pool: bool = False
    batch_size: Callable[[Any], int] | None = None
    versions: str | None = None
    install: str | None = None
    build: str | None = None

    def __post_init__(self) -> None:
        if (self.policy is None) == (self.driver is None):
            raise ValueError(f"mode {self.name!r}: give exactly one of policy or driver")

    def load_policy(self) -> Callable[..., Any]:
        """The policy factory: `(accumulator, leaders, limits, settings, topics) -> policy`."""
        if self.policy is None:
            raise ValueError(f"mode {self.name!r} is not run by kbatch's engine")
        return self.policy

    def load_driver(self) -> Any:
        """The driver's `run_async` (a `run_types.RunDriver`), or None for the engine."""
        if self.driver is None:
            return None
        module, _, name = self.driver.partition(":")
        return getattr(importlib.import_module(module), name)

    def load_install(self) -> Callable[[str | None, Callable[[str], None]], None] | None:
        """The client's installer (see `install`), imported on first use, or None."""
        if self.install is None:
            return None
        module, _, name = self.install.partition(":")
        installer: Callable[[str | None, Callable[[str], None]], None] = getattr(
            importlib.import_module(module), name)
        return installer

    def load_check(self) -> Check | None:
        """The mode's settings check (see `check`), or None."""
        return self.check

    def accumulator_batch_size(self, settings: Any) -> int:
        """The record batch limit the accumulator gets in this mode."""
        return settings.batch_size if self.batch_size is None else self.batch_size(settings)

