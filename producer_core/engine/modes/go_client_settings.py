"""Which kbatch settings reach each Go client (modes franz-go, sarama, kafka-go), and as what.

kbatch's setting names are Kafka's (the Java producer's); each Go client has its own
options, so the table names, per client, the option a setting becomes. A setting a
client lacks is refused by name when given explicitly, never silently dropped. Batching
settings are passed only when given, so each client runs with its own defaults (franz-go
lingers 10 ms, sarama flushes at once, kafka-go waits up to 1 s for 100 messages);
``acks`` and ``enable.idempotence`` are always passed (kbatch's defaults are Java's, as
for mode librdkafka), except that kafka-go, which has no idempotent producer, gets
``enable.idempotence`` only when given, and refuses true.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from producer_core.engine.modes.go_toolchain import toolchain_check
from producer_core.errors import ConfigError

OPTIONS: dict[str, dict[str, str]] = {
    "franz-go": {
        "linger.ms": "ProducerLinger",
        "batch.size": "ProducerBatchMaxBytes",
        "acks": "RequiredAcks",
        "enable.idempotence": "DisableIdempotentWrite (when false)",
        "compression.type": "ProducerBatchCompression",
        "max.in.flight.requests.per.connection":
            "MaxProduceRequestsInflightPerBroker (without idempotence)",
        "request.timeout.ms": "ProduceRequestTimeout",
        "delivery.timeout.ms": "RecordDeliveryTimeout",
        "retries": "RecordRetries",
        "retry.backoff.ms": "RetryBackoffFn",
        "max.request.size": "BrokerMaxWriteBytes",
        "buffer.memory": "MaxBufferedBytes",
        "client.id": "ClientID",
    },
    "sarama": {
        "linger.ms": "Producer.Flush.Frequency",
        "batch.size": "Producer.Flush.Bytes (per broker)",
        "acks": "Producer.RequiredAcks",
        "enable.idempotence": "Producer.Idempotent",
        "compression.type": "Producer.Compression",
        "max.in.flight.requests.per.connection": "Net.MaxOpenRequests",
        "request.timeout.ms": "Producer.Timeout",
        "retries": "Producer.Retry.Max",
        "retry.backoff.ms": "Producer.Retry.Backoff",
        "max.request.size": "Producer.MaxMessageBytes",
        "client.id": "ClientID",
    },
    "kafka-go": {
        "linger.ms": "Writer.BatchTimeout",
        "batch.size": "Writer.BatchBytes",
        "acks": "Writer.RequiredAcks",
        "enable.idempotence": "false only (kafka-go has no idempotent producer)",
        "compression.type": "Writer.Compression",
        "retries": "Writer.MaxAttempts (retries + 1)",
        "retry.backoff.ms": "Writer.WriteBackoffMin",
        "client.id": "Transport.ClientID",
    },
}
"""Per client: kbatch setting (Kafka's name) -> the client's option it becomes."""

ALWAYS_PASSED = ("acks", "enable.idempotence")
GO_VERSIONS = "a release of the client's Go module from your Go module proxy (e.g. @v1.18.0)"
"""Where a Go mode's ``@VERSION`` comes from (`ModeSpec.versions`)."""


def check_settings(client: str, explicit: Iterable[str], values: Mapping[str, Any]) -> None:
    """Refuse, by name, settings `client` has no option for, and idempotence in kafka-go."""
    options = OPTIONS[client]
    refused = sorted(k for k in explicit if k not in options)
    if refused:
        raise ConfigError(
            f"Mode {client} has no equivalent of {', '.join(refused)}: kbatch maps Kafka's "
            f"setting names onto {client}'s own options and {client} has none for "
            f"{'it' if len(refused) == 1 else 'them'}. Settings mode {client} accepts: "
            f"{', '.join(sorted(options))}.")
    if (client == "kafka-go" and "enable.idempotence" in explicit
            and str(values.get("enable.idempotence")).lower() == "true"):
        raise ConfigError("Mode kafka-go has no idempotent producer: drop "
                          "-X enable.idempotence=true (results of kafka-go runs say "
                          "idempotence was off).")


def client_properties(client: str, explicit: Iterable[str],
                      values: Mapping[str, Any]) -> dict[str, str]:
    """The Kafka-named settings sent to the Go driver for `client`."""
    explicit = set(explicit)
    names = [k for k in OPTIONS[client] if k in explicit]
    always = ("acks",) if client == "kafka-go" else ALWAYS_PASSED
    names += [k for k in always if k not in names]
    out = {}
    for name in names:
        value = values[name]
        out[name] = str(value).lower() if isinstance(value, bool) else str(value)
    return out


def mode_check(client: str) -> Any:
    """The ModeSpec `check` of `client`."""
    def check(explicit: set[str], values: Mapping[str, Any], warnings: list[str]) -> None:
        check_settings(client, explicit, values)
    return check


def check_security(client: str, settings: Any) -> None:
    """The Go driver connects over PLAINTEXT only: TLS or SASL settings are refused."""
    protocol = settings.security.protocol
    if protocol != "PLAINTEXT":
        raise ConfigError(f"Mode {client} runs over PLAINTEXT only in this kbatch version "
                          f"(security.protocol={protocol} was asked); modes kafka-java and "
                          "librdkafka take TLS and SASL.")


def built_check(client: str) -> Any:
    """The ModeSpec `check_built` of `client`: PLAINTEXT, and the Go toolchain is there
    (both before any broker starts)."""
    toolchain = toolchain_check(client)

    def check(settings: Any) -> None:
        check_security(client, settings)
        toolchain(settings)
    return check
