"""Mode bruce's per-topic settings, `bruce.topic.<name>.<suffix>`: what each one is. The
keys' form (prefix, suffixes, parsing) is `producer_core.topic_setting_keys`, below the
settings record that renames them."""

from __future__ import annotations

from producer_core.engine.modes.spec import SettingSpec, setting
from producer_core.errors import ConfigError
from producer_core.topic_setting_keys import (
    BRUCE_TOPIC_PREFIX,
    bruce_topic_key,
)

__all__ = ["BRUCE_TOPIC_PREFIX", "BRUCE_TOPIC_SETTINGS", "bruce_topic_key", "bruce_topic_spec"]

BRUCE_TOPIC_SETTINGS: dict[str, SettingSpec] = dict(
    [
        setting("max.delay.ms", -1, "int", "the topic's batch completes once its oldest "
                "message is this old (0: at once; -1: off)", -1, 900_000, modes=("bruce",)),
        setting("max.bytes", -1, "int", "the topic's batch completes once it holds this many "
                "record bytes (-1: off)", -1, 1 << 40, modes=("bruce",)),
        setting("max.messages", -1, "int", "the topic's batch completes once it holds this "
                "many messages (-1: off)", -1, 1 << 40, modes=("bruce",)),
        setting("rate.limit.interval.ms", 1000, "int", "rate limit window of the topic",
                1, 86_400_000, modes=("bruce",)),
        setting("rate.limit.max.messages", 0, "int", "messages of the topic admitted per "
                "rate limit window; the excess is discarded", 0, 1 << 40, modes=("bruce",)),
    ]
)
"""Mode bruce's per-topic settings: `-X bruce.topic.<name>.<suffix>=N`. They override the
workload file's `batching` and `rate_limit`; a topic with all thresholds off (-1) joins the
combined batch. Topic names are checked against the workload when the run starts."""


def bruce_topic_spec(key: str) -> SettingSpec:
    """The spec of one `bruce.topic.<name>.<suffix>` key; ConfigError if malformed."""
    parsed = bruce_topic_key(key)
    if parsed is None:
        raise ConfigError(
            f"Malformed setting {key!r}: per-topic settings of mode bruce look like "
            f"{BRUCE_TOPIC_PREFIX}<topic>.<setting>, with <setting> one of "
            f"{', '.join(BRUCE_TOPIC_SETTINGS)}."
        )
    spec = BRUCE_TOPIC_SETTINGS[parsed[1]]
    return SettingSpec(key, spec.default, spec.kind, spec.help, spec.minimum, spec.maximum,
                       modes=spec.modes)
