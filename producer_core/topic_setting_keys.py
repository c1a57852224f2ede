"""The form of per-topic setting keys, `bruce.topic.<name>.<suffix>`: a leaf, so the settings
record can rename them with their topic (compare-modes, sweep) without importing the mode
layer above it. The suffixes' specs (default, range, help) live with mode bruce."""

from __future__ import annotations

BRUCE_TOPIC_PREFIX = "bruce.topic."
BRUCE_TOPIC_SUFFIXES = ("max.delay.ms", "max.bytes", "max.messages", "rate.limit.interval.ms",
                        "rate.limit.max.messages")
"""The settings one topic can have; `producer_core.engine.modes.bruce_topics` specifies each."""


def bruce_topic_key(key: str) -> tuple[str, str] | None:
    """`bruce.topic.<name>.<suffix>` -> (name, suffix); None if `key` is not of that form
    (names may contain dots, so the suffix is matched at the end, longest first)."""
    if not key.startswith(BRUCE_TOPIC_PREFIX):
        return None
    rest = key[len(BRUCE_TOPIC_PREFIX):]
    for suffix in sorted(BRUCE_TOPIC_SUFFIXES, key=len, reverse=True):
        if rest.endswith("." + suffix) and len(rest) > len(suffix) + 1:
            return rest[: -len(suffix) - 1], suffix
    return None
