"""A run of kbatch's workload through any driver speaking the client-driver pipe protocol:
the one run loop of every real client run out of process (the Java producer, Go's
franz-go, sarama and kafka-go).

The design choice: kbatch's own `Generator` (the same one the engine and librdkafka use)
produces the schedule, ids, keys, values, headers and partitions, and streams each
message to the driver over its stdin at the message's intended time, converted to the
driver's clock (the tightest of a few pings gives the offset). The driver hands it to
its client's send, so every client gets identical messages, in identical partitions, at
identical times, with no second implementation of the schedule to drift. A client whose
buffer is full blocks its send, which stops the driver reading, which fills the pipe and
blocks the generator: the client's own back-pressure. A reader thread takes the lines the
driver writes back (requests, deliveries, progress, the result); a stop ends generation,
gives what was handed over a grace, and reports a partial run (``complete: false``).

`PipeRun` is all of that; a client's run (`kafka_java.run.KafkaJavaRun`,
`go_clients.run.GoClientRun`) sets what names the client (`who`, `client_name`,
`section`, `request_reason`, its `properties`) and fills the hooks its lines and its
results need (`on_line`, `check_answers`, `run_notes`, `extra_warnings`,
`client_section`, `settings_used`).
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from typing import IO, Any, Protocol

from producer_core.engine.drivers.client_pipe import protocol
from producer_core.engine.drivers.generator import ClientBatching, Generator
from producer_core.engine.drivers.run_checks import run_warnings
from producer_core.engine.drivers.run_types import (
    PROGRESS_INTERVAL_S,
    START_LEAD_S,
    Delivery,
    Progress,
    phased_start,
)
from producer_core.errors import BrokerError, ConfigError
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
from producer_core.settings import ProducerSettings
from producer_core.workload.workload import Workload

HELLO_TIMEOUT_S = 60.0
PINGS = 5
MIN_SLEEP_S = 0.00005
"""The generator's shortest sleep between passes. Each message reaches the driver at its
intended time (time.sleep waits to tens of microseconds); a 0.5 ms floor here used to
deliver 2,000 msg/s in late pairs, which made the Java producer batch more than the same
schedule asks (issue #18)."""
STOP_GRACE_S = 10.0
"""After a stop, how long the client may take to settle what it was handed."""
NO_CALLBACK = "no callback before close"
"""The unknown reason of a message the driver took but whose outcome never came."""


class DriverCommand(Protocol):
    """How to start a driver (`kafka_java.driver.Driver`, `go_clients.driver.Driver`)."""

    def command(self) -> list[str]: ...


class _PipeSink:
    """Takes the generator's appends and writes them to the driver as 'M' frames."""

    def __init__(self, run: PipeRun) -> None:
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
        run.sent_messages(slots, key_iter, values, intended, headers, timestamp_ms)
        return []


class PipeRun:
    """One run of one workload through a pipe-protocol driver (see the module)."""

    who = "kbatch's client driver"
    """The driver, as messages name it."""
    client_name = "The client"
    """The client, as messages name it (``... refused the settings``)."""
    section = "client"
    """The results key of the client's own figures."""
    request_reason = "client"
    """The reason each Produce request of the request log gets."""
    full_buffer = "the client's full buffer"
    """What blocked the generator, as the warnings name it."""

    def __init__(self, workload: Workload, settings: ProducerSettings, bootstrap: str,
                 driver: DriverCommand, on_progress: Callable[[Progress], None] | None = None,
                 deliveries: list[Delivery] | None = None, mode: str = "client") -> None:
        self.mode = mode
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
        self.clock_uncertainty_us = 0.0
        self.client_version = "unknown"
        self.specs = workload.topic_specs()
        layout = workload.slot_layout()
        self.targets = layout.targets()
        self.topic_index = list(layout.topic_index_of)
        self.first_slots = list(layout.first_slots)
        for spec in self.specs:
            self.metrics.topics.setdefault(spec.name, TopicMetrics())
        self.properties: dict[str, str] = {"bootstrap.servers": bootstrap}
        """The header's client settings (a subclass sets them)."""
        self.traced = False
        """Ask the driver for its trace lines (the Java driver's ``kbatch.trace``)."""
        self._completed = 0
        """Messages the driver reported complete ("done": a closed loop's senders wait)."""
        self._completion = threading.Event()
        self._lines: queue.Queue[dict[str, Any]] = queue.Queue()
        self._requests: list[dict[str, Any]] = []
        self._progress: dict[str, Any] = {}
        self._result: dict[str, Any] | None = None
        self._config_error: str | None = None
        self._done = threading.Event()
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._intended: int | None = None
        self._last_progress = 0.0

    # ------------------------------------------------------------- hooks
    def on_line(self, item: dict[str, Any]) -> bool:
        """A line only this client's driver writes: True where taken (the reader thread)."""
        return False

    def on_request(self, item: dict[str, Any]) -> None:
        """A 'request' line, beside counting it (the reader thread)."""

    def on_hello(self, hello: dict[str, Any]) -> None:
        """The driver's hello, after its protocol version was checked."""

    def sent_messages(self, slots: list[int], keys: Sequence[bytes | None],
                      values: list[bytes], intended: list[float],
                      headers: list[tuple[str, bytes]] | None, timestamp_ms: int) -> None:
        """Messages just written to the driver (their intended times on kbatch's clock)."""

    def check_answers(self) -> None:
        """Raise where the driver reported what ends the run at once (polled)."""

    def run_notes(self) -> list[str]:
        """Warnings of the run's set-up, after the common ones."""
        return []

    def extra_warnings(self, result: dict[str, Any]) -> list[str]:
        """What this client's results must say beyond the common warnings."""
        return []

    def before_results(self, result: dict[str, Any]) -> None:
        """Take what the result line says beyond the common figures (e.g. blocked time)."""

    def settings_used(self) -> dict[str, Any]:
        """The run's settings as the results give them: those kbatch passed."""
        return {k: self.settings[k] for k in self.properties if k in self.settings.values}

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

    # ------------------------------------------------------------- control
    def abort(self) -> None:
        """Stop now (the run was cancelled): kill the driver, which unblocks a write the
        generator may be stuck in while the client's send waits for buffer space."""
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

    def _flush(self) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        try:
            self._proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            raise self._driver_died() from None

    def _read(self, stdout: IO[bytes]) -> None:
        """Reader thread: every line the driver writes, until it closes stdout."""
        try:
            for line in stdout:
                item = protocol.parse_line(line, self.who)
                kind = item["type"]
                if kind == "request":
                    self._requests.append(item)
                    self.on_request(item)
                elif self.on_line(item):
                    pass
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
                else:
                    self._lines.put(item)
        except BrokerError as exc:
            self._lines.put({"type": "protocol_error", "message": str(exc)})
        finally:
            self._done.set()
            self._lines.put({"type": "closed"})

    def _next(self, kind: str, timeout: float) -> dict[str, Any]:
        deadline = self.clock() + timeout
        while True:
            try:
                item = self._lines.get(timeout=max(0.0, deadline - self.clock()))
            except queue.Empty:
                raise BrokerError(f"{self.who} sent no {kind} within "
                                  f"{timeout:.0f} s.") from None
            if item["type"] == kind:
                return item
            if item["type"] in ("closed", "protocol_error"):
                raise self._driver_died(item.get("message"))

    def _driver_died(self, message: str | None = None) -> Exception:
        self._done.wait(2.0)  # let the reader take the driver's last lines (config_error)
        if self._config_error is not None:
            refusal = scrub(self._config_error, self.properties)
            return ConfigError(f"{self.client_name} refused the settings "
                               f"{redact(self.properties)}: {refusal}")
        tail = ""
        if self._stderr is not None:
            self._stderr.seek(0)
            tail = "\n".join(self._stderr.read().decode(errors="replace").strip()
                             .splitlines()[-15:])
        return BrokerError(f"{self.who} stopped unexpectedly"
                           f"{': ' + message if message else ''}. It said:\n{tail or '-'}")

    def _handshake(self) -> None:
        hello = self._next("hello", HELLO_TIMEOUT_S)
        if hello.get("protocol") != protocol.PROTOCOL_VERSION:
            raise BrokerError(f"{self.who} speaks protocol {hello.get('protocol')}, "
                              f"kbatch {protocol.PROTOCOL_VERSION}; delete its cached build.")
        self.client_version = str(hello.get("client_version"))
        self.on_hello(hello)
        closed = {"kbatch.completions": "true"} if self.workload.closed_loop else {}
        self.write(protocol.header([s.name for s in self.specs],
                                   {**self.properties, **closed},
                                   self.deliveries is not None, trace=self.traced))
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

    # ------------------------------------------------------------------ run
    def run(self) -> Results:
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed in _close
        self._proc = subprocess.Popen(self.driver.command(), stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=self._stderr)
        assert self._proc.stdout is not None
        reader = threading.Thread(target=self._read, args=(self._proc.stdout,),
                                  name=f"kbatch-{self.section}-reader", daemon=True)
        reader.start()
        try:
            self._handshake()
            generator = Generator(self.workload, self.first_slots,
                                  # a sink with the accumulator's append_many (duck-typed)
                                  _PipeSink(self),  # type: ignore[arg-type]  # see above
                                  ClientBatching(), self.metrics)
            generator.completions = lambda: self._completed  # the client settles
            # on the wall clock's milliseconds (Java's clock), the phase mode java runs at
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
            # the client a short grace, and report it as a partial run (complete: false).
            stopped = self.stop.is_set()
            self.write(protocol.END)
            self._flush()
            self._proc.stdin.close()  # type: ignore[union-attr]  # started with stdin=PIPE
            deadline = self.clock() + (STOP_GRACE_S if stopped
                                       else self.settings.delivery_timeout_s + 60.0)
            while self._result is None and not self._done.wait(0.2):
                self.check_answers()
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
            self.check_answers()
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
        """Each message's outcome as the engine counts them (see the protocol's result
        line): acknowledged, failed, unknown (may be written) or sent_unacknowledged
        (acks=0); a message generated but never settled is unknown, not dropped."""
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

    def _idempotence(self, reported: Any, warnings: list[str]) -> dict[str, Any]:
        """What the client ran with, not what was asked: `--verify` excuses duplicates and
        reorders only when idempotence was off."""
        if isinstance(reported, dict) and isinstance(reported.get("enabled"), bool):
            return {k: v for k, v in reported.items()
                    if k in ("enabled", "producer_id", "producer_epoch")}
        configured = str(self.settings["enable.idempotence"]).lower() == "true"
        detail = reported.get("unknown") if isinstance(reported, dict) else "not reported"
        warnings.append(f"{self.client_name}'s idempotence could not be read ({detail}); the "
                        f"results give the setting (enable.idempotence={str(configured).lower()}).")
        return {"enabled": configured}

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
        self.before_results(result)
        warnings = run_warnings(m, self.workload, self.full_buffer)
        warnings += self.run_notes()
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
            self.mode, self.workload, self.settings_used(), self.bootstrap, m,
            start=self.start, end=end, intended=self._intended, warnings=warnings,
            client=Section(self.section, self.client_section(result)),
        )
