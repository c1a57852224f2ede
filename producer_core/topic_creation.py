"""How kbatch creates the topics it produces to: replication factor and topic configs.

Kept apart from the producer settings because they describe the topic, not the producer;
they travel with the settings (`ProducerSettings.topic_creation`) only so that every place
that creates topics (the engine, mode librdkafka, the Spark driver) sees the same choice.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from producer_core.errors import UsageError

DEFAULT_REPLICATION_FACTOR = 1


@dataclass(frozen=True)
class TopicCreation:
    """`replication_factor` None: create with 1 and accept an existing topic's own.
    `prime`: write each never-written partition (twice) before the run's clock starts
    (`transport.priming`); False (`--no-prime`) studies a cold topic."""

    replication_factor: int | None = None
    configs: tuple[tuple[str, str], ...] = ()
    prime: bool = True

    @property
    def create_replication_factor(self) -> int:
        return self.replication_factor or DEFAULT_REPLICATION_FACTOR

    def as_dict(self) -> dict[str, Any]:
        """For the results' settings: only what the user chose."""
        out: dict[str, Any] = {}
        if self.replication_factor is not None:
            out["topic.replication.factor"] = self.replication_factor
        out.update({f"topic.config.{k}": v for k, v in self.configs})
        if not self.prime:
            out["topic.prime"] = False
        return out


def parse_topic_creation(replication_factor: int | None,
                         topic_configs: Iterable[str], prime: bool = True) -> TopicCreation:
    """`--replication-factor N`, `--topic-config KEY=VALUE ...` (a later KEY wins) and
    `--no-prime`."""
    if replication_factor is not None and not 1 <= replication_factor <= 32767:
        raise UsageError(f"--replication-factor must be 1 to 32767 (got {replication_factor}).")
    configs: dict[str, str] = {}
    for text in topic_configs:
        key, sep, value = text.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            raise UsageError(f"Malformed --topic-config {text!r}: expected KEY=VALUE, for "
                             "example --topic-config min.insync.replicas=2.")
        configs[key] = value
    return TopicCreation(replication_factor, tuple(configs.items()), prime)


DEFAULT_CREATION = TopicCreation()
