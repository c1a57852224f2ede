"""Producer settings under Kafka's own names, parsed from `-X key=value` and validated.

One table (`SETTINGS`) describes every setting: its type, default, allowed range and a
one-line meaning. Parsing, validation, `--help` text and the results JSON all read it, so
a setting is declared once.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from producer_core.errors import ConfigError
from producer_core.modes import (  # declared there; MODES and COLLECTOR_MODES importable here
    COLLECTOR_MODES,
    MODES,
    PASSTHROUGH_MODES,
)
from producer_core.modes import mode as mode_spec
from producer_core.partitioners import PARTITIONERS
from producer_core.security import PLAINTEXT, SECURITY_KEYS, SecurityConfig, build_security, redact
from producer_core.topic_creation import DEFAULT_CREATION, TopicCreation

LIBRDKAFKA_NAMES = {
    "linger.ms": "linger.ms",
    "batch.size": "batch.size",
    "batch.num.messages": "batch.num.messages",
    "acks": "acks",
    "max.in.flight.requests.per.connection": "max.in.flight.requests.per.connection",
    "compression.type": "compression.type",
    "max.request.size": "message.max.bytes",
    "request.timeout.ms": "request.timeout.ms",
    "delivery.timeout.ms": "delivery.timeout.ms",
    "retries": "retries",
    "enable.idempotence": "enable.idempotence",
    "retry.backoff.ms": "retry.backoff.ms",
    "client.id": "client.id",
    "buffer.memory": "queue.buffering.max.kbytes",
}
"""kbatch setting -> the librdkafka property that means the same thing (mode librdkafka).
`buffer.memory` is converted to kilobytes. `max.block.ms` is not passed on: it bounds how
long kbatch's generator waits on a full librdkafka queue. Any other kbatch setting is refused;
a name kbatch does not know is a librdkafka property and is passed on as given."""

LIBRDKAFKA_OWN = frozenset({"max.block.ms", "partitioner", "sticky.partitioning.linger.ms"})

BRUCE_IGNORED = (
    "{key} is ignored in mode bruce: batches complete on Bruce's per-topic or combined "
    "thresholds (bruce.combined.*, bruce.topic.<name>.*), and a partition's record batch "
    "grows up to max.request.size"
)

ACKS_VALUES = {"0": 0, "1": 1, "all": -1, "-1": -1}
MAX_RETRIES = 2147483647
IDEMPOTENT_MAX_IN_FLIGHT = 5
"""Brokers keep the last 5 batches per producer and partition for de-duplication."""


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


def _spec(*args: Any, **kwargs: Any) -> tuple[str, SettingSpec]:
    spec = SettingSpec(*args, **kwargs)
    return spec.name, spec


SETTINGS: dict[str, SettingSpec] = dict(
    [
        _spec("linger.ms", 5, "int", "per-partition linger: how long a partition's oldest "
              "message may wait for company before its batch is ready", 0, 900_000,
              modes=("partition", "java", "librdkafka")),
        _spec("batch.size", 16384, "int", "bytes per partition batch; a full batch is "
              "ready at once", 64, 64 * 1024 * 1024),
        _spec("acks", "all", "acks", "0 (no response), 1 (leader) or all (every in-sync "
              "replica; the default, as Java >= 3.0 and librdkafka)", choices=("0", "1", "all")),
        _spec("enable.idempotence", "true", "choice", "idempotent producer (as Java >= 3.0): "
              "a producer id and per-partition sequence numbers, so retries are written once "
              "and in order; needs acks=all and max.in.flight.requests.per.connection <= 5. "
              "Left unset, a conflicting acks or max.in.flight turns it off with a warning",
              choices=("true", "false")),
        _spec("transactional.id", "", "str", "transactional producer (implies idempotence): "
              "FindCoordinator, InitProducerId with this id, AddPartitionsToTxn before a "
              "partition's first batch of a transaction, EndTxn every "
              "transaction.duration.ms (empty: not transactional)"),
        _spec("transaction.duration.ms", 3000, "int", "with transactional.id: each "
              "transaction is committed this long after it began (kafka-producer-perf-test's "
              "--transaction-duration-ms)", 1, 900_000),
        _spec("transaction.abort.every", 0, "int", "with transactional.id: abort every K-th "
              "transaction instead of committing it (0: never), for --verify with "
              "read_committed", 0, 1_000_000_000),
        _spec("transaction.timeout.ms", 60000, "int", "with transactional.id: the "
              "coordinator aborts a transaction open longer than this", 1, 900_000),
        _spec("max.in.flight.requests.per.connection", 5, "int",
              "ProduceRequests awaiting a response per broker connection", 1, 1000),
        _spec("request.timeout.ms", 30000, "int", "how long a ProduceRequest may wait for its "
              "response; then its connection is closed and its messages are retried (or "
              "their outcome is unknown)", 1, 3_600_000),
        _spec("delivery.timeout.ms", 120000, "int", "upper bound from append to outcome, "
              "queued, in flight and retrying included; past it a message fails (or, if it "
              "may have been written, its outcome is unknown)", 1, 86_400_000),
        _spec("retries", MAX_RETRIES, "int", "times a batch is re-sent after a retriable "
              "error (default: unbounded but for delivery.timeout.ms, as Java)",
              0, MAX_RETRIES),
        _spec("retry.backoff.ms", 100, "int", "pause before a batch is re-sent", 0, 60_000),
        _spec("max.request.size", 1048576, "int", "largest ProduceRequest in bytes; bounds "
              "how many partition batches one request may carry", 1024, 1024 * 1024 * 1024),
        _spec("produce.request.max.partitions", -1, "int", "partitions per ProduceRequest "
              "at most (-1: unlimited; 1 reproduces stock librdkafka)", -1, 1_000_000),
        _spec("buffer.memory", 33554432, "int", "bytes of records the producer may hold "
              "unsent (mode java: batch.size per batch until its response, as Java's "
              "BufferPool); when full the generator waits up to max.block.ms", 1024, 1 << 40),
        _spec("max.block.ms", 60000, "int", "how long the generator waits for buffer.memory "
              "per message; then the message fails with reason max.block.ms", 0, 86_400_000),
        _spec("batch.num.messages", 10000, "int", "mode librdkafka only: messages per "
              "partition batch at most (librdkafka's own setting)", 1, 1_000_000,
              modes=("librdkafka",)),
        _spec("compression.type", "none", "choice", "record batch compression",
              choices=("none", "gzip", "snappy", "lz4", "zstd")),
        _spec("client.id", "kbatch", "str", "client id sent in every request header"),
        _spec("partitioner", "round_robin", "choice", "how messages get partitions: "
              "round_robin (keyless one at a time), sticky (KIP-480), uniform_sticky "
              "(KIP-794), or a librdkafka name; keys keep murmur2 unless a librdkafka name "
              "hashes them (README 'Partitioners')", choices=PARTITIONERS),
        _spec("partitioner.adaptive.partitioning.enable", "true", "choice", "uniform_sticky: "
              "weight the next partition by its queued batches", choices=("true", "false")),
        _spec("partitioner.availability.timeout.ms", 0, "int", "uniform_sticky adaptive: "
              "skip brokers with a batch ready and undrained this long (0: off)", 0, 3_600_000),
        _spec("partitioner.ignore.keys", "false", "choice", "uniform_sticky: partition keyed "
              "messages like keyless ones", choices=("true", "false")),
        _spec("sticky.partitioning.linger.ms", 10, "int", "librdkafka partitioner names: how "
              "long keyless messages stick to one random partition (0: random each)",
              0, 900_000),
        _spec("broker.linger.ms", 5, "int", "broker-level linger: how long a broker's batch "
              "collector gathers partitions, timed from the first partition it collects",
              0, 900_000, modes=("broker",)),
        _spec("broker.batch.max.partitions", -1, "int", "send a broker's collection early "
              "once this many partitions are collected (-1: off)", -1, 1_000_000,
              modes=COLLECTOR_MODES),
        _spec("broker.batch.max.bytes", -1, "int", "send a broker's collection early once "
              "its partitions hold this many record bytes (-1: off; in mode adaptive, a "
              "collection that fills one max.request.size request is that request)",
              -1, 1 << 40,
              modes=COLLECTOR_MODES),
        _spec("adaptive.linger.max.ms", -1, "int", "mode adaptive: longest a broker's "
              "collection waits for its queued flush before it is sent anyway (-1: no cap, "
              "KIP-1224's append.linger.ms=-1)", -1, 900_000, modes=("adaptive",)),
        _spec("aimd.linger.min.ms", 1, "int", "mode aimd: smallest collection window a "
              "broker's controller may choose", 0, 900_000, modes=("aimd",)),
        _spec("aimd.linger.max.ms", 100, "int", "mode aimd: largest collection window a "
              "broker's controller may choose", 0, 900_000, modes=("aimd",)),
        _spec("aimd.linger.initial.ms", 5, "int", "mode aimd: the window every broker "
              "starts with (kept within aimd.linger.min.ms..aimd.linger.max.ms)", 0, 900_000,
              modes=("aimd",)),
        _spec("aimd.linger.step.ms", 1, "int", "mode aimd: additive increase, ms added to "
              "the window per healthy response (per p99 check with aimd.target.p99.ms)",
              1, 900_000, modes=("aimd",)),
        _spec("aimd.decrease.factor", 0.5, "float", "mode aimd: multiplicative decrease, "
              "the window is multiplied by this on backpressure (a retry, throttling, every "
              "request slot busy, or the round trip above aimd.rtt.decrease.ratio)",
              0.01, 0.99, modes=("aimd",)),
        _spec("aimd.rtt.increase.ratio", 1.1, "float", "mode aimd: healthy while the round "
              "trip's moving average (weight 1/8) is below this times the smallest round "
              "trip seen; then the window grows by aimd.linger.step.ms", 1.0, 100.0,
              modes=("aimd",)),
        _spec("aimd.rtt.decrease.ratio", 1.5, "float", "mode aimd: backpressure once the "
              "round trip's moving average is above this times the smallest seen; then the "
              "window shrinks by aimd.decrease.factor", 1.0, 100.0, modes=("aimd",)),
        _spec("aimd.target.p99.ms", -1, "int", "mode aimd: steer each broker's window to "
              "the largest whose recent p99 latency stays under this, instead of the round "
              "trip ratios (-1: off)", -1, 3_600_000, modes=("aimd",)),
        _spec("aimd.target.interval.ms", 250, "int", "mode aimd with aimd.target.p99.ms: "
              "how often the recent p99 is checked (each check needs at least 100 "
              "acknowledged messages taken after the last change settled)", 1, 600_000,
              modes=("aimd",)),
        _spec("bruce.combined.max.delay.ms", 10, "int", "mode bruce: a combined (mixed-topic) "
              "batch completes once its oldest message is this old (-1: off)", -1, 900_000,
              modes=("bruce",)),
        _spec("bruce.combined.max.bytes", 262144, "int", "mode bruce: a combined batch "
              "completes once it holds this many record bytes (-1: off)", -1, 1 << 40,
              modes=("bruce",)),
        _spec("bruce.combined.max.messages", -1, "int", "mode bruce: a combined batch "
              "completes once it holds this many messages (-1: off)", -1, 1 << 40,
              modes=("bruce",)),
    ]
)

BRUCE_TOPIC_PREFIX = "bruce.topic."
BRUCE_TOPIC_SETTINGS: dict[str, SettingSpec] = dict(
    [
        _spec("max.delay.ms", -1, "int", "the topic's batch completes once its oldest message "
              "is this old (0: at once; -1: off)", -1, 900_000, modes=("bruce",)),
        _spec("max.bytes", -1, "int", "the topic's batch completes once it holds this many "
              "record bytes (-1: off)", -1, 1 << 40, modes=("bruce",)),
        _spec("max.messages", -1, "int", "the topic's batch completes once it holds this many "
              "messages (-1: off)", -1, 1 << 40, modes=("bruce",)),
        _spec("rate.limit.interval.ms", 1000, "int", "rate limit window of the topic",
              1, 86_400_000, modes=("bruce",)),
        _spec("rate.limit.max.messages", 0, "int", "messages of the topic admitted per rate "
              "limit window; the excess is discarded", 0, 1 << 40, modes=("bruce",)),
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


@dataclass(frozen=True)
class ProducerSettings:
    """Validated settings; `explicit` records which keys the user set (for warnings).

    `warnings` are for the user (for example a deprecated setting that is ignored).
    """

    values: Mapping[str, Any]
    explicit: frozenset[str] = frozenset()
    warnings: tuple[str, ...] = ()
    security: SecurityConfig = PLAINTEXT
    """TLS and SASL, from the security.* / sasl.* / ssl.* properties (`producer_core.security`)."""
    client_properties: tuple[tuple[str, str], ...] = ()
    """Those properties as the user gave them (shown redacted in results)."""
    librdkafka_properties: tuple[tuple[str, str], ...] = ()
    """Mode librdkafka: properties kbatch does not know, passed to librdkafka as given."""
    topic_creation: TopicCreation = DEFAULT_CREATION

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    @property
    def linger_s(self) -> float:
        return self.values["linger.ms"] / 1000.0

    @property
    def batch_size(self) -> int:
        return self.values["batch.size"]

    @property
    def acks(self) -> int:
        return ACKS_VALUES[self.values["acks"]]

    @property
    def max_in_flight(self) -> int:
        return self.values["max.in.flight.requests.per.connection"]

    @property
    def transactional_id(self) -> str | None:
        return self.values["transactional.id"] or None

    @property
    def idempotent(self) -> bool:
        return self.values["enable.idempotence"] == "true"

    @property
    def request_timeout_s(self) -> float:
        return self.values["request.timeout.ms"] / 1000.0

    @property
    def delivery_timeout_s(self) -> float:
        return self.values["delivery.timeout.ms"] / 1000.0

    @property
    def max_request_size(self) -> int:
        return self.values["max.request.size"]

    @property
    def max_partitions_per_request(self) -> int | None:
        cap = self.values["produce.request.max.partitions"]
        return None if cap in (-1, 0) else cap

    def as_dict(self) -> dict[str, Any]:
        """The settings for results and reports: secrets redacted."""
        return {**self.values, **redact(dict(self.client_properties)),
                **redact(dict(self.librdkafka_properties)), **self.topic_creation.as_dict()}

    def with_topic_suffix(self, suffix: str) -> ProducerSettings:
        """The same settings for a workload whose topic names got `suffix` (compare-modes):
        per-topic keys (`bruce.topic.<name>.*`) follow their topic."""
        def rename(key: str) -> str:
            parsed = bruce_topic_key(key)
            if parsed is None:
                return key
            return f"{BRUCE_TOPIC_PREFIX}{parsed[0]}{suffix}.{parsed[1]}"

        return replace(self, values={rename(k): v for k, v in self.values.items()},
                       explicit=frozenset(rename(k) for k in self.explicit))


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

    Unknown keys are refused with the list of known ones, so a typo never passes silently.
    """
    if mode not in MODES:
        raise ConfigError(f"Unknown mode {mode!r}. Allowed modes: {', '.join(MODES)}.")
    spec_of_mode = mode_spec(mode)
    items = assignments.items() if isinstance(assignments, Mapping) else assignments
    values = {name: spec.default for name, spec in SETTINGS.items()}
    explicit: set[str] = set()
    client: dict[str, str] = {}
    passthrough: dict[str, str] = {}
    for key, raw in items:
        kind = setting_kind(key, mode)
        if kind == "security":
            client[key] = str(raw)
            continue
        if kind == "librdkafka":
            passthrough[key] = str(raw)
            continue
        spec = SETTINGS.get(key)
        if spec is None and key.startswith(BRUCE_TOPIC_PREFIX):
            spec = _bruce_topic_spec(key)
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
    security = build_security(client)
    warnings.extend(security.warnings)
    check = spec_of_mode.load_check()
    if check is not None:  # the mode's own settings (modes.py names the check)
        check(explicit, values, warnings)
    if spec_of_mode.passthrough:
        _check_passthrough(explicit, passthrough)
    if "batch.num.messages" in explicit and "batch.num.messages" not in spec_of_mode.reads:
        warnings.append(f"batch.num.messages applies to mode librdkafka only; ignored in mode "
                        f"{mode}")
    settings = ProducerSettings(
        values=values, explicit=frozenset(explicit), warnings=tuple(warnings),
        security=security, client_properties=tuple(client.items()),
        librdkafka_properties=tuple(passthrough.items()),
    )
    if spec_of_mode.passthrough and (passthrough or client):
        from producer_core.librdkafka_engine import check_config

        check_config(settings)
    return settings


def setting_kind(key: str, mode: str) -> str:
    """Where a property goes: "producer" (the SETTINGS table or bruce.topic.*), "security"
    (TLS/SASL), "librdkafka" (mode librdkafka passes any other name on), or "unknown"."""
    if key in SETTINGS or key.startswith(BRUCE_TOPIC_PREFIX):
        return "producer"
    if key in SECURITY_KEYS:
        return "security"
    if mode in PASSTHROUGH_MODES and key not in LIBRDKAFKA_RESERVED:
        return "librdkafka"
    return "unknown"


def unknown_setting_message(key: str) -> str:
    return (f"Unknown setting {key!r}. Known settings: {', '.join(sorted(SETTINGS))}, "
            f"{BRUCE_TOPIC_PREFIX}<topic>.<{'|'.join(BRUCE_TOPIC_SETTINGS)}>, and the "
            "security settings (security.protocol, sasl.*, ssl.*; see README 'Secured "
            "clusters and client properties'). Mode librdkafka also passes any librdkafka "
            "property on.")


LIBRDKAFKA_RESERVED = frozenset({"bootstrap.servers", "metadata.broker.list",
                                 "statistics.interval.ms"})
"""librdkafka properties kbatch sets itself (the cluster, and the statistics its counts
come from)."""


def _check_passthrough(explicit: set[str], passthrough: Mapping[str, str]) -> None:
    """A librdkafka property may not also be set through kbatch's name for it."""
    clashes = sorted(f"{key} (set through {kbatch})" for kbatch, key in LIBRDKAFKA_NAMES.items()
                     if key in passthrough and kbatch in explicit and kbatch != key)
    if clashes:
        raise ConfigError(f"Mode librdkafka: {', '.join(clashes)} given twice; set it once.")


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


def _bruce_topic_spec(key: str) -> SettingSpec:
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


def check_java(explicit: set[str], values: Mapping[str, Any], warnings: list[str]) -> None:
    """Mode java: every batch holds batch.size of buffer.memory (Java's BufferPool)."""
    if values["batch.size"] > values["buffer.memory"]:
        raise ConfigError(
            f"batch.size={values['batch.size']} is larger than "
            f"buffer.memory={values['buffer.memory']}: in mode java every batch holds "
            "batch.size bytes of buffer.memory, so no batch could ever be allocated. Lower "
            "batch.size or raise buffer.memory."
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


def check_librdkafka(explicit: set[str], values: Mapping[str, Any],
                     warnings: list[str]) -> None:
    """Mode librdkafka: refuse settings librdkafka does not have, rather than silently not
    applying them."""
    refused = sorted(k for k in explicit if k not in LIBRDKAFKA_NAMES and k not in LIBRDKAFKA_OWN)
    if refused:
        accepted = ", ".join(sorted([*LIBRDKAFKA_NAMES, *LIBRDKAFKA_OWN]))
        raise ConfigError(
            f"Mode librdkafka has no equivalent of {', '.join(refused)}: librdkafka has no "
            "broker-level collector, and puts exactly one partition in every ProduceRequest "
            f"(librdkafka issue #1700). Settings mode librdkafka accepts: {accepted}."
        )
    if "max.request.size" in explicit and values["max.request.size"] > 1_000_000_000:
        raise ConfigError(
            f"max.request.size={values['max.request.size']} is above librdkafka's "
            "message.max.bytes limit of 1000000000."
        )


def settings_help() -> str:
    """One line per setting for `--help`: name, default, meaning."""
    lines = [f"{s.name} (default {s.default}): {s.help}" for s in SETTINGS.values()]
    lines.append(f"{BRUCE_TOPIC_PREFIX}<topic>.<{'|'.join(BRUCE_TOPIC_SETTINGS)}>: mode bruce, "
                 "one topic's batching thresholds (-1: off) and rate limit, overriding the "
                 "workload file")
    return "\n".join(lines)
