"""The validated settings of one run (`ProducerSettings`), as `config.build_settings`
builds them and every mode, driver and report reads them. Kept apart from `config` (the
table, parsing and checks) so that the mode modules, which `config` reads, can name this
type without importing `config` back."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from producer_core.security import PLAINTEXT, SecurityConfig, redact
from producer_core.topic_creation import DEFAULT_CREATION, TopicCreation
from producer_core.topic_setting_keys import BRUCE_TOPIC_PREFIX, bruce_topic_key

ACKS_VALUES = {"0": 0, "1": 1, "all": -1, "-1": -1}


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
    foreign_properties: tuple[tuple[str, str], ...] = ()
    """Properties of the Java client or librdkafka kbatch does not apply
    (`producer_core.client_properties`): kept for the real clients that read them."""
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
