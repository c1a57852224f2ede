"""A fake Prometheus endpoint on 127.0.0.1 for tests of metrics scraping: it answers by
path (``/ok``, ``/drip`` a byte at a time, ``/endless`` a body that never ends,
``/silent`` never answers, ``/cpu`` a CPU counter that each scrape takes from a list) and
records the request lines and headers it got. Started and stopped by the test."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

OK_TEXT = ("# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 1.5\n"
           'kafka_network_requestmetrics_requests_total{request="Produce"} 10\n')


class FakeMetrics(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.seen: list[tuple[str, dict[str, str]]] = []
        self.cpu: list[float] = []
        self.closing = threading.Event()

    def url(self, path: str, auth: str = "") -> str:
        return f"http://{auth}127.0.0.1:{self.server_address[1]}{path}"


class _Handler(BaseHTTPRequestHandler):
    server: FakeMetrics

    def log_message(self, *args: object) -> None:  # quiet
        pass

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.server.seen.append((self.path, dict(self.headers)))
        path = self.path.split("?")[0]
        if path == "/silent":
            self.server.closing.wait(30)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        try:
            if path == "/drip":
                for _ in range(300):
                    if self.server.closing.is_set():
                        return
                    self.wfile.write(b"#")
                    self.wfile.flush()
                    time.sleep(0.2)
            elif path == "/endless":
                line = b"# " + b"x" * 1000 + b"\n"
                while not self.server.closing.is_set():
                    self.wfile.write(line * 64)
            elif path == "/cpu":
                value = self.server.cpu.pop(0) if len(self.server.cpu) > 1 else \
                    self.server.cpu[0]
                self.wfile.write(f"process_cpu_seconds_total {value}\n".encode())
            else:
                self.wfile.write(OK_TEXT.encode())
        except OSError:
            pass


@contextmanager
def fake_metrics() -> Iterator[FakeMetrics]:
    server = FakeMetrics()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.closing.set()
        server.shutdown()
        server.server_close()
