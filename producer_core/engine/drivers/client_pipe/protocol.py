"""The client-driver pipe protocol, version 1: one definition for every driver.

The frames are the Java driver's (`producer_core.engine.drivers.kafka_java.protocol`, where the
byte layout is written and tested; it stays there so the Java driver's module is
unchanged); this module names the protocol's parts for every other driver and reads the
lines any driver writes back. The full description, with each line's fields, is
docs/architecture/client-drivers.md.
"""

from __future__ import annotations

import json
from typing import Any

from producer_core.engine.drivers.kafka_java.protocol import (
    END,
    PING,
    PROTOCOL_VERSION,
    encode_headers,
    header,
    message,
)
from producer_core.errors import BrokerError

__all__ = ["END", "LINE_TYPES", "PING", "PROTOCOL_VERSION", "RESULT_FIELDS",
           "encode_headers", "header", "message", "parse_line"]

LINE_TYPES = frozenset({"hello", "pong", "progress", "request", "delivery", "config_error",
                        "result", "acks0_answered", "clock", "drain_order", "appends",
                        "node_busy", "response", "flush"})
"""The line types a driver may write (acks0_answered and the trace lines from clock on:
the Java driver only)."""

RESULT_FIELDS = ("acked", "failed", "unacked", "unknown", "submitted", "requests",
                 "last_ack_ns", "interception", "idempotence", "failed_reasons",
                 "unknown_reasons", "requests_by_node", "topic_acked", "topic_failed",
                 "topic_unacked", "topic_unknown", "latency_us", "rtt_us")
"""The fields every driver's result line carries (the conformance test checks them)."""


def parse_line(line: bytes, who: str = "a client driver") -> dict[str, Any]:
    """One line of a driver's output, checked to be a typed JSON object."""
    try:
        item = json.loads(line)
    except ValueError:
        item = None
    if not isinstance(item, dict) or "type" not in item:
        raise BrokerError(f"{who} wrote an unexpected line: {line[:200]!r}")
    return item
