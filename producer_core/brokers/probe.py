"""Is a broker up? One Kafka Metadata request over a plain blocking socket.

A sync socket (not asyncio), so a broker can be started and waited for from inside a
running event loop; aiokafka's structs do the encoding, so the probe stays wire-correct.
"""

from __future__ import annotations

import io
import socket
import struct


def metadata_brokers(host: str, port: int, timeout_s: float, version: int) -> int | None:
    """How many brokers a Metadata answer (of `version`) from host:port lists; None when
    nothing valid answers (refused, reset, or a half-started broker's undecodable bytes).

    Kafka 4 removed Metadata versions 0-3 (KIP-896), so Apache Kafka is asked with 4.
    """
    from aiokafka.protocol.metadata import MetadataRequest

    request = MetadataRequest([]).prepare({MetadataRequest.API_KEY: (version, version)})
    header = request.build_request_header(correlation_id=1, client_id="kbatch-probe")
    payload = header.encode() + request.encode()
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            sock.settimeout(timeout_s)
            sock.sendall(struct.pack(">i", len(payload)) + payload)
            (size,) = struct.unpack(">i", recv_exact(sock, 4))
            body = io.BytesIO(recv_exact(sock, size))
        if request.parse_response_header(body).correlation_id != 1:
            return None
        return len(request.RESPONSE_TYPE.decode(body).to_object()["brokers"])
    except Exception:  # noqa: BLE001 - any failure means "not serving yet"
        return None


def recv_exact(sock: socket.socket, n: int) -> bytes:
    """Exactly `n` bytes from a blocking socket, or ConnectionError if it closes first."""
    chunks = bytearray()
    while len(chunks) < n:
        chunk = sock.recv(n - len(chunks))
        if not chunk:
            raise ConnectionError("connection closed mid-response")
        chunks += chunk
    return bytes(chunks)


def partition_leaders(host: str, port: int, timeout_s: float = 5.0
                      ) -> dict[str, dict[int, int]] | None:
    """topic -> partition -> leader node id, for every topic host:port knows (Metadata v4
    with a null topic list); None when nothing valid answers."""
    from aiokafka.protocol.metadata import MetadataRequest

    request = MetadataRequest(None).prepare({MetadataRequest.API_KEY: (4, 4)})
    header = request.build_request_header(correlation_id=2, client_id="kbatch-probe")
    payload = header.encode() + request.encode()
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            sock.settimeout(timeout_s)
            sock.sendall(struct.pack(">i", len(payload)) + payload)
            (size,) = struct.unpack(">i", recv_exact(sock, 4))
            body = io.BytesIO(recv_exact(sock, size))
        if request.parse_response_header(body).correlation_id != 2:
            return None
        topics = request.RESPONSE_TYPE.decode(body).to_object()["topics"]
    except Exception:  # noqa: BLE001 - any failure means "no answer"
        return None
    return {t["topic"]: {p["partition"]: p["leader"] for p in t["partitions"]}
            for t in topics if t["error_code"] == 0}
