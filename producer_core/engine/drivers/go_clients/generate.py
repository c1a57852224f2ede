"""A Go client's own ceiling: the Go driver generating its own messages (benchmarks).

Modes franz-go, sarama and kafka-go are fed message by message by kbatch's Python
generator, so an unthrottled run measures the client plus that feeder. With the optional
header keys ``kbatch.generate.messages`` / ``.size`` / ``.ids`` (client-driver protocol
version 1, docs/architecture/client-drivers.md) the Go program makes the messages itself
(keyless, the client's default partitioner) and hands them to the client as fast as it
takes them, as librdkafka's ``rdkafka_performance`` and Kafka's ``ProducerPerformance``
do: the client's own ceiling, with counts only (no per-message accounting).

`generate` speaks the protocol directly: hello, the header, ``E`` at once (the driver
finishes its N messages, flushes and writes its ``result``), nothing else.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from producer_core.engine.drivers.client_pipe import protocol
from producer_core.engine.drivers.go_clients.driver import prepare
from producer_core.errors import BrokerError, ConfigError


@dataclass(frozen=True)
class Generated:
    """One generated run's result line and the span from first produce to last ack."""

    result: dict[str, Any]

    @property
    def seconds(self) -> float:
        first = self.result["generated"]["first_send_ns"]
        return max(0, self.result["last_ack_ns"] - first) / 1e9

    @property
    def acked(self) -> int:
        return int(self.result["acked"])

    @property
    def msgs_per_s(self) -> float:
        return self.acked / self.seconds if self.seconds > 0 else 0.0


def header(topic: str, messages: int, size: int, properties: Mapping[str, str],
           ids: bool = False) -> bytes:
    """The header frame of a generated run (`properties`: Kafka-named settings,
    bootstrap.servers included)."""
    keys = {"kbatch.generate.messages": str(messages), "kbatch.generate.size": str(size),
            **({"kbatch.generate.ids": "true"} if ids else {})}
    return protocol.header([topic], {**keys, **properties}, deliveries=False)


def generate(client: str, topic: str, messages: int, size: int,
             properties: Mapping[str, str], ids: bool = False,
             timeout_s: float | None = None,
             progress: Callable[[str], None] | None = None) -> Generated:
    """Run `client`'s producer on `messages` generated values of `size` bytes to `topic`
    and return its result (a refused setting or generate key, checked by the driver:
    ConfigError; no result: BrokerError)."""
    driver = prepare(client, progress)
    with tempfile.TemporaryFile() as stderr:
        proc = subprocess.run(
            driver.command(), input=header(topic, messages, size, properties, ids)
            + protocol.END, stdout=subprocess.PIPE, stderr=stderr, timeout=timeout_s,
            check=False)
        stderr.seek(0)
        errors = stderr.read().decode(errors="replace").strip()
    lines = [protocol.parse_line(line, "kbatch's Go client driver")
             for line in proc.stdout.splitlines() if line.strip()]
    for item in lines:
        if item["type"] == "config_error":
            raise ConfigError(f"{client} refused a setting: {item['message']}")
    results = [item for item in lines if item["type"] == "result"]
    if proc.returncode != 0 or not results:
        tail = "\n".join(errors.splitlines()[-8:])
        raise BrokerError(f"kbatch's Go client driver ({client}, generating) exited "
                          f"{proc.returncode} without a result:\n{tail}")
    return Generated(results[-1])
