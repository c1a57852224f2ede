"""Mode `kafka-java`: the real Java producer on kbatch's workload, measured as kbatch does.

The design choice: kbatch's own `Generator` (the same one `librdkafka_engine` and the
engine use) produces the schedule, ids, keys, values, headers and partitions, and streams
each message to the Java driver over its stdin at the message's intended time, with that
time converted to the driver's clock (`protocol`). The driver hands it to
`KafkaProducer.send`, so Java and the emulation get identical messages, in identical
partitions, at identical times, with no second implementation of the schedule to drift.
A full `buffer.memory` blocks `send()` in Java, which stops the driver reading, which fills
the pipe and blocks the generator: the same back-pressure as Java's `max.block.ms`.

Latency is taken in Java's send callback from the message's intended time into one
HdrHistogram per topic (1 µs .. 1 h, 3 digits, as `histogram.LatencyHistogram`), shipped
back base64-encoded and merged exactly. Requests: the driver wraps the Sender's
`KafkaClient` and reports every Produce request it writes (broker, partitions, records,
bytes) and the round trip of each; the client's own `producer-node-metrics` request-total
per node (every request type) is kept in the results JSON beside them.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from typing import IO, Any

from producer_core.client_properties import java_producer_passthrough
from producer_core.config import ProducerSettings
from producer_core.drivers.client_thread import run_in_thread
from producer_core.drivers.generator import ClientBatching, Generator
from producer_core.drivers.kafka_java import cluster_check, protocol
from producer_core.drivers.kafka_java.driver import Driver, build_source, prepare
from producer_core.drivers.run_checks import check_message_fits, run_warnings
from producer_core.drivers.run_types import (
    PROGRESS_INTERVAL_S,
    START_LEAD_S,
    Delivery,
    Progress,
    RunCall,
    phased_start,
    run_driver,
)
from producer_core.errors import BrokerError, ConfigError
from producer_core.modes.kafka_java_settings import JAVA_NAMES, java_properties
from producer_core.modes.versions import parse_label
from producer_core.results.client_trace import ClientTrace
from producer_core.results.histogram import LatencyHistogram
from producer_core.results.metrics import (
    ClientCounts,
    RequestRecord,
    Results,
    RunMetrics,
    Section,
    TopicMetrics,
)
from producer_core.security import redact, scrub
from producer_core.workload.workload import Workload

HELLO_TIMEOUT_S = 60.0
PINGS = 5
REQUEST_REASON = "java-sender"
MIN_SLEEP_S = 0.00005
"""The generator's shortest sleep between passes. Each message reaches Java at its intended
time (time.sleep waits to tens of microseconds); a 0.5 ms floor here used to deliver
2,000 msg/s in late pairs, which made the Java producer batch more than the same schedule
asks (issue #18)."""
TRACE_LINES = frozenset(("appends", "response", "clock", "flush", "drain_order",
                         "node_busy"))
"""The driver's lines that only a traced run (`kbatch.trace=true`) gets."""
NO_CALLBACK = "no callback before close"
"""The unknown reason of a message the driver took but whose send callback never came."""


STOP_GRACE_S = 10.0
"""After a stop, how long the Java producer may take to settle what it was handed."""


class _PipeSink:
    """Takes the generator's appends and writes them to the driver as 'M' frames."""

    def __init__(self, run: KafkaJavaRun) -> None:
        self.run = run

    def append_many(self, slots: list[int], message_ids: range, keys: list[bytes] | None,
                    values: list[bytes], intended: list[float], now: float,
                    timestamp_ms: int, headers: list[tuple[str, bytes]] | None = None,
                    value_size: int | None = None) -> list[tuple[int, int]]:
        run = self.run
        encoded_headers = protocol.encode_headers(headers)
        frame, offset, warmup = protocol.message, run.offset_ns, run.warmup_until
        targets, topic_index = run.targets, run.topic_index
        key_iter = keys if keys is not None else [None] * len(values)
        frames = []
        for slot, message_id, key, value, when in zip(
                slots, message_ids, key_iter, values, intended, strict=True):
            frames.append(frame(topic_index[slot], targets[slot][1],
                                round(when * 1e9) + offset, when >= warmup, message_id,
                                timestamp_ms, key, value, encoded_headers))
        run.write(b"".join(frames))
        if run.trace is not None:
            run.trace.add_messages(slots, list(key_iter), values,
                                   [round(when * 1e9) + offset for when in intended], headers,
                                   timestamp_ms)
        return []


class KafkaJavaRun:
    """One run of one workload through the Java driver."""

    def __init__(self, workload: Workload, settings: ProducerSettings, bootstrap: str,
                 driver: Driver, on_progress: Callable[[Progress], None] | None = None,
                 deliveries: list[Delivery] | None = None, mode: str = "kafka-java",
                 trace: bool = False) -> None:
        self.mode = mode
        self.version = parse_label(mode).version
        self.workload = workload
        self.settings = settings
        self.bootstrap = bootstrap
        self.driver = driver
        self.on_progress = on_progress
        self.deliveries = deliveries
        self.metrics = RunMetrics()
        self.stop = threading.Event()
        self.clock = time.monotonic
        self.start = 0.0
        self.warmup_until = 0.0
        self.offset_ns = 0
        self.specs = workload.topic_specs()
        layout = workload.slot_layout()
        self.targets = layout.targets()
        self.topic_index = list(layout.topic_index_of)
        self.first_slots = list(layout.first_slots)
        for spec in self.specs:
            self.metrics.topics.setdefault(spec.name, TopicMetrics())
        # a release asked for by name runs at its own defaults (as its users get it): only
        # what was set explicitly goes to it; the pinned client gets every kbatch value,
        # so it runs with exactly the emulation's (mode java) settings
        values = dict(settings.values) if self.version is None else {
            k: v for k, v in settings.values.items() if k in settings.explicit}
        self.client_config: dict[str, Any] = {}
        self.broker_warnings: list[str] = []
        self._completed = 0
        """Messages the driver reported complete ("done": a closed loop's senders wait)."""
        self._completion = threading.Event()
        self.properties = {**java_properties(values),
                           **java_producer_passthrough(settings.foreign_properties),
                           **settings.security.java_properties(),
                           "bootstrap.servers": bootstrap}
        self.trace: ClientTrace | None = None
        """With `trace`: what the Java producer did, message by message and request by
        request (`ClientTrace`), for a trace replay of an emulation."""
        if trace:
            self.trace = ClientTrace("kafka-java", "", [s.name for s in self.specs],
                                     [s.partitions for s in self.specs], 0, 0,
                                     settings={k: str(v) for k, v in self.properties.items()
                                               if k != "bootstrap.servers"})
        self._lines: queue.Queue[dict[str, Any]] = queue.Queue()
        self._requests: list[dict[str, Any]] = []
        self._progress: dict[str, Any] = {}
        self._result: dict[str, Any] | None = None
        self._config_error: str | None = None
        self._acks0_answered: str | None = None
        self._done = threading.Event()
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._intended: int | None = None
        self._last_progress = 0.0

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

    def abort(self) -> None:
        """Stop now (the run was cancelled): kill the driver, which unblocks a write the
        generator may be stuck in while Java's send() waits for buffer.memory."""
        self.stop.set()
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()

    # ------------------------------------------------------------- the pipe
    def write(self, data: bytes) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        try:
            self._proc.stdin.write(data)
        except (BrokenPipeError, ValueError):
            raise self._driver_died() from None

    def _read(self, stdout: IO[bytes]) -> None:
        """Reader thread: every line the driver writes, until it closes stdout."""
        try:
            for line in stdout:
                item = protocol.parse_line(line)
                kind = item["type"]
                trace = self.trace
                if kind == "request":
                    self._requests.append(item)
                    if trace is not None:
                        trace.add_request(item)
                elif trace is not None and kind in TRACE_LINES:
                    self._trace_line(trace, item)
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
                elif kind == "done":
                    self._completed += 1
                    self._completion.set()
                elif kind == "client_config":
                    self.client_config = dict(item.get("values") or {})
                elif kind == "acks0_answered":
                    self._acks0_answered = str(item.get("message"))
                else:
                    self._lines.put(item)
        except BrokerError as exc:
            self._lines.put({"type": "protocol_error", "message": str(exc)})
        finally:
            self._done.set()
            self._lines.put({"type": "closed"})

    @staticmethod
    def _trace_line(trace: ClientTrace, item: dict[str, Any]) -> None:
        kind = item["type"]
        if kind == "appends":
            trace.add_appends(item["first"], item["start_ns"], item["took_ns"],
                              item.get("waited_ns"))
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

    def _next(self, kind: str, timeout: float) -> dict[str, Any]:
        deadline = self.clock() + timeout
        while True:
            try:
                item = self._lines.get(timeout=max(0.0, deadline - self.clock()))
            except queue.Empty:
                raise BrokerError(f"kbatch's Java driver sent no {kind} within "
                                  f"{timeout:.0f} s.") from None
            if item["type"] == kind:
                return item
            if item["type"] in ("closed", "protocol_error"):
                raise self._driver_died(item.get("message"))

    def _check_acks0_answered(self) -> None:
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

    def _driver_died(self, message: str | None = None) -> Exception:
        self._done.wait(2.0)  # let the reader take the driver's last lines (config_error)
        if self._config_error is not None:
            refusal = scrub(self._config_error, self.properties)
            return ConfigError(f"The Java producer refused the settings "
                               f"{redact(self.properties)}: {refusal}")
        tail = ""
        if self._stderr is not None:
            self._stderr.seek(0)
            tail = "\n".join(self._stderr.read().decode(errors="replace").strip()
                             .splitlines()[-15:])
        return BrokerError(f"kbatch's Java driver stopped unexpectedly"
                           f"{': ' + message if message else ''}. It said:\n{tail or '-'}")

    def _handshake(self) -> None:
        hello = self._next("hello", HELLO_TIMEOUT_S)
        if hello.get("protocol") != protocol.PROTOCOL_VERSION:
            raise BrokerError(f"kbatch's Java driver speaks protocol {hello.get('protocol')}, "
                              f"kbatch {protocol.PROTOCOL_VERSION}; delete its cached build.")
        self.client_version = str(hello.get("client_version"))
        if self.trace is not None:
            self.trace.client_version = self.client_version
        closed = {"kbatch.completions": "true"} if self.workload.closed_loop else {}
        self.write(protocol.header([s.name for s in self.specs],
                                   {**self.properties, **closed},
                                   self.deliveries is not None, trace=self.trace is not None))
        best: tuple[int, int] | None = None  # (round trip, offset), the tightest ping wins
        for _ in range(PINGS):
            before = time.monotonic_ns()
            self.write(protocol.PING)
            self._flush()
            pong = self._next("pong", HELLO_TIMEOUT_S)
            after = time.monotonic_ns()
            estimate = (after - before, pong["ns"] - (before + after) // 2)
            best = estimate if best is None or estimate[0] < best[0] else best
        assert best is not None
        self.offset_ns = best[1]
        self.clock_uncertainty_us = best[0] / 2000

    def _flush(self) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        try:
            self._proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            raise self._driver_died() from None

    # ------------------------------------------------------------------ run
    def run(self) -> Results:
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed in _close
        self._proc = subprocess.Popen(self.driver.command(), stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=self._stderr)
        assert self._proc.stdout is not None
        reader = threading.Thread(target=self._read, args=(self._proc.stdout,),
                                  name="kbatch-java-reader", daemon=True)
        reader.start()
        try:
            self._handshake()
            generator = Generator(self.workload, self.first_slots,
                                  # a sink with the accumulator's append_many (duck-typed)
                                  _PipeSink(self),  # type: ignore[arg-type]  # see above
                                  ClientBatching(), self.metrics)
            generator.completions = lambda: self._completed  # the Java producer settles
            # on Java's clock (the wall clock's milliseconds), the phase mode java runs at
            self.start = phased_start(self.clock() + START_LEAD_S, time.time() - self.clock())
            if self.workload.start_at is not None:  # a share of a distributed run
                self.start = self.clock() + max(0.0, self.workload.start_at - time.time())
                time.sleep(max(0.0, self.start - self.clock()))
            self.warmup_until = self.start + self.workload.warmup_s
            self._last_progress = self.start
            generator.begin(self.start)
            self._intended = generator.intended_total()
            self._generate(generator)
            # Stopped (a signal): like the engine, stop generating, give what was handed to
            # the producer a short grace, and report it as a partial run (complete: false).
            stopped = self.stop.is_set()
            self.write(protocol.END)
            self._flush()
            self._proc.stdin.close()  # type: ignore[union-attr]  # started with stdin=PIPE
            deadline = self.clock() + (STOP_GRACE_S if stopped
                                       else self.settings.delivery_timeout_s + 60.0)
            while self._result is None and not self._done.wait(0.2):
                self._check_acks0_answered()
                self._report()
                if self.stop.is_set() and not stopped:
                    stopped = True
                    deadline = min(deadline, self.clock() + STOP_GRACE_S)
                if self.clock() > deadline:
                    break
            if self._result is None:
                if stopped:
                    raise asyncio.CancelledError
                raise self._driver_died("it sent no result")
            if stopped:
                self.metrics.complete = False
            end = self.clock()
            if self._result.get("last_ack_ns"):  # the run ends at its last acknowledgement
                end = min(end, (self._result["last_ack_ns"] - self.offset_ns) / 1e9)
        finally:
            self._close()
        return self._results(end)

    def _close(self) -> None:
        proc = self._proc
        if proc is None:
            return
        with contextlib.suppress(OSError, ValueError):
            proc.stdin.close()  # type: ignore[union-attr]  # started with stdin=PIPE
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if self._stderr is not None:
            self._stderr.close()

    def _generate(self, generator: Generator) -> None:
        """The engine's generator loop; the pipe is flushed after every pass."""
        clock = self.clock
        while not self.stop.is_set():
            now = clock()
            if generator.due(now) > 0:
                generator.generate(now)
                self._flush()
            self._report()
            self._check_acks0_answered()
            if generator.finished(clock()):
                return
            if self._done.is_set():
                raise self._driver_died()
            if generator.unthrottled or generator.due(clock()) > 0:
                continue
            next_due = generator.next_due()
            wait = 0.05 if next_due is None else next_due - clock()
            self._pause(min(max(wait, MIN_SLEEP_S), 0.05))

    def _pause(self, seconds: float) -> None:
        """Sleep until the next message is due; in a closed loop, or until the driver
        reports a completion (a sender is free: its next message goes at once)."""
        if not self.workload.closed_loop:
            time.sleep(seconds)
        elif self._completion.wait(seconds):
            self._completion.clear()

    def _report(self) -> None:
        now = self.clock()
        if self.on_progress is None or now - self._last_progress < PROGRESS_INTERVAL_S:
            return
        self._last_progress = now
        p = self._progress
        self.on_progress(Progress(
            elapsed_s=max(0.0, now - self.start), generated=self.metrics.messages_generated,
            acknowledged=p.get("acked", 0), failed=p.get("failed", 0), in_flight_requests=0,
            requests_sent=p.get("requests", 0), p99_ms=0.0, target_messages=self._intended,
        ))

    # -------------------------------------------------------------- results
    def _settle(self, result: dict[str, Any]) -> None:
        """Each message's outcome as the engine counts them (see the driver's header):
        acknowledged, failed, unknown (may be written) or sent_unacknowledged (acks=0); a
        message generated but never settled by a callback is unknown, not dropped."""
        m = self.metrics
        m.messages_acked = result["acked"]
        m.failed_reasons.update(result["failed_reasons"])
        m.messages_failed = result["failed"]
        m.messages_sent_unacknowledged = result.get("unacked", 0)
        for reason, count in result.get("unknown_reasons", {}).items():
            m.unknown(count, reason)
        zeros = [0] * len(self.specs)
        per_topic = zip(self.specs, result["topic_acked"], result["topic_failed"],
                        result.get("topic_unacked", zeros), result.get("topic_unknown", zeros),
                        strict=True)
        for spec, acked, failed, unacked, unknown in per_topic:
            topic = m.topics[spec.name]
            topic.acknowledged, topic.failed = acked, failed
            topic.sent_unacknowledged, topic.unknown = unacked, unknown
            missing = topic.generated - (acked + failed + unacked + unknown + topic.discarded)
            if missing > 0:
                topic.unknown += missing
                m.unknown(missing, NO_CALLBACK)

    def _settings_used(self) -> dict[str, Any]:
        """The run's settings: what kbatch passed, or, for a release run at its defaults
        (``kafka-java@VERSION``), the values the client reports it used."""
        passed = {k: self.settings[k] for k in self.properties if k in self.settings.values}
        if self.version is None:
            return passed
        used = {k: self.client_config[k] for k in JAVA_NAMES if k in self.client_config}
        if str(used.get("acks")) == "-1":  # as kbatch names it
            used["acks"] = "all"
        return {**used, **passed}

    def _idempotence(self, reported: Any, warnings: list[str]) -> dict[str, Any]:
        """What the Java producer ran with (its TransactionManager), not what was asked:
        `--verify` excuses duplicates and reorders only when idempotence was off."""
        if isinstance(reported, dict) and isinstance(reported.get("enabled"), bool):
            return {k: v for k, v in reported.items()
                    if k in ("enabled", "producer_id", "producer_epoch")}
        configured = str(self.settings["enable.idempotence"]).lower() == "true"
        detail = reported.get("unknown") if isinstance(reported, dict) else "not reported"
        warnings.append(f"The Java producer's idempotence could not be read ({detail}); the "
                        f"results give the setting (enable.idempotence={str(configured).lower()}).")
        return {"enabled": configured}

    def _results(self, end: float) -> Results:
        result = self._result
        assert result is not None
        m = self.metrics
        self._settle(result)
        for index, spec in enumerate(self.specs):
            topic = m.topics[spec.name]
            histogram = LatencyHistogram.decode(result["latency_us"][index])
            topic.latency.merge(histogram)
            m.latency.merge(histogram)
        m.rtt.merge(LatencyHistogram.decode(result["rtt_us"]))
        producer_metrics = result.get("producer_metrics", {})
        # time send() spent blocked on a full buffer.memory, by Java's own count
        m.blocked_s = producer_metrics.get("bufferpool-wait-time-ns-total", 0.0) / 1e9
        warnings = run_warnings(m, self.workload, "a full buffer.memory")
        warnings.extend(self.broker_warnings)
        warnings.extend(self.settings.warnings)  # as every driver: "not used by this mode"
        start_ns = round(self.start * 1e9) + self.offset_ns
        counted = all(r["partitions"] >= 0 for r in self._requests)
        for r in self._requests:
            for name, (records, size) in r.get("topics", {}).items():
                counts = m.topics.get(name)
                if counts is not None:  # a request carrying several topics counts for each
                    counts.requests += 1
                    counts.records_sent += records
                    counts.bytes_sent += size
            m.requests_by_broker[r["broker"]] += 1
            m.records_sent += r["records"]
            m.bytes_sent += r["bytes"]
            if counted:
                m.requests.append(RequestRecord(
                    send_time_s=(r["ns"] - start_ns) / 1e9, broker=r["broker"],
                    partitions=r["partitions"], records=r["records"], bytes=r["bytes"],
                    reason=REQUEST_REASON, linger_ms=-1.0, attempt=1))
        if not counted:
            m.client_counts = ClientCounts(requests=len(self._requests), batches=0)
            warnings.append("The driver could not read what some Produce requests carried; "
                            "partitions and bytes per request show only their means.")
        m.idempotence = self._idempotence(result.get("idempotence"), warnings)
        if result.get("interception") != "sender-client":
            warnings.append(f"Produce requests could not be counted in the client "
                            f"({result.get('interception')}): requests_sent is 0; see "
                            "kafka_java.node_request_total.")
        return Results.of_run(
            self.mode, self.workload, self._settings_used(),
            self.bootstrap, m, start=self.start, end=end, intended=self._intended,
            warnings=warnings,
            client=Section("kafka_java", {
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
                "producer_metrics": producer_metrics,
                "clock_offset_uncertainty_us": round(self.clock_uncertainty_us, 1),
            }),
        )


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
