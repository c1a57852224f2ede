"""Mode bruce's per-topic settings, `bruce.topic.<name>.<suffix>`: their names and how a
key is read. A leaf module, so the settings record (`producer_core.settings`) can rename
per-topic keys without importing the mode."""

from __future__ import annotations

from producer_core.errors import ConfigError
from producer_core.modes.spec import SettingSpec, setting

BRUCE_TOPIC_PREFIX = "bruce.topic."
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


def bruce_topic_key(key: str) -> tuple[str, str] | None:
    """`bruce.topic.<name>.<suffix>` -> (name, suffix); None if `key` is not of that form
    (names may contain dots, so the suffix is matched at the end, longest first)."""
    if not key.startswith(BRUCE_TOPIC_PREFIX):
        return None
    rest = key[len(BRUCE_TOPIC_PREFIX):]
    for suffix in sorted(BRUCE_TOPIC_SETTINGS, key=len, reverse=True):
        if rest.endswith("." + suffix) and len(rest) > len(suffix) + 1:
            return rest[: -len(suffix) - 1], suffix
    return None


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
