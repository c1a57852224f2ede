"""Mode bruce: Bruce's per-topic and combined batches, late partition choice for keyless
messages and per-topic rate limits (bruce-design.md).

Its settings: the combined batch's thresholds (`bruce.combined.*`) and, per topic,
`bruce.topic.<name>.<suffix>` (which override a workload file's `batching` and
`rate_limit`). Bruce has no batch.size: a partition's record batch grows up to the
request limit, which the mode declares as its accumulator's batch size.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from producer_core.engine.modes.bruce_topics import BRUCE_TOPIC_PREFIX, bruce_topic_key
from producer_core.engine.modes.spec import ModeSpec, setting
from producer_core.errors import ConfigError

if TYPE_CHECKING:
    from producer_core.engine.core.linger.base import QueueView, RequestLimits
    from producer_core.engine.core.linger.bruce_policy import (
        BruceConfig,
        BrucePolicy,
        RateLimit,
        Thresholds,
    )
    from producer_core.settings import ProducerSettings
    from producer_core.workload.workload import TopicSpec

SETTINGS = dict([
    setting("bruce.combined.max.delay.ms", 10, "int", "mode bruce: a combined (mixed-topic) "
            "batch completes once its oldest message is this old (-1: off)", -1, 900_000,
            modes=("bruce",)),
    setting("bruce.combined.max.bytes", 262144, "int", "mode bruce: a combined batch "
            "completes once it holds this many record bytes (-1: off)", -1, 1 << 40,
            modes=("bruce",)),
    setting("bruce.combined.max.messages", -1, "int", "mode bruce: a combined batch "
            "completes once it holds this many messages (-1: off)", -1, 1 << 40,
            modes=("bruce",)),
])

BRUCE_IGNORED = (
    "{key} is ignored in mode bruce: batches complete on Bruce's per-topic or combined "
    "thresholds (bruce.combined.*, bruce.topic.<name>.*), and a partition's record batch "
    "grows up to max.request.size"
)


def check_bruce(explicit: set[str], values: Mapping[str, Any], warnings: list[str]) -> None:
    """Mode bruce: the combined batch needs a threshold; linger.ms and batch.size do not
    apply."""
    combined = [f"bruce.combined.{k}" for k in ("max.delay.ms", "max.bytes", "max.messages")]
    if all(values[k] < 0 for k in combined):
        raise ConfigError(
            f"Mode bruce needs at least one threshold for the combined batch: "
            f"{', '.join(combined)} are all off (-1), so its messages would never be sent."
        )
    for key in ("linger.ms", "batch.size"):
        if key in explicit:
            warnings.append(BRUCE_IGNORED.format(key=key))


def bruce_config(settings: ProducerSettings, topics: Sequence[TopicSpec]) -> BruceConfig:
    """Resolve mode bruce's options from the settings and the workload's topics.

    Per-topic settings (`bruce.topic.<name>.*`) override the file's `batching` and
    `rate_limit`; a name that is not a topic of the workload is refused (ConfigError).
    """
    from producer_core.engine.core.linger.bruce_policy import (
        FILE_KEYS,
        BruceConfig,
        RateLimit,
        thresholds,
    )
    names = [topic.name for topic in topics]
    overrides: dict[str, dict[str, int]] = {}
    for key, value in settings.values.items():
        parsed = bruce_topic_key(key)
        if parsed is None:
            continue
        name, suffix = parsed
        if name not in names:
            shown = ", ".join(names[:20]) + (f", ... ({len(names)} topics)"
                                             if len(names) > 20 else "")
            raise ConfigError(
                f"Setting {key} names topic {name!r}, which is not a topic of this workload "
                f"(topics: {shown}). Per-topic settings look like "
                f"{BRUCE_TOPIC_PREFIX}<topic>.max.delay.ms=20."
            )
        overrides.setdefault(name, {})[suffix] = value
    combined = thresholds({k: settings[f"bruce.combined.{k}"]
                           for k in ("max.delay.ms", "max.bytes", "max.messages")})
    own: list[Thresholds | None] = []
    limits: list[RateLimit | None] = []
    for topic in topics:
        given = overrides.get(topic.name, {})
        values = {FILE_KEYS[k]: v for k, v in topic.batching}
        values.update({k: v for k, v in given.items() if k in FILE_KEYS.values()})
        topic_thresholds = thresholds(values)
        own.append(None if topic_thresholds.empty else topic_thresholds)
        interval, most = topic.rate_limit if topic.rate_limit is not None else (None, None)
        interval = given.get("rate.limit.interval.ms", interval)
        most = given.get("rate.limit.max.messages", most)
        if (interval is None) != (most is None):
            missing = "rate.limit.max.messages" if most is None else "rate.limit.interval.ms"
            raise ConfigError(
                f"Topic {topic.name!r} has half a rate limit: also give "
                f"-X {BRUCE_TOPIC_PREFIX}{topic.name}.{missing}=N (or rate_limit with "
                "interval_ms and max_messages in the workload file)."
            )
        limits.append(None if interval is None or most is None
                      else RateLimit(interval / 1000.0, int(most)))
    return BruceConfig(combined, tuple(own), tuple(limits))


def bruce_policy(accumulator: QueueView, leaders: list[int], limits: RequestLimits,
                 settings: ProducerSettings, topics: Sequence[TopicSpec]) -> BrucePolicy:
    from producer_core.engine.core.linger.bruce_policy import BrucePolicy
    keyless = [topic.keys.kind == "none" for topic in topics]
    return BrucePolicy(accumulator, leaders, limits, bruce_config(settings, topics), keyless)


def bruce_batch_size(settings: ProducerSettings) -> int:
    """A partition's record batch grows up to the request limit (Bruce has no batch.size)."""
    from producer_core.engine.core.linger.bruce_policy import largest_record_batch
    return largest_record_batch(settings.batch_size, settings.max_request_size)


BRUCE = ModeSpec(
    "bruce", "Bruce's per-topic and combined batches, late partition choice and rate limits "
    "(bruce.*)", policy=bruce_policy, window="bruce.combined.max.delay.ms",
    sweep_window="bruce.combined.max.delay.ms", reads=tuple(SETTINGS),
    settings=tuple(SETTINGS.values()), check=check_bruce, batch_size=bruce_batch_size)
