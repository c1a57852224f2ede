"""Mode aimd: a broker-level collector whose window each broker's controller adapts
(additive increase while round trips stay healthy, multiplicative decrease on
backpressure; or steered to a p99 target)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from producer_core.engine.modes.collector_settings import COLLECTOR_READS
from producer_core.engine.modes.spec import ModeSpec, setting
from producer_core.errors import ConfigError

if TYPE_CHECKING:
    from producer_core.engine.core.linger.aimd_policy import AimdLinger
    from producer_core.engine.core.linger.base import QueueView, RequestLimits
    from producer_core.settings import ProducerSettings
    from producer_core.workload.workload import TopicSpec

SETTINGS = dict([
    setting("aimd.linger.min.ms", 1, "int", "mode aimd: smallest collection window a "
            "broker's controller may choose", 0, 900_000, modes=("aimd",)),
    setting("aimd.linger.max.ms", 100, "int", "mode aimd: largest collection window a "
            "broker's controller may choose", 0, 900_000, modes=("aimd",)),
    setting("aimd.linger.initial.ms", 5, "int", "mode aimd: the window every broker "
            "starts with (kept within aimd.linger.min.ms..aimd.linger.max.ms)", 0, 900_000,
            modes=("aimd",)),
    setting("aimd.linger.step.ms", 1, "int", "mode aimd: additive increase, ms added to "
            "the window per healthy response (per p99 check with aimd.target.p99.ms)",
            1, 900_000, modes=("aimd",)),
    setting("aimd.decrease.factor", 0.5, "float", "mode aimd: multiplicative decrease, "
            "the window is multiplied by this on backpressure (a retry, throttling, every "
            "request slot busy, or the round trip above aimd.rtt.decrease.ratio)",
            0.01, 0.99, modes=("aimd",)),
    setting("aimd.rtt.increase.ratio", 1.1, "float", "mode aimd: healthy while the round "
            "trip's moving average (weight 1/8) is below this times the smallest round "
            "trip seen; then the window grows by aimd.linger.step.ms", 1.0, 100.0,
            modes=("aimd",)),
    setting("aimd.rtt.decrease.ratio", 1.5, "float", "mode aimd: backpressure once the "
            "round trip's moving average is above this times the smallest seen; then the "
            "window shrinks by aimd.decrease.factor", 1.0, 100.0, modes=("aimd",)),
    setting("aimd.target.p99.ms", -1, "int", "mode aimd: steer each broker's window to "
            "the largest whose recent p99 latency stays under this, instead of the round "
            "trip ratios (-1: off)", -1, 3_600_000, modes=("aimd",)),
    setting("aimd.target.interval.ms", 250, "int", "mode aimd with aimd.target.p99.ms: "
            "how often the recent p99 is checked (each check needs at least 100 "
            "acknowledged messages taken after the last change settled)", 1, 600_000,
            modes=("aimd",)),
])


def check_aimd(explicit: set[str], values: Mapping[str, Any], warnings: list[str]) -> None:
    """The window's bounds and the round-trip ratios must leave room between them."""
    if values["aimd.linger.min.ms"] > values["aimd.linger.max.ms"]:
        raise ConfigError(
            f"aimd.linger.min.ms={values['aimd.linger.min.ms']} is larger than "
            f"aimd.linger.max.ms={values['aimd.linger.max.ms']}: no window fits between them."
        )
    if values["aimd.rtt.increase.ratio"] > values["aimd.rtt.decrease.ratio"]:
        raise ConfigError(
            f"aimd.rtt.increase.ratio={values['aimd.rtt.increase.ratio']} is larger than "
            f"aimd.rtt.decrease.ratio={values['aimd.rtt.decrease.ratio']}: a round trip "
            "would count as healthy and as backpressure at once."
        )


def aimd_policy(accumulator: QueueView, leaders: list[int], limits: RequestLimits,
                settings: ProducerSettings, topics: Sequence[TopicSpec]) -> AimdLinger:
    from producer_core.engine.core.linger.aimd_policy import AimdLinger
    target = settings["aimd.target.p99.ms"]
    return AimdLinger(
        accumulator, leaders, limits,
        min_s=settings["aimd.linger.min.ms"] / 1000.0,
        max_s=settings["aimd.linger.max.ms"] / 1000.0,
        initial_s=settings["aimd.linger.initial.ms"] / 1000.0,
        step_s=settings["aimd.linger.step.ms"] / 1000.0,
        decrease_factor=settings["aimd.decrease.factor"],
        increase_ratio=settings["aimd.rtt.increase.ratio"],
        decrease_ratio=settings["aimd.rtt.decrease.ratio"],
        max_in_flight=settings.max_in_flight,
        target_p99_s=target / 1000.0 if target >= 0 else None,
        target_interval_s=settings["aimd.target.interval.ms"] / 1000.0,
        max_partitions=settings["broker.batch.max.partitions"],
        max_bytes=settings["broker.batch.max.bytes"],
    )


AIMD = ModeSpec(
    "aimd", "broker-level collector whose window adapts per broker (aimd.*)",
    policy=aimd_policy, collector=True, window=None, sweep_window="aimd.linger.max.ms",
    reads=(*SETTINGS, *COLLECTOR_READS), settings=tuple(SETTINGS.values()), check=check_aimd,
    ignores=(("linger.ms", "linger.ms is ignored in mode aimd: its collection window is "
              "aimd.linger.*"),))
