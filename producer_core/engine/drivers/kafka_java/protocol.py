"""The pipe protocol between kbatch and its Java driver, version 1 (docs/architecture/index.md).

kbatch -> driver, on the driver's stdin, big-endian (Java's DataInputStream):
  header   int32 length, then UTF-8 text in java.util.Properties form: ``kbatch.protocol``,
           ``kbatch.topics`` (names, comma-separated, index order), ``kbatch.deliveries``
           (true: report every acknowledged record), ``kbatch.progress.ms``,
           ``kbatch.completions`` (true: a flushed ``done`` line per completed message, which
           a closed loop's senders wait for),
           ``kbatch.intercept`` (default true; false leaves the Sender's KafkaClient
           unwrapped, for diagnosis: requests are then not counted), ``kbatch.trace``
           (default false; true adds the trace lines below); every other key is a
           KafkaProducer property.
  'P'      ping: the driver answers with its System.nanoTime() (clock offset estimate).
  'M'      one message: uint16 topic index, int32 partition (-1: the client's partitioner),
           int64 intended send time in the driver's nanoTime, int8 record latency (0 while
           warming up), int64 message id, int64 timestamp ms, int32 key length (-1: none)
           + key, int32 value length + value, uint16 header count + (uint16 name length +
           UTF-8 name, int32 value length + value) each.
  'E'      end of messages: the driver flushes, reports its result and exits 0. End of
           input without 'E' means the run was stopped: the driver drops what is unsent
           and exits 3.
driver -> kbatch, on stdout: one JSON object per line, ``type`` one of hello (first,
with ``protocol`` and ``client_version``), client_config (the producer's effective
ProducerConfig values, defaults included), pong, progress, request (one per Produce
request), delivery, done, config_error, result (last; histograms as base64 HdrHistogram V2).
With ``kbatch.trace=true`` (`producer_core.results.client_trace`): clock (where the
producer's millisecond clock ticks on nanoTime), drain_order (each node's partitions in
the order the Sender's drain walks them), appends (each send()'s start, length and wait
for buffer.memory, in chunks, in message order), node_busy (node, pass: the Sender could
not send to a ready node in that pass), request lines gain corr, created_ms, ready_ns, pass,
pass_ns (when the Sender's last poll returned) and parts ([topic index, partition, records,
retry] each), response (corr, ns) and flush (ns).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from typing import Any

from producer_core.errors import BrokerError

PROTOCOL_VERSION = 1
PING = b"P"
END = b"E"
_MESSAGE = struct.Struct(">cHiqbqq")


def _escape(text: str) -> str:
    out = []
    for char in text:
        if char in "\\=:#!":
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\r":
            out.append("\\r")
        elif char == "\t":
            out.append("\\t")
        elif ord(char) < 0x20 or ord(char) > 0x7E:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    text = "".join(out)
    return "\\ " + text[1:] if text.startswith(" ") else text


def header(topics: list[str], properties: Mapping[str, str], deliveries: bool,
           progress_ms: int = 1000, trace: bool = False) -> bytes:
    """The length-prefixed header frame; `trace` asks for the trace lines."""
    items = {
        "kbatch.protocol": str(PROTOCOL_VERSION),
        "kbatch.topics": ",".join(topics),
        "kbatch.deliveries": "true" if deliveries else "false",
        "kbatch.progress.ms": str(progress_ms),
        **({"kbatch.trace": "true"} if trace else {}),
        **properties,
    }
    text = "".join(f"{_escape(k)}={_escape(v)}\n" for k, v in items.items()).encode()
    return struct.pack(">i", len(text)) + text


def encode_headers(headers: list[tuple[str, bytes]] | None) -> bytes:
    """A message's record headers (the same for every message of a generator pass)."""
    parts = [struct.pack(">H", len(headers or ()))]
    for name, value in headers or ():
        raw = name.encode()
        parts.append(struct.pack(">H", len(raw)) + raw + struct.pack(">i", len(value)) + value)
    return b"".join(parts)


def message(topic: int, partition: int, intended_ns: int, record_latency: bool,
            message_id: int, timestamp_ms: int, key: bytes | None, value: bytes,
            headers: bytes) -> bytes:
    """One 'M' frame; `headers` comes from `encode_headers`."""
    key_part = struct.pack(">i", -1) if key is None else struct.pack(">i", len(key)) + key
    return b"".join((
        _MESSAGE.pack(b"M", topic, partition, intended_ns, 1 if record_latency else 0,
                      message_id, timestamp_ms),
        key_part, struct.pack(">i", len(value)), value, headers,
    ))


def parse_line(line: bytes) -> dict[str, Any]:
    """One line of the driver's output, checked to be a typed JSON object."""
    try:
        item = json.loads(line)
    except ValueError:
        item = None
    if not isinstance(item, dict) or "type" not in item:
        raise BrokerError(f"kbatch's Java driver wrote an unexpected line: {line[:200]!r}")
    return item
