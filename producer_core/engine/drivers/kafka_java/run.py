"""Mode `kafka-java`: the real Java producer on kbatch's workload, measured as kbatch does.

The run is the shared pipe run (`client_pipe.run.PipeRun`): kbatch's own `Generator`
streams each message to the Java driver at its intended time, and the driver hands it to
`KafkaProducer.send`, so Java and the emulation get identical messages, in identical
partitions, at identical times. A full `buffer.memory` blocks `send()` in Java, which
stops the driver reading, which fills the pipe and blocks the generator: the same
back-pressure as Java's `max.block.ms`. What is the Java client's alone is here: its
properties, the probe of a broker that a release's ApiVersions v5 upsets
(`adapt_to_broker`), the trace lines of a traced run, the acks=0 answer check, the
settings a release reports it used, and its results section.

Latency is taken in Java's send callback from the message's intended time into one
HdrHistogram per topic (1 µs .. 1 h, 3 digits, as `histogram.LatencyHistogram`), shipped
back base64-encoded and merged exactly. Requests: the driver wraps the Sender's
`KafkaClient` and reports every Produce request it writes (broker, partitions, records,
bytes) and the round trip of each; the client's own `producer-node-metrics` request-total
per node (every request type) is kept in the results JSON beside them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from producer_core.client_properties import java_producer_passthrough
from producer_core.engine.drivers.client_pipe.run import NO_CALLBACK, PipeRun
from producer_core.engine.drivers.client_thread import run_in_thread
from producer_core.engine.drivers.kafka_java import cluster_check, protocol
from producer_core.engine.drivers.kafka_java.driver import Driver, build_source, prepare
from producer_core.engine.drivers.run_checks import batch_pool_advice, check_message_fits
from producer_core.engine.drivers.run_types import Delivery, Progress, RunCall, run_driver
from producer_core.engine.modes.kafka_java_settings import JAVA_NAMES, java_properties
from producer_core.engine.modes.versions import parse_label
from producer_core.errors import BrokerError
from producer_core.results.client_trace import ClientTrace
from producer_core.results.metrics import Results
from producer_core.security import redact
from producer_core.settings import ProducerSettings
from producer_core.workload.workload import Workload

__all__ = ["NO_CALLBACK", "KafkaJavaRun", "run_async", "run_traced"]

REQUEST_REASON = "java-sender"
TRACE_LINES = frozenset(("appends", "response", "clock", "flush", "drain_order",
                         "node_busy"))
"""The driver's lines that only a traced run (`kbatch.trace=true`) gets."""


class KafkaJavaRun(PipeRun):
    """One run of one workload through the Java driver."""

    who = "kbatch's Java driver"
    client_name = "The Java producer"
    section = "kafka_java"
    request_reason = REQUEST_REASON
    full_buffer = "a full buffer.memory"

    def __init__(self, workload: Workload, settings: ProducerSettings, bootstrap: str,
                 driver: Driver, on_progress: Callable[[Progress], None] | None = None,
                 deliveries: list[Delivery] | None = None, mode: str = "kafka-java",
                 trace: bool = False) -> None:
        super().__init__(workload, settings, bootstrap, driver, on_progress, deliveries, mode)
        self.driver: Driver = driver
        self.version = parse_label(mode).version
        # a release asked for by name runs at its own defaults (as its users get it): only
        # what was set explicitly goes to it; the pinned client gets every kbatch value,
        # so it runs with exactly the emulation's (mode java) settings
        values = dict(settings.values) if self.version is None else {
            k: v for k, v in settings.values.items() if k in settings.explicit}
        self.client_config: dict[str, Any] = {}
        self.broker_warnings: list[str] = []
        self.properties = {**java_properties(values),
                           **java_producer_passthrough(settings.foreign_properties),
                           **settings.security.java_properties(),
                           "bootstrap.servers": bootstrap}
        self.trace: ClientTrace | None = None
        """With `trace`: what the Java producer did, message by message and request by
        request (`ClientTrace`), for a trace replay of an emulation."""
        if trace:
            self.traced = True
            self.trace = ClientTrace("kafka-java", "", [s.name for s in self.specs],
                                     [s.partitions for s in self.specs], 0, 0,
                                     settings={k: str(v) for k, v in self.properties.items()
                                               if k != "bootstrap.servers"})
        self._acks0_answered: str | None = None

    def adapt_to_broker(self) -> None:
        """Before the run: a release that sends ApiVersions v5 (KIP-1242) against a broker
        that closes the connection on it (`cluster_check`) gets the check off, with a
        warning, or, where the user turned it on, a clear error instead of a timeout."""
        if not cluster_check.sends_v5(self.driver.jar):
            return
        protocol_name = str(self.properties.get("security.protocol", "PLAINTEXT")).upper()
        if protocol_name != "PLAINTEXT":
            return  # the probe speaks plaintext only
        if cluster_check.probe(self.bootstrap) is not False:
            return
        given = self.properties.get(cluster_check.PROPERTY)  # -X passes it on
        if given is not None and given.strip().lower() == "true":
            raise BrokerError(
                f"kafka-clients {self.version or 'pinned'} with "
                f"{cluster_check.PROPERTY}=true cannot produce to this broker: it closes "
                "the connection on the client's ApiVersions v5 request (KIP-1242) instead "
                "of answering UNSUPPORTED_VERSION, so the client would reconnect until "
                "every message timed out. Leave the property out (kbatch then turns the "
                "check off) or use --broker kafka.")
        if given is None:
            self.properties[cluster_check.PROPERTY] = "false"
            self.broker_warnings.append(cluster_check.warning(self.version or "this"))

    # ------------------------------------------------------------- the pipe's Java lines
    def on_line(self, item: dict[str, Any]) -> bool:
        kind = item["type"]
        if self.trace is not None and kind in TRACE_LINES:
            self._trace_line(self.trace, item)
        elif kind == "client_config":
            self.client_config = dict(item.get("values") or {})
        elif kind == "acks0_answered":
            self._acks0_answered = str(item.get("message"))
        else:
            return False
        return True

    def on_request(self, item: dict[str, Any]) -> None:
        if self.trace is not None:
            self.trace.add_request(item)

    def on_hello(self, hello: dict[str, Any]) -> None:
        if self.trace is not None:
            self.trace.client_version = self.client_version

    def sent_messages(self, slots: list[int], keys: Sequence[bytes | None],
                      values: list[bytes], intended: list[float],
                      headers: list[tuple[str, bytes]] | None, timestamp_ms: int) -> None:
        if self.trace is not None:
            offset = self.offset_ns
            self.trace.add_messages(slots, list(keys), values,
                                    [round(when * 1e9) + offset for when in intended],
                                    headers, timestamp_ms)

    @staticmethod
    def _trace_line(trace: ClientTrace, item: dict[str, Any]) -> None:
        kind = item["type"]
        if kind == "appends":
            trace.add_appends(item["first"], item["start_ns"], item["took_ns"],
                              item.get("waited_ns"), item.get("start_ms"))
        elif kind == "response":
            trace.responses[item["corr"]] = item["ns"]
        elif kind == "clock":
            trace.clock_ms, trace.clock_ns = item["ms"], item["ns"]
        elif kind == "flush":
            trace.flush_ns = item["ns"]
        elif kind == "drain_order":
            trace.add_drain_order(item.get("nodes", {}))
        elif kind == "node_busy":
            trace.busy.setdefault(item["pass"], []).append(item["node"])

    def check_answers(self) -> None:
        """Stop at once if the broker answered acks=0 Produce requests (see the driver's
        `answeredAcksZero`): the Java producer would wait delivery.timeout.ms for nothing."""
        if self._acks0_answered is None:
            return
        raise BrokerError(
            "The broker answered Produce requests sent with acks=0, which get no answer in "
            "Kafka's protocol; the Java producer cannot take such an answer (it loses the "
            "completions of the requests it had just written, and its flush() would wait "
            "delivery.timeout.ms for them), so kbatch stopped the run. The embedded Tansu "
            "broker does this. For mode kafka-java use -X acks=1 or acks=all, or --broker "
            f"kafka (Apache Kafka) for acks=0. The Java client said: {self._acks0_answered}")

    # -------------------------------------------------------------- results
    def settings_used(self) -> dict[str, Any]:
        """The run's settings: what kbatch passed, or, for a release run at its defaults
        (``kafka-java@VERSION``), the values the client reports it used."""
        passed = super().settings_used()
        if self.version is None:
            return passed
        used = {k: self.client_config[k] for k in JAVA_NAMES if k in self.client_config}
        if str(used.get("acks")) == "-1":  # as kbatch names it
            used["acks"] = "all"
        return {**used, **passed}

    def before_results(self, result: dict[str, Any]) -> None:
        # time send() spent blocked on a full buffer.memory, by Java's own count
        producer_metrics = result.get("producer_metrics", {})
        self.metrics.blocked_s = producer_metrics.get("bufferpool-wait-time-ns-total",
                                                      0.0) / 1e9

    def run_notes(self) -> list[str]:
        # as every driver: "not used by this mode"; and, blocked, what Java's BufferPool did
        advice = batch_pool_advice(self.metrics, self.workload, self.settings["buffer.memory"],
                                   self.settings.batch_size)
        return [*([advice] if advice else []), *self.broker_warnings, *self.settings.warnings]

    def extra_warnings(self, result: dict[str, Any]) -> list[str]:
        if result.get("interception") != "sender-client":
            return [f"Produce requests could not be counted in the client "
                    f"({result.get('interception')}): requests_sent is 0; see "
                    "kafka_java.node_request_total."]
        return []

    def client_section(self, result: dict[str, Any]) -> dict[str, Any]:
        return {
            "client_version": self.client_version,
            "client_config": self.client_config,
            **({"client_build": build} if (build := build_source(self.version)) else {}),
            "client_defaults": sorted(k for k in self.client_config
                                      if k not in self.properties),
            "protocol": protocol.PROTOCOL_VERSION,
            "properties": redact(self.properties),
            "request_counting": result.get("interception"),
            "produce_requests_by_broker": result.get("requests_by_node", {}),
            "node_request_total": result.get("node_request_total", {}),
            "producer_metrics": result.get("producer_metrics", {}),
            "clock_offset_uncertainty_us": round(self.clock_uncertainty_us, 1),
        }


@run_driver
async def run_async(call: RunCall) -> Results:
    """Run one workload through the Java producer; the same call and Results as the engine's.

    `stop`, when set, ends the run early (as cancelling it does)."""
    check_message_fits(call.workload.topic_specs(), call.settings.max_request_size,
                       "the Java producer's max.request.size")
    driver = await asyncio.to_thread(prepare, None, parse_label(call.mode).version)
    runner = KafkaJavaRun(call.workload, call.settings, call.bootstrap, driver,
                          call.on_progress, call.deliveries, call.mode)
    await asyncio.to_thread(runner.adapt_to_broker)
    return await run_in_thread(runner, call, abort=runner.abort)


async def run_traced(workload: Workload, settings: ProducerSettings, bootstrap: str,
                     mode: str = "kafka-java") -> tuple[Results, ClientTrace]:
    """One kafka-java run (`mode` may name a release: `kafka-java@3.9.1`) that also
    records what the Java producer did, message by message and request by request
    (`ClientTrace`), for a trace replay of an emulation."""
    check_message_fits(workload.topic_specs(), settings.max_request_size,
                       "the Java producer's max.request.size")
    driver = await asyncio.to_thread(prepare, None, parse_label(mode).version)
    runner = KafkaJavaRun(workload, settings, bootstrap, driver, mode=mode, trace=True)
    await asyncio.to_thread(runner.adapt_to_broker)
    results = await run_in_thread(runner, RunCall(workload, settings, mode, bootstrap),
                                  abort=runner.abort)
    assert runner.trace is not None
    return results, runner.trace
