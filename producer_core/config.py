"""Producer settings under Kafka's own names, parsed from `-X key=value` and validated.

One table (`SETTINGS`) describes every setting: its type, default, allowed range and a
one-line meaning. Parsing, validation, `--help` text and the results JSON all read it, so
a setting is declared once: the shared ones here, each mode's own in its module
(`producer_core.engine.modes`), which also holds the mode's checks.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from producer_core.client_properties import (
    closest_name,
    is_foreign,
    java_producer_passthrough,
    librdkafka_producer_property,
    not_used_warning,
    unknown_property_message,
)

# declared in the mode registry; MODES and COLLECTOR_MODES importable here
from producer_core.engine.modes import (
    COLLECTOR_MODES,  # noqa: F401 - re-exported
    MODES,  # noqa: F401 - re-exported
    PASSTHROUGH_MODES,
    mode_problem,
    mode_settings,
)
from producer_core.engine.modes import mode as mode_spec
from producer_core.engine.modes.bruce_topics import (  # mode bruce's per-topic settings
    BRUCE_TOPIC_PREFIX,
    BRUCE_TOPIC_SETTINGS,
    bruce_topic_spec,
)
from producer_core.engine.modes.librdkafka import LIBRDKAFKA_RESERVED
from producer_core.engine.modes.spec import SettingSpec, setting
from producer_core.engine.modes.versions import base_mode
from producer_core.errors import ConfigError
from producer_core.security import SECURITY_KEYS, build_security
from producer_core.settings import ACKS_VALUES, ProducerSettings  # noqa: F401 - re-exported
from producer_core.workload.partitioners import PARTITIONERS

MAX_RETRIES = 2147483647
IDEMPOTENT_MAX_IN_FLIGHT = 5
"""Brokers keep the last 5 batches per producer and partition for de-duplication."""


SETTINGS: dict[str, SettingSpec] = dict(
    [
        setting("linger.ms", 5, "int", "per-partition linger: how long a partition's oldest "
                "message may wait for company before its batch is ready", 0, 900_000,
                modes=("partition", "java", "librdkafka")),
        setting("batch.size", 16384, "int", "bytes per partition batch; a full batch is "
                "ready at once", 64, 64 * 1024 * 1024),
        setting("acks", "all", "acks", "0 (no response), 1 (leader) or all (every in-sync "
                "replica; the default, as Java >= 3.0 and librdkafka)", choices=("0", "1", "all")),
        setting("enable.idempotence", "true", "choice", "idempotent producer (as Java >= 3.0): "
                "a producer id and per-partition sequence numbers, so retries are written once "
                "and in order; needs acks=all and max.in.flight.requests.per.connection <= 5. "
                "Left unset, a conflicting acks or max.in.flight turns it off with a warning",
                choices=("true", "false")),
        setting("transactional.id", "", "str", "transactional producer (implies idempotence): "
                "FindCoordinator, InitProducerId with this id, AddPartitionsToTxn before a "
                "partition's first batch of a transaction, EndTxn every "
                "transaction.duration.ms (empty: not transactional)"),
        setting("transaction.duration.ms", 3000, "int", "with transactional.id: each "
                "transaction is committed this long after it began (kafka-producer-perf-test's "
                "--transaction-duration-ms)", 1, 900_000),
        setting("transaction.abort.every", 0, "int", "with transactional.id: abort every K-th "
                "transaction instead of committing it (0: never), for --verify with "
                "read_committed", 0, 1_000_000_000),
        setting("transaction.timeout.ms", 60000, "int", "with transactional.id: the "
                "coordinator aborts a transaction open longer than this", 1, 900_000),
        setting("max.in.flight.requests.per.connection", 5, "int",
                "ProduceRequests awaiting a response per broker connection", 1, 1000),
        setting("request.timeout.ms", 30000, "int", "how long a ProduceRequest may wait for its "
                "response; then its connection is closed and its messages are retried (or "
                "their outcome is unknown)", 1, 3_600_000),
        setting("delivery.timeout.ms", 120000, "int", "upper bound from append to outcome, "
                "queued, in flight and retrying included; past it a message fails (or, if it "
                "may have been written, its outcome is unknown)", 1, 86_400_000),
        setting("retries", MAX_RETRIES, "int", "times a batch is re-sent after a retriable "
                "error (default: unbounded but for delivery.timeout.ms, as Java)",
                0, MAX_RETRIES),
        setting("retry.backoff.ms", 100, "int", "pause before a batch is re-sent", 0, 60_000),
        setting("max.request.size", 1048576, "int", "largest ProduceRequest in bytes; bounds "
                "how many partition batches one request may carry", 1024, 1024 * 1024 * 1024),
        setting("produce.request.max.partitions", -1, "int", "partitions per ProduceRequest "
                "at most (-1: unlimited; 1 reproduces stock librdkafka)", -1, 1_000_000),
        setting("buffer.memory", 33554432, "int", "bytes of records the producer may hold "
                "unsent (mode java: batch.size per batch until its response, as Java's "
                "BufferPool); when full the generator waits up to max.block.ms", 1024, 1 << 40),
        setting("max.block.ms", 60000, "int", "how long the generator waits for buffer.memory "
                "per message; then the message fails with reason max.block.ms", 0, 86_400_000),
        setting("compression.type", "none", "choice", "record batch compression",
                choices=("none", "gzip", "snappy", "lz4", "zstd")),
        setting("client.id", "kbatch", "str", "client id sent in every request header"),
        setting("partitioner", "round_robin", "choice", "how messages get partitions: "
                "round_robin (keyless one at a time), sticky (KIP-480), uniform_sticky "
                "(KIP-794), or a librdkafka name; keys keep murmur2 unless a librdkafka name "
                "hashes them (docs/guides/modes.md, 'Partitioners')", choices=PARTITIONERS),
        setting("partitioner.adaptive.partitioning.enable", "true", "choice", "uniform_sticky: "
                "weight the next partition by its queued batches", choices=("true", "false")),
        setting("partitioner.availability.timeout.ms", 0, "int", "uniform_sticky adaptive: "
                "skip brokers with a batch ready and undrained this long (0: off)", 0, 3_600_000),
        setting("partitioner.ignore.keys", "false", "choice", "uniform_sticky: partition keyed "
                "messages like keyless ones", choices=("true", "false")),
        setting("sticky.partitioning.linger.ms", 10, "int", "librdkafka partitioner names: how "
                "long keyless messages stick to one random partition (0: random each)",
                0, 900_000),
    ]
)
"""The settings every mode shares (some read by a few modes only: `modes`)."""
SETTINGS.update(mode_settings())  # each mode's own, declared in its module (modes/)

EMPTY_ALLOWED = frozenset({"ssl.endpoint.identification.algorithm"})
"""Settings whose documented values include the empty one (Kafka: empty turns host name
verification off), so `-X key=` means that value, as a properties file line does."""


def parse_assignment(text: str) -> tuple[str, str]:
    """Split one `key=value` string; the CLI's `-X` passes each occurrence here."""
    key, sep, value = text.partition("=")
    key, value = key.strip(), value.strip()
    if not sep or not key or (not value and key not in EMPTY_ALLOWED):
        raise ConfigError(
            f"Malformed setting {text!r}: expected key=value, for example -X linger.ms=10."
        )
    return key, value


def _convert(spec: SettingSpec, raw: Any) -> Any:
    if spec.kind == "float":
        try:
            number = float(str(raw).strip())
        except ValueError:
            number = math.nan
        if not math.isfinite(number):
            raise ConfigError(
                f"Setting {spec.name}={raw!r} is not a number. {_range_text(spec)}"
            ) from None
        if (spec.minimum is not None and number < spec.minimum) or (
            spec.maximum is not None and number > spec.maximum
        ):
            raise ConfigError(f"Setting {spec.name}={number} is out of range. {_range_text(spec)}")
        return number
    if spec.kind == "int":
        try:
            value = int(str(raw).strip())
        except ValueError:
            raise ConfigError(
                f"Setting {spec.name}={raw!r} is not a whole number. {_range_text(spec)}"
            ) from None
        if (spec.minimum is not None and value < spec.minimum) or (
            spec.maximum is not None and value > spec.maximum
        ):
            raise ConfigError(f"Setting {spec.name}={value} is out of range. {_range_text(spec)}")
        return value
    text = str(raw).strip().lower() if spec.kind != "str" else str(raw)
    if spec.kind == "acks":
        if text not in ACKS_VALUES:
            raise ConfigError(f"Setting acks={raw!r} is not allowed. Allowed: 0, 1, all.")
        return "all" if text == "-1" else text
    if spec.kind == "choice" and text not in spec.choices:
        raise ConfigError(
            f"Setting {spec.name}={raw!r} is not allowed. Allowed: {', '.join(spec.choices)}."
        )
    return text


def _range_text(spec: SettingSpec) -> str:
    return f"Allowed: {spec.minimum} to {spec.maximum} ({spec.help})."


def build_settings(
    assignments: Iterable[tuple[str, str]] | Mapping[str, Any] = (),
    mode: str = "partition",
) -> ProducerSettings:
    """Validate user-given settings against `SETTINGS` and fill in defaults.

    Unknown keys are refused with the closest known name, so a typo never passes silently;
    names of the Java client or librdkafka are accepted and listed once as not used.
    """
    problem = mode_problem(mode)
    if problem is not None:
        raise ConfigError(problem)
    spec_of_mode = mode_spec(mode)
    items = assignments.items() if isinstance(assignments, Mapping) else assignments
    values = {name: spec.default for name, spec in SETTINGS.items()}
    explicit: set[str] = set()
    client: dict[str, str] = {}
    passthrough: dict[str, str] = {}
    foreign: dict[str, str] = {}
    for key, raw in items:
        kind = setting_kind(key, mode)
        if kind == "security":
            client[key] = str(raw)
            continue
        if kind == "librdkafka":
            passthrough[key] = str(raw)
            continue
        if kind == "foreign":
            foreign[key] = str(raw)
            continue
        spec = SETTINGS.get(key)
        if spec is None and key.startswith(BRUCE_TOPIC_PREFIX):
            spec = bruce_topic_spec(key)
        if spec is None:
            raise ConfigError(unknown_setting_message(key))
        values[key] = _convert(spec, raw)
        explicit.add(key)
    if values["batch.size"] > values["max.request.size"]:
        raise ConfigError(
            f"batch.size={values['batch.size']} is larger than "
            f"max.request.size={values['max.request.size']}: a full batch could never be sent. "
            "Lower batch.size or raise max.request.size."
        )
    warnings: list[str] = []
    _check_transactions(explicit, values, mode)
    _check_idempotence(explicit, values, warnings)
    warnings.extend(why for key, why in spec_of_mode.ignores if key in explicit)
    if (not any(k.startswith("bruce.") for k in spec_of_mode.reads)
            and any(k.startswith("bruce.") for k in explicit)):
        warnings.append(f"the bruce.* settings apply to mode bruce only; ignored in mode {mode}")
    security = build_security(client)
    warnings.extend(security.warnings)
    check = spec_of_mode.load_check()
    if check is not None:  # the mode's own settings (modes.py names the check)
        check(explicit, values, warnings)
    if foreign:
        warnings.append(foreign_warning(mode, foreign))
    if "batch.num.messages" in explicit and "batch.num.messages" not in spec_of_mode.reads:
        warnings.append(f"batch.num.messages applies to mode librdkafka only; ignored in mode "
                        f"{mode}")
    settings = ProducerSettings(
        values=values, explicit=frozenset(explicit), warnings=tuple(warnings),
        security=security, client_properties=tuple(client.items()),
        librdkafka_properties=tuple(passthrough.items()),
        foreign_properties=tuple(foreign.items()),
    )
    if spec_of_mode.check_built is not None:  # e.g. librdkafka judges its configuration
        spec_of_mode.check_built(settings)
    return settings


def setting_kind(key: str, mode: str) -> str:
    """Where a property goes: "producer" (the SETTINGS table or bruce.topic.*), "security"
    (TLS/SASL), "librdkafka" (mode librdkafka passes librdkafka's names on), "foreign" (a
    name of the Java client or librdkafka kbatch accepts and does not apply), or
    "unknown"."""
    if key in SETTINGS or key.startswith(BRUCE_TOPIC_PREFIX):
        return "producer"
    if key in SECURITY_KEYS:
        return "security"
    passes = base_mode(mode) in PASSTHROUGH_MODES
    if passes and key in LIBRDKAFKA_RESERVED:
        return "unknown"
    if passes and librdkafka_producer_property(key):
        return "librdkafka"
    if is_foreign(key):
        return "foreign"
    if passes and closest_name(key, SETTINGS) is None:
        return "librdkafka"  # librdkafka judges a name it may know and our list may not
    return "unknown"


def unknown_setting_message(key: str) -> str:
    """One short paragraph, with the closest known name (`client_properties`)."""
    return unknown_property_message(key, [*SETTINGS, *SECURITY_KEYS])


def foreign_warning(mode: str, foreign: Mapping[str, str]) -> str:
    """The run's one line about accepted properties it does not apply itself."""
    passed = java_producer_passthrough(foreign.items()) if base_mode(mode) == "kafka-java" else {}
    warning = not_used_warning(mode, set(foreign) - set(passed), passed, "the Java producer")
    assert warning is not None  # `foreign` is never empty: each is passed on or unused
    return warning


def _check_transactions(explicit: set[str], values: dict[str, Any], mode: str) -> None:
    """transactional.id implies idempotence (as Java): asking for both a transactional
    id and no idempotence, or using it in mode librdkafka, is refused."""
    if not values["transactional.id"]:
        others = sorted(k for k in explicit if k.startswith("transaction."))
        if others:
            raise ConfigError(f"{', '.join(others)} needs -X transactional.id=ID.")
        return
    if not mode_spec(mode).transactions:
        raise ConfigError(f"transactional.id is not supported in mode {mode} (kbatch "
                          f"drives {mode} without transactions); use another mode.")
    if values["enable.idempotence"] != "true":
        raise ConfigError("transactional.id needs idempotence; drop "
                          "-X enable.idempotence=false.")
    explicit.add("enable.idempotence")  # conflicts with acks / max.in.flight are errors


def _check_idempotence(explicit: set[str], values: dict[str, Any], warnings: list[str]) -> None:
    """As Java >= 3.2: idempotence asked for explicitly with acks other than all or more
    than 5 requests in flight is an error; left at its default, it is turned off."""
    conflicts = []
    if values["acks"] != "all":
        conflicts.append(f"acks={values['acks']}")
    if values["max.in.flight.requests.per.connection"] > IDEMPOTENT_MAX_IN_FLIGHT:
        conflicts.append("max.in.flight.requests.per.connection="
                         f"{values['max.in.flight.requests.per.connection']}")
    if not conflicts or values["enable.idempotence"] != "true":
        return
    if "enable.idempotence" in explicit:
        raise ConfigError(
            f"enable.idempotence=true needs acks=all and at most {IDEMPOTENT_MAX_IN_FLIGHT} "
            f"requests in flight per connection, but {' and '.join(conflicts)} was given. "
            "Drop the conflicting setting, or set -X enable.idempotence=false."
        )
    values["enable.idempotence"] = "false"
    warnings.append(f"idempotence is off because of {' and '.join(conflicts)} (it needs "
                    f"acks=all and max.in.flight.requests.per.connection <= "
                    f"{IDEMPOTENT_MAX_IN_FLIGHT}); retries may write duplicates")


def settings_help() -> str:
    """One line per setting for `--help`: name, default, meaning."""
    lines = [f"{s.name} (default {s.default}): {s.help}" for s in SETTINGS.values()]
    lines.append(f"{BRUCE_TOPIC_PREFIX}<topic>.<{'|'.join(BRUCE_TOPIC_SETTINGS)}>: mode bruce, "
                 "one topic's batching thresholds (-1: off) and rate limit, overriding the "
                 "workload file")
    return "\n".join(lines)
