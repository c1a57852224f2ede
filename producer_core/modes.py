"""The mode registry: one entry per mode, and everything that lists modes reads it.

A mode is either a linger policy run by kbatch's own engine (`policy` names its factory)
or another client driven by the same generator (`driver` names its `run_async`). The
config's mode list, `make_policy`, the engine's dispatch, `--mode`'s help, compare-modes'
`--linger-ms` and sweep's `--windows` are all derived from `REGISTRY`, so adding a mode
is one new module (its policy or driver) and one line here.

Factories and drivers are named as "module:function" and imported on first use: this
module imports nothing from the project, so `config` can derive `MODES` from it without
an import cycle, and a run of mode partition never loads the Java or librdkafka driver.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ModeSpec:
    """One mode. `window`: the setting compare-modes' `--linger-ms` sets (None: the mode
    chooses its window itself); `sweep_window`: the setting sweep's `--windows` sets (for
    self-windowed modes the window's upper bound; None: the mode has no window). `reads`:
    the settings that apply to this mode only or to a few modes (not the common ones).
    `request_log`: the run logs each Produce request (librdkafka reports totals only).
    `passthrough`: a property kbatch does not know goes to the client as given.
    `ignores`: (setting, why) for settings that exist but this mode does not apply; given
    explicitly, each gets its warning. `check`: the mode's own check of its settings,
    "module:function" taking `(explicit, values, warnings)` and raising ConfigError.
    `transactions`: the mode can run with ``transactional.id``. `buffer_pool`: the engine
    accounts ``buffer.memory`` as Java's BufferPool does (batch.size per batch from its
    creation until its outcome) instead of by queued bytes."""

    name: str
    help: str
    policy: str | None = None
    driver: str | None = None
    collector: bool = False
    window: str | None = "linger.ms"
    sweep_window: str | None = "linger.ms"
    reads: tuple[str, ...] = ()
    request_log: bool = True
    passthrough: bool = False
    ignores: tuple[tuple[str, str], ...] = ()
    check: str | None = None
    transactions: bool = True
    buffer_pool: bool = False

    def __post_init__(self) -> None:
        if (self.policy is None) == (self.driver is None):
            raise ValueError(f"mode {self.name!r}: give exactly one of policy or driver")

    def load_policy(self) -> Any:
        """The policy factory: `(accumulator, leaders, limits, settings, topics) -> policy`."""
        if self.policy is None:
            raise ValueError(f"mode {self.name!r} is not run by kbatch's engine")
        return _load(self.policy)

    def load_driver(self) -> Any:
        """The driver's `run_async` (a `run_types.RunDriver`), or None for the engine."""
        return None if self.driver is None else _load(self.driver)

    def load_check(self) -> Any:
        """The mode's settings check (see `check`), or None."""
        return None if self.check is None else _load(self.check)


def _load(reference: str) -> Any:
    module, _, name = reference.partition(":")
    return getattr(importlib.import_module(module), name)


_COLLECTOR = ("broker.batch.max.partitions", "broker.batch.max.bytes")
_AIMD = ("aimd.linger.min.ms", "aimd.linger.max.ms", "aimd.linger.initial.ms",
         "aimd.linger.step.ms", "aimd.decrease.factor", "aimd.rtt.increase.ratio",
         "aimd.rtt.decrease.ratio", "aimd.target.p99.ms", "aimd.target.interval.ms")
_BRUCE = ("bruce.combined.max.delay.ms", "bruce.combined.max.bytes",
          "bruce.combined.max.messages")  # and per topic: bruce.topic.<name>.*

REGISTRY: tuple[ModeSpec, ...] = (
    ModeSpec("partition", "per-partition linger.ms, a request carries the partitions ready "
             "at that moment", policy="producer_core.linger.partition:partition_policy",
             reads=("linger.ms",)),
    ModeSpec("none", "linger 0", policy="producer_core.linger.partition:no_linger_policy",
             sweep_window=None),
    ModeSpec("broker", "broker-level collector (broker.linger.ms)",
             policy="producer_core.linger.broker:broker_policy", collector=True,
             window="broker.linger.ms", sweep_window="broker.linger.ms",
             reads=("broker.linger.ms", *_COLLECTOR),
             ignores=(("linger.ms", "linger.ms is ignored in mode broker; use broker.linger.ms "
                       "(deprecated per the broker-level linger design)"),)),
    ModeSpec("java", "the Java producer, a broker is ready when any of its partitions is "
             "and then sends all of them", policy="producer_core.linger.java:java_policy",
             reads=("linger.ms",), check="producer_core.config:check_java",
             buffer_pool=True),
    ModeSpec("bruce", "Bruce's per-topic and combined batches, late partition choice and "
             "rate limits (bruce.*)", policy="producer_core.linger.bruce:bruce_policy",
             window="bruce.combined.max.delay.ms",
             sweep_window="bruce.combined.max.delay.ms", reads=_BRUCE,
             check="producer_core.config:check_bruce"),
    ModeSpec("librdkafka", "the real client (confluent-kafka) on the same workload",
             driver="producer_core.librdkafka_engine:run_async",
             reads=("linger.ms", "batch.num.messages"), request_log=False, passthrough=True,
             check="producer_core.config:check_librdkafka", transactions=False),
    ModeSpec("adaptive", "KIP-1224's adaptive append linger (the group coordinator's) applied "
             "to a producer, a broker's collection is flushed behind the work pending in the "
             "engine",
             policy="producer_core.linger.adaptive:adaptive_policy", collector=True,
             window=None, sweep_window="adaptive.linger.max.ms",
             reads=("adaptive.linger.max.ms", *_COLLECTOR),
             ignores=(("linger.ms", "linger.ms is ignored in mode adaptive: its collection "
                       "window adapts to the load"),)),
    ModeSpec("aimd", "broker-level collector whose window adapts per broker (aimd.*)",
             policy="producer_core.linger.aimd:aimd_policy", collector=True,
             window=None, sweep_window="aimd.linger.max.ms", reads=(*_AIMD, *_COLLECTOR),
             ignores=(("linger.ms", "linger.ms is ignored in mode aimd: its collection "
                       "window is aimd.linger.*"),)),
    ModeSpec("kafka-java", "Apache Kafka's Java producer (kafka-clients, needs a JDK) on "
             "the same workload", driver="producer_core.kafka_java.run:run_async",
             reads=("linger.ms",), check="producer_core.kafka_java.settings:check_mode"),
)
"""Every mode, in the order `--mode` lists them (charts colour modes by this order)."""

BY_NAME: dict[str, ModeSpec] = {spec.name: spec for spec in REGISTRY}
MODES: tuple[str, ...] = tuple(spec.name for spec in REGISTRY)
COLLECTOR_MODES: tuple[str, ...] = tuple(spec.name for spec in REGISTRY if spec.collector)
PASSTHROUGH_MODES: tuple[str, ...] = tuple(spec.name for spec in REGISTRY if spec.passthrough)

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
