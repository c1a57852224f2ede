"""A bare client of the client-driver pipe protocol, for the conformance test: it starts a
driver, speaks the protocol's frames directly (no kbatch run around it) and collects every
line the driver writes, so the test judges the driver alone."""

from __future__ import annotations

import json
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from producer_core.engine.drivers.client_pipe import protocol

DRIVERS = ("kafka-java", "franz-go", "sarama", "kafka-go")
"""Every driver of the protocol, by mode."""


def driver_command(mode: str) -> list[str]:
    """How to start `mode`'s driver (built or compiled on first use)."""
    if mode == "kafka-java":
        from producer_core.engine.drivers.kafka_java import driver

        return driver.prepare(progress=lambda _: None).command()
    from producer_core.engine.drivers.go_clients import driver as go_driver

    return go_driver.prepare(mode, progress=lambda _: None).command()


def base_settings(mode: str, bootstrap: str) -> dict[str, str]:
    """Settings every driver takes: acknowledged by all replicas."""
    return {"bootstrap.servers": bootstrap, "acks": "all"}


@dataclass
class PipeSession:
    """One driver process and the lines it wrote."""

    proc: subprocess.Popen[bytes]
    lines: list[dict[str, Any]] = field(default_factory=list)
    stderr: Any = None
    reader: threading.Thread | None = None

    @classmethod
    def start(cls, mode: str) -> PipeSession:
        stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed in finish
        proc = subprocess.Popen(driver_command(mode), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=stderr)
        session = cls(proc, stderr=stderr)
        session.reader = threading.Thread(target=session._read, daemon=True)
        session.reader.start()
        return session

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(protocol.parse_line(line))

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [item for item in list(self.lines) if item["type"] == kind]

    def wait_for(self, kind: str, count: int = 1, timeout: float = 60.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while len(self.of(kind)) < count:
            if time.monotonic() > deadline or (self.proc.poll() is not None
                                               and not self.reader.is_alive()):  # type: ignore[union-attr]
                raise AssertionError(f"no {kind} line from the driver: {self.lines[-5:]}, "
                                     f"stderr: {self.stderr_text()[-2000:]}")
            time.sleep(0.01)
        return self.of(kind)

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def header(self, topics: list[str], settings: dict[str, str]) -> None:
        self.write(protocol.header(topics, settings, deliveries=True, progress_ms=200))

    def send(self, count: int, partitions: int, first_id: int = 0, record: bool = True) -> None:
        """`count` messages, round-robin over `partitions`, each due now (driver clock
        approximated by kbatch's: latency figures are not judged here)."""
        headers = protocol.encode_headers([("h", b"v")])
        frames = [protocol.message(0, i % partitions, time.monotonic_ns(), record,
                                   first_id + i, int(time.time() * 1000), b"k%d" % i,
                                   b"x" * 100, headers)
                  for i in range(count)]
        self.write(b"".join(frames))

    def end(self, timeout: float = 120.0) -> int:
        """'E', then the driver's exit code once it has reported."""
        self.write(protocol.END)
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.finish(timeout)

    def stop(self, timeout: float = 60.0) -> int:
        """End of input without 'E': the run was stopped."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.finish(timeout)

    def finish(self, timeout: float) -> int:
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        if self.reader is not None:
            self.reader.join(10)
        return code

    def stderr_text(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.stderr.close()


def as_json(item: dict[str, Any]) -> str:
    return json.dumps(item, sort_keys=True)[:300]
