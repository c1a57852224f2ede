"""Bounds on what a user may ask for, so memory and time stay sane and Ctrl-C is honoured.

Every number a person types (command line or workload file) is checked against one of
these before any work starts; past a bound the run would exhaust memory, overflow a
float-to-int conversion, or keep the event loop too busy to notice Ctrl-C. The bounds are
far above anything kbatch can actually do on one machine, so no real run meets them.
One place for every bound: the CLI, the workload file and docs/reference/limits.md quote these.
"""

from __future__ import annotations

import math
import re

MAX_DURATION_S = 7 * 24 * 3600.0
"""A week: longer soak runs are a series of runs."""
MIN_RATE = 0.001
"""Messages per second: one message every 1,000 s at the slowest."""
MAX_RATE = 10_000_000.0
"""Messages per second: ~50x what the engine sends on one core; above it use `max`."""
MAX_KEYS = 1_000_000
"""Distinct keys: the key table is built up front (a million keys take ~2 s and ~150 MB)."""
MAX_MESSAGES = 10**12
MAX_SEED = 2**32 - 1
MAX_PARTITIONS = 100_000
"""Partitions of one topic, and of all a workload's topics together."""
MAX_TOPICS = 10_000
MAX_STEPS = 1_000
"""Steps of a `step` profile (every message looks its segment up)."""
MAX_BURST_CYCLES = 100_000
"""On/off cycles of a `bursts` profile within the run's duration."""
MAX_RTT_MS = 10_000.0
"""The lab's own bound (producer_core.brokers.lab.delay), checked here while parsing."""
MAX_START_LEAD_S = 3_600.0
MAX_CLIENT_ID = 1_000
"""Characters of `client.id` (a request header field; Kafka's limit is 32,767 bytes)."""

MAX_TRANSACTIONAL_ID_BYTES = 32_767
"""UTF-8 bytes of `transactional.id`: a Kafka protocol STRING (int16 length)."""

TOPIC_CHARS = re.compile(r"[A-Za-z0-9._-]+")
MAX_TOPIC_NAME = 249


def topic_name_problem(name: str) -> str | None:
    """Why `name` is not a legal Kafka topic name (Kafka's own rule), or None."""
    if not name:
        return "a topic name cannot be empty"
    if len(name) > MAX_TOPIC_NAME:
        return f"a topic name has at most {MAX_TOPIC_NAME} characters (got {len(name)})"
    if name in (".", ".."):
        return f"{name!r} is not allowed as a topic name"
    if not TOPIC_CHARS.fullmatch(name):
        return (f"{name!r} has characters Kafka does not allow in a topic name: use only "
                "a-z A-Z 0-9 . _ -")
    return None


def number_problem(value: float, name: str, low: float, high: float,
                   low_open: bool = False) -> str | None:
    """Why `value` is outside [low, high] (or (low, high]) or not finite, or None."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(
            value) or value > high or value < low or (low_open and value == low):
        bracket = "(" if low_open else "["
        return f"{name} must be a finite number in {bracket}{low:g}, {high:g}] (got {value!r})"
    return None
