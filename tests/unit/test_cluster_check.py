"""KIP-1242's ApiVersions v5 against a broker that closes the connection on it (issue 44:
why kafka-clients 4.4.0 timed out against the embedded Tansu broker)."""

from __future__ import annotations

import socket
import struct
import threading
import zipfile
from pathlib import Path

from producer_core.engine.drivers.kafka_java import cluster_check

SCHEMA = """// comment
{
  "apiKey": 18,
  // Version 5 introduces ClusterId and NodeId checking (KIP-1242).
  "validVersions": "0-%s",
  "flexibleVersions": "3+"
}
"""


def test_the_request_is_laid_out_as_kafka_clients_4_4_sends_it() -> None:
    frame = cluster_check.api_versions_v5("tansu_cluster", 111, correlation_id=4)
    size, api_key, version, correlation = struct.unpack(">ihhi", frame[:12])
    assert (size, api_key, version, correlation) == (len(frame) - 4, 18, 5, 4)
    body = frame[12 + 2 + len(cluster_check.CLIENT_ID) + 1:]  # client id, header tags
    # software name, software version, then ClusterId as a plain compact string (len+1)
    assert body.startswith(b"\x07kbatch\x020\x0etansu_cluster")
    assert body.endswith(struct.pack(">i", 111) + b"\0")
    null = cluster_check.api_versions_v5(None, -1)
    assert null.endswith(b"\x00" + struct.pack(">i", -1) + b"\0")


def _jar(tmp_path: Path, top: str) -> Path:
    jar = tmp_path / f"kafka-clients-{top}.jar"
    with zipfile.ZipFile(jar, "w") as archive:
        archive.writestr("common/message/ApiVersionsRequest.json", SCHEMA % top)
    return jar


def test_which_releases_send_v5(tmp_path: Path) -> None:
    assert cluster_check.sends_v5(_jar(tmp_path, "5"))
    assert not cluster_check.sends_v5(_jar(tmp_path, "4"))
    assert not cluster_check.sends_v5(None)
    assert not cluster_check.sends_v5(tmp_path / "missing.jar")


def _server(answer: bool) -> tuple[str, threading.Thread]:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        conn, _ = listener.accept()
        with conn, listener:
            conn.recv(4096)
            if answer:
                conn.sendall(struct.pack(">ii", 4, 1))
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return f"127.0.0.1:{port}", thread


def test_the_probe_tells_a_closed_connection_from_an_answer() -> None:
    for answer in (True, False):
        bootstrap, thread = _server(answer)
        assert cluster_check.probe(bootstrap) is answer
        thread.join(5)


def test_the_probe_cannot_ask_a_port_nobody_listens_on() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
    assert cluster_check.probe(f"127.0.0.1:{port}", timeout_s=1.0) is None
