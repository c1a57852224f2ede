"""A run of kbatch's workload through any driver speaking the client-driver pipe protocol.

The pipe run was written for the Java driver (`kafka_java.run.KafkaJavaRun`: the
generator streaming 'M' frames at each message's intended time, the ping clock offset,
the reader thread, the stop grace, the settling of outcomes); a driver of the protocol
needs nothing else, so `PipeRun` takes all of it and changes only what names the Java
client: who the driver is in messages, the properties it is sent, and its results
section. (The Java run stays as it is while issue 42 changes it; it can later be moved
onto this class.)
"""

from __future__ import annotations

from typing import IO, Any

from producer_core.drivers.client_pipe import protocol
from producer_core.drivers.kafka_java.run import KafkaJavaRun
from producer_core.drivers.run_checks import run_warnings
from producer_core.drivers.run_types import Delivery
from producer_core.errors import BrokerError, ConfigError
from producer_core.results.histogram import LatencyHistogram
from producer_core.results.metrics import ClientCounts, RequestRecord, Results, Section
from producer_core.security import redact, scrub

HELLO_TIMEOUT_S = 60.0


class PipeRun(KafkaJavaRun):
    """One run of one workload through a pipe-protocol driver. Subclasses set `mode`,
    `who` (the driver, as messages name it), `section` (the results key of the client's
    own figures) and `properties` (the header's client settings)."""

    mode = "client"
    who = "kbatch's client driver"
    section = "client"
    request_reason = "client"

    def _read(self, stdout: IO[bytes]) -> None:
        """Reader thread: every line the driver writes, until it closes stdout."""
        try:
            for line in stdout:
                item = protocol.parse_line(line, self.who)
                kind = item["type"]
                if kind == "request":
                    self._requests.append(item)
                elif kind == "delivery":
                    if self.deliveries is not None:
                        spec = self.specs[item["topic"]]
                        self.deliveries.append(Delivery(spec.name, item["partition"],
                                                        item["offset"], [item["id"]]))
                elif kind == "progress":
                    self._progress = item
                elif kind == "result":
                    self._result = item
                elif kind == "config_error":
                    self._config_error = item.get("message") or "rejected"
                else:
                    self._lines.put(item)
        except BrokerError as exc:
            self._lines.put({"type": "protocol_error", "message": str(exc)})
        finally:
            self._done.set()
            self._lines.put({"type": "closed"})

    def _next(self, kind: str, timeout: float) -> dict[str, Any]:
        try:
            return super()._next(kind, timeout)
        except BrokerError as exc:
            raise BrokerError(str(exc).replace("kbatch's Java driver", self.who)) from None

    def _handshake(self) -> None:
        hello = self._next("hello", HELLO_TIMEOUT_S)
        if hello.get("protocol") != protocol.PROTOCOL_VERSION:
            raise BrokerError(f"{self.who} speaks protocol {hello.get('protocol')}, kbatch "
                              f"{protocol.PROTOCOL_VERSION}; delete its cached build.")
        self._lines.put(hello)  # the Java run's handshake reads it again
        super()._handshake()

    def _driver_died(self, message: str | None = None) -> Exception:
        self._done.wait(2.0)  # let the reader take the driver's last lines (config_error)
        if self._config_error is not None:
            refusal = scrub(self._config_error, self.properties)
            return ConfigError(f"{self.mode} refused the settings {redact(self.properties)}: "
                               f"{refusal}")
        tail = ""
        if self._stderr is not None:
            self._stderr.seek(0)
            tail = "\n".join(self._stderr.read().decode(errors="replace").strip()
                             .splitlines()[-15:])
        return BrokerError(f"{self.who} stopped unexpectedly"
                           f"{': ' + message if message else ''}. It said:\n{tail or '-'}")

    def client_section(self, result: dict[str, Any]) -> dict[str, Any]:
        """The client's own figures in the results (its section)."""
        return {
            "client_version": self.client_version,
            "protocol": protocol.PROTOCOL_VERSION,
            "properties": redact(self.properties),
            "request_counting": result.get("interception"),
            "produce_requests_by_broker": result.get("requests_by_node", {}),
            "producer_metrics": result.get("producer_metrics", {}),
            "clock_offset_uncertainty_us": round(self.clock_uncertainty_us, 1),
        }

    def extra_warnings(self, result: dict[str, Any]) -> list[str]:
        """What this client's results must say beyond the common warnings."""
        return []

    def _results(self, end: float) -> Results:
        result = self._result
        assert result is not None
        m = self.metrics
        self._settle(result)
        for index, spec in enumerate(self.specs):
            histogram = LatencyHistogram.decode(result["latency_us"][index])
            m.topics[spec.name].latency.merge(histogram)
            m.latency.merge(histogram)
        m.rtt.merge(LatencyHistogram.decode(result["rtt_us"]))
        warnings = run_warnings(m, self.workload, "the client's full buffer")
        start_ns = round(self.start * 1e9) + self.offset_ns
        counted = all(r["partitions"] >= 0 for r in self._requests)
        for r in self._requests:
            for name, (records, size) in r.get("topics", {}).items():
                topic = m.topics.get(name)
                if topic is not None:  # a request carrying several topics counts for each
                    topic.requests += 1
                    topic.records_sent += records
                    topic.bytes_sent += size
            m.requests_by_broker[r["broker"]] += 1
            m.records_sent += r["records"]
            m.bytes_sent += r["bytes"]
            if counted:
                m.requests.append(RequestRecord(
                    send_time_s=(r["ns"] - start_ns) / 1e9, broker=r["broker"],
                    partitions=r["partitions"], records=r["records"], bytes=r["bytes"],
                    reason=self.request_reason, linger_ms=-1.0, attempt=1))
        if not counted:
            m.client_counts = ClientCounts(requests=len(self._requests), batches=0)
            warnings.append("The driver could not read what some Produce requests carried; "
                            "partitions and bytes per request show only their means.")
        m.idempotence = self._idempotence(result.get("idempotence"), warnings)
        warnings += self.extra_warnings(result)
        return Results.of_run(
            self.mode, self.workload,
            {k: self.settings[k] for k in self.properties if k in self.settings.values},
            self.bootstrap, m, start=self.start, end=end, intended=self._intended,
            warnings=warnings, client=Section(self.section, self.client_section(result)),
        )
