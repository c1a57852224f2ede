"""Mode `librdkafka`: the real client beside kbatch's engine, on the same workload.

confluent-kafka's `Producer` (librdkafka) is driven by the engine's own `Generator`: the
same schedules (message `k` of a topic intended where its rate's integral reaches `k`),
the same message ids, values, keys and headers (`TopicSource`), and the same partitions,
passed explicitly to `produce` (kbatch's partitioner: round-robin for keyless messages by
default, murmur2 for keys), so both send identical messages to identical partitions. With a
librdkafka partitioner name (`-X partitioner=murmur2_random` ...) kbatch passes
`partitioner` and `sticky.partitioning.linger.ms` on and produces to partition -1
(`RD_KAFKA_PARTITION_UA`): librdkafka chooses. Instead of an accumulator, the generator
appends into `ProduceSink`, which hands each message to `produce`. Latency is taken in the
delivery callback from the intended send time, exactly as the engine does.

Every message gets the same delivery callback, which reads the message id from the
reported value's first 8 bytes and its intended time from a dict of the messages in
flight. A callback object per message (a `partial` holding its id and time), as before,
was a garbage-collected object alive until its report: tens of thousands of them made
Python's collector stop both threads for 20-120 ms at a time (in one profiled run on this
project's 2 cores, generator lag p99 100 ms; 30 ms with the collector off; 12 ms with one
callback). Values shorter than 8 bytes carry only part of the id: such workloads keep a
callback per message.

When librdkafka's queue is full (`BufferError`) the generator blocks for at most
`max.block.ms` per message, then counts that message as failed, as Java's `send()` does.

Delivery reports and statistics are served by a thread of their own (`poll`), not by the
generating one: after a stall of the brokers tens of thousands of reports arrive at once,
and one `poll` serves them all, which held the schedule up for as long. In a thread apart,
the interpreter switches back to the generator every few milliseconds (its switch
interval). The two share only failure counts, changed under one lock.

What librdkafka does not tell per request, kbatch does not invent: `requests_sent` is the
sum of `brokers[*].req.Produce` from librdkafka's statistics (`stats_cb`), read after
one more statistics interval once every message is delivered; records, bytes and
partitions per request come from the topic's `batchcnt` / `batchsize` statistics. The
per-request log (`RunMetrics.requests`) stays empty, and so do the `linger` and `rtt`
histograms, which are per-request figures.

Settings are passed under librdkafka's names (`modes.librdkafka.LIBRDKAFKA_NAMES`): those given
explicitly with `-X`, plus `acks` and `client.id` always (so acknowledgement means the
same in every mode); everything else stays at librdkafka's defaults. Settings librdkafka
has no equivalent for are refused by the mode's check (`modes.librdkafka`).

The producer runs in a worker thread (librdkafka's `poll` blocks), started from the
asyncio world after the topic is created with the engine's own `Cluster`.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from functools import partial
from time import monotonic_ns
from typing import Any

import numpy as np

from producer_core.engine.core.memory import BlockedGenerator
from producer_core.engine.drivers.client_thread import run_in_thread
from producer_core.engine.drivers.gc_quiet import quiet_gc
from producer_core.engine.drivers.generator import ClientBatching, Generator
from producer_core.engine.drivers.librdkafka_collector import CollectorStats
from producer_core.engine.drivers.librdkafka_trace import (
    DEBUG_CONTEXTS,
    LIBRDKAFKA_BATCH_MESSAGES,
    LIBRDKAFKA_LINGER_MS,
    LogTap,
    add_requests,
    client_in_flight,
    partition_cap,
    replay_order,
    trace_settings,
)
from producer_core.engine.drivers.run_checks import check_message_fits, run_warnings
from producer_core.engine.drivers.run_types import (
    PROGRESS_INTERVAL_S,
    START_LEAD_S,
    STOP_GRACE_S,
    Delivery,
    Progress,
    RunCall,
    run_driver,
)
from producer_core.engine.modes.librdkafka import (
    create_producer,
    librdkafka_config,
    log,
    shown_config,
)
from producer_core.engine.modes.versions import parse_label
from producer_core.errors import BrokerError, ConfigError
from producer_core.results.client_trace import ClientTrace
from producer_core.results.intervals import (
    IntervalRecorder,
    Tally,
    expected_run_s,
    run_tally,
    topic_tally,
)
from producer_core.results.metrics import ClientCounts, Results, RunMetrics, Section, TopicMetrics
from producer_core.security import scrub
from producer_core.settings import ProducerSettings
from producer_core.workload.message_source import SHARE_ID_SHIFT, TOPIC_ID_SHIFT
from producer_core.workload.partitioners import Partitioning
from producer_core.workload.workload import (
    TopicSpec,
    Workload,
    message_id_of,
    values_carry_ids,
)

STATS_INTERVAL_MS = 1000
PRODUCER_ID_WAIT_S = 10.0
"""librdkafka statistics interval; the run ends with one more interval after the last ack."""
QUEUE_FULL_REASON = "max.block.ms (librdkafka queue full)"
MESSAGE_MAX_BYTES = 1_000_000_000

_TOPIC_BITS = (1 << (SHARE_ID_SHIFT - TOPIC_ID_SHIFT)) - 1
"""A message id's topic index: the bits between the topic and share shifts."""

UNKNOWN_ERRORS = frozenset({"_MSG_TIMED_OUT", "_PURGE_INFLIGHT"})
"""Delivery-report errors after which the message may have been written: librdkafka's
Python binding does not expose the message's persistence status, so a timed-out message
(which may have been in flight) and one purged in flight count as unknown, not failed."""

_FATAL_CODES = frozenset({-169, -181})  # _AUTHENTICATION, _SSL
"""librdkafka errors that no retry cures: the run stops with a clear error instead."""

_PER_PARTITION = re.compile(r'"(?:partitions|toppars)":\s*\{')
_EMPTY_END = re.compile(r"\s*\}")
_MEMBERS_END = re.compile(r"\}\s*\}")


def parse_statistics(text: str) -> dict[str, Any]:
    """librdkafka's statistics JSON without its per-partition objects, which kbatch does
    not read: with 1,000 partitions on 3 brokers the document is about 760 kB, and
    `json.loads` of all of it held the GIL (and so the generating thread) for 12-87 ms
    every second. Each `"partitions"` / `"toppars"` object, whose members are flat
    objects, is cut to `{}` by searching for its end (a member's `}` followed by the
    object's `}`) and the rest, a few kB, is parsed. If librdkafka ever nests deeper
    there, the cut text is not valid JSON and the whole document is parsed instead."""
    pieces: list[str] = []
    pos = 0
    for match in _PER_PARTITION.finditer(text):
        if match.start() < pos:
            continue
        body = match.end()
        end = _EMPTY_END.match(text, body) or _MEMBERS_END.search(text, body)
        if end is None:
            return json.loads(text)
        pieces += (text[pos:body], "}")
        pos = end.end()
    pieces.append(text[pos:])
    try:
        return json.loads("".join(pieces))
    except ValueError:
        return json.loads(text)


class ProduceSink:
    """Takes the generator's appends (the accumulator's `append_many`) and produces them."""

    def __init__(self, run: LibrdkafkaRun, producer: Any) -> None:
        self.run = run
        self.producer = producer

    def append_many(self, slots: list[int], message_ids: range, keys: list[bytes] | None,
                    values: list[bytes], intended: list[float], now: float,
                    timestamp_ms: int, headers: list[tuple[str, bytes]] | None = None,
                    value_size: int | None = None) -> list[tuple[int, int]]:
        from confluent_kafka import KafkaException

        run = self.run
        produce = self.producer.produce
        blocked, clock, delivered = run.blocked, run.clock, run._delivered
        in_flight = run.in_flight  # None: a callback per message (short values)
        callback = run.reported  # one object for every message: nothing for gc to track
        targets = run.targets
        trace = run.trace
        headers = headers or None
        key_iter = keys if keys is not None else [None] * len(values)
        for slot, message_id, key, value, when in zip(
                slots, message_ids, key_iter, values, intended, strict=True):
            topic, partition = targets[slot]
            if in_flight is None:
                callback = partial(delivered, slot, message_id, when)
            else:
                in_flight[message_id] = when  # before produce: its report may come at once
            while True:
                started = monotonic_ns() if trace is not None else 0
                try:
                    if headers is None:
                        produce(topic, value, key, partition, on_delivery=callback,
                                timestamp=timestamp_ms)
                    else:
                        produce(topic, value, key, partition, on_delivery=callback,
                                timestamp=timestamp_ms, headers=headers)
                except BufferError:  # queue.buffering.max.* reached: block, like Java
                    t = clock()
                    with run.counts_lock:
                        timed_out = blocked.wait(t, 1)
                        if timed_out:  # max.block.ms ran out: this message fails
                            run.topic_of[slot].failed += 1
                    if timed_out:
                        run.forget(message_id)
                        break
                    # the reports thread frees the queue meanwhile
                    time.sleep(min(max((blocked.deadline() or t) - t, 0.001), 0.01))
                    if run._stopping():
                        run.forget(message_id)
                        return []
                    continue
                except KafkaException as exc:  # refused at once: it fails, with its reason
                    with run.counts_lock:
                        run.metrics.fail(1, exc.args[0].name())
                        run.topic_of[slot].failed += 1
                    run.forget(message_id)
                    break
                if blocked.blocked:
                    blocked.release(clock())
                if trace is not None:  # produced: librdkafka has it queued
                    trace.add_messages([slot], [key], [value], [round(when * 1e9)],
                                       headers, timestamp_ms)
                    trace.add_appends(len(trace.start_ns), [started],
                                      [monotonic_ns() - started])
                break
        return []


class LibrdkafkaRun:
    """One run of one workload through confluent-kafka's Producer."""

    def __init__(
        self,
        workload: Workload,
        settings: ProducerSettings,
        bootstrap: str,
        on_progress: Callable[[Progress], None] | None = None,
        deliveries: list[Delivery] | None = None,
        mode: str = "librdkafka",
        trace: bool = False,
    ) -> None:
        self.workload = workload
        self.mode = mode
        """librdkafka, or a mode that runs it under names of its own (librdkafka-broker)."""
        self.settings = settings
        self.bootstrap = bootstrap
        self.on_progress = on_progress
        self.deliveries = deliveries
        self.metrics = RunMetrics()
        self.stop = threading.Event()
        self._completion = threading.Event() if workload.closed_loop else None
        """Set by every delivery report in a closed loop: a sender is free (issue 44)."""
        """Set from outside (a signal, a cancelled task): stop early, keep partial results."""
        self.halt = threading.Event()
        """Set from inside on an error no retry cures: stop and raise it."""
        self.counts_lock = threading.Lock()
        """Failure counts change in both threads (generator, reports): one at a time."""
        self.clock = time.monotonic
        self.start = 0.0
        self._warmup_until = 0.0
        self.specs = workload.topic_specs()
        self.targets: list[tuple[str, int]] = []  # slot -> (topic, partition), as the engine
        layout = workload.slot_layout()
        self.first_slots = list(layout.first_slots)
        self.partitioning = Partitioning.from_settings(settings)
        for spec in self.specs:
            own = self.partitioning.for_topic(spec.partitioner)
            if own.librdkafka and own.name != self.partitioning.name:
                raise ConfigError(
                    f"Mode librdkafka: topic {spec.name!r} names partitioner {own.name!r} but "
                    f"the producer's is {self.partitioning.name!r}; librdkafka has one "
                    "partitioner per producer. Set it with -X partitioner= instead.")
            # a librdkafka name: produce to RD_KAFKA_PARTITION_UA (-1), librdkafka chooses
            self.targets.extend((spec.name, -1 if own.librdkafka else p)
                                for p in range(spec.partitions))
        for spec in self.specs:
            self.metrics.topics.setdefault(spec.name, TopicMetrics())
        self.topic_of = [self.metrics.topics[topic] for topic, _ in self.targets]
        self.topic_index_of = layout.topic_index_of
        self.topic_metrics = [self.metrics.topics[spec.name] for spec in self.specs]
        self.in_flight: dict[int, float] | None = (
            {} if all(values_carry_ids(spec) for spec in self.specs) else None)
        """Message id -> intended time of each message produced and not yet reported,
        when every value carries its id (`reported`); else None (`_delivered`)."""
        self.reported = self._reported  # bound once: the same object for every message
        self.blocked = BlockedGenerator(settings["max.block.ms"] / 1000.0, self.metrics,
                                        QUEUE_FULL_REASON)
        self._latencies: dict[int, list[float]] = {}  # topic index -> not yet recorded
        self._intended: int | None = None
        self._last_delivery = 0.0
        self._stats_seen = 0
        self._produce_requests: dict[int, int] = {}
        self._produce_partitions: dict[int, int] = {}
        """Partition MessageSets put in ProduceRequests, per broker: the patched library
        counts them (`produce_partitions`); stock librdkafka does not (one per request)."""
        self._retries: dict[int, int] = {}
        self._batches: Counter[str] = Counter()  # topic -> partition batches built
        self._batch_records: Counter[str] = Counter()
        self._batch_bytes: Counter[str] = Counter()
        self._batch_p50: list[tuple[int, float]] = []
        self._batch_max = 0.0
        self._rtt_p50: list[tuple[int, float]] = []  # librdkafka's own request round trips
        self._rtt_max = 0.0
        self._errors: Counter[str] = Counter()
        self._fatal: str | None = None
        self._idempotence_state = ""
        self.collector = CollectorStats()  # the patched library's (mode librdkafka-broker)
        self.config, self.used_settings = librdkafka_config(settings, mode)
        self.trace: ClientTrace | None = None
        """With `trace`: what librdkafka did, message by message and request by request
        (`librdkafka_trace`), for a trace replay of mode partition."""
        self.tap: LogTap | None = None
        if trace:
            from confluent_kafka import libversion

            self.tap = LogTap(log)
            self.trace = ClientTrace("librdkafka", _version_text(libversion()),
                                     [s.name for s in self.specs],
                                     [s.partitions for s in self.specs], clock_ms=0,
                                     clock_ns=monotonic_ns())
        self.metrics.idempotence = {"enabled": settings.idempotent}
        self.intervals = IntervalRecorder.for_callback(on_progress, expected_run_s(workload))

    # ----------------------------------------------------------------- setup
    def _producer(self) -> Any:
        return create_producer({
            "bootstrap.servers": self.bootstrap,
            "statistics.interval.ms": STATS_INTERVAL_MS,
            "stats_cb": self._on_stats,
            "error_cb": self._on_error,
            **self.config,
            **({} if self.tap is None else {"logger": self.tap, "debug": ",".join(
                filter(None, [self.config.get("debug"), DEBUG_CONTEXTS]))}),
        })

    # ------------------------------------------------------------ callbacks
    def forget(self, message_id: int) -> None:
        """A message that failed before librdkafka took it: no report will come."""
        if self.in_flight is not None:
            self.in_flight.pop(message_id, None)

    def _reported(self, err: Any, msg: Any) -> None:
        """Every message's delivery callback: the value names the message."""
        message_id = message_id_of(msg.value())
        # used only when in_flight is a dict (`reported`, set in __init__)
        intended = self.in_flight.pop(message_id, None)  # type: ignore[union-attr]  # see above
        if intended is None:  # not one of ours: count it, record nothing
            self._errors["delivery report of an unknown message"] += 1
            return
        self._record((message_id >> TOPIC_ID_SHIFT) & _TOPIC_BITS, message_id, intended,
                     err, msg)

    def _delivered(self, slot: int, message_id: int, intended: float, err: Any,
                   msg: Any) -> None:
        """A message's own delivery callback (values too short to carry the id)."""
        self._record(self.topic_index_of[slot], message_id, intended, err, msg)

    def _record(self, topic: int, message_id: int, intended: float, err: Any,
                msg: Any) -> None:
        """One delivery report: counts, and the latency from the intended time."""
        now = self.clock()
        if self._completion is not None:
            self._completion.set()
        self._last_delivery = now
        if err is not None:
            reason = err.name()
            if self._stopping() and reason in ("_PURGE_QUEUE", "_PURGE_INFLIGHT"):
                reason, unknown = "interrupted", reason == "_PURGE_INFLIGHT"
            else:
                unknown = reason in UNKNOWN_ERRORS
            with self.counts_lock:
                if unknown:
                    self.metrics.unknown(1, reason)
                    self.topic_metrics[topic].unknown += 1
                else:
                    self.metrics.fail(1, reason)
                    self.topic_metrics[topic].failed += 1
            return
        self.metrics.messages_acked += 1
        self.topic_metrics[topic].acknowledged += 1
        if intended >= self._warmup_until:
            self._latencies.setdefault(topic, []).append(now - intended)
        if self.deliveries is not None:
            self.deliveries.append(
                Delivery(msg.topic(), msg.partition(), msg.offset(), [message_id]))

    def _stopping(self) -> bool:
        return self.stop.is_set() or self.halt.is_set()

    def _on_error(self, err: Any) -> None:
        self._errors[err.name()] += 1
        if err.code() in _FATAL_CODES and self._fatal is None:
            # librdkafka would retry until delivery.timeout.ms; the user's settings are wrong
            self._fatal = scrub(err.str(), self.config)
            self.halt.set()

    def _on_stats(self, text: str) -> None:
        stats = parse_statistics(text)
        self._stats_seen += 1
        self._idempotence_state = stats.get("eos", {}).get("idemp_state", "")
        for broker in stats.get("brokers", {}).values():
            node = broker.get("nodeid", -1)
            if node < 0:  # bootstrap and internal entries send no Produce
                continue
            produced = broker.get("req", {}).get("Produce", 0)
            self._produce_requests[node] = max(self._produce_requests.get(node, 0), produced)
            if "produce_partitions" in broker:  # the patched library (multi-partition)
                self._produce_partitions[node] = max(self._produce_partitions.get(node, 0),
                                                     broker["produce_partitions"])
            self._retries[node] = max(self._retries.get(node, 0), broker.get("txretries", 0))
            self.collector.update(node, broker.get("batch_collector"))
            rtt = broker.get("rtt", {})
            if rtt.get("cnt"):  # µs, per window
                self._rtt_p50.append((rtt["cnt"], rtt["p50"] / 1000.0))
                self._rtt_max = max(self._rtt_max, rtt["max"] / 1000.0)
        for name, topic in stats.get("topics", {}).items():
            if name not in self.metrics.topics:
                continue
            # windows restart at every emit: the sum over emits is the run's total
            count, size = topic["batchcnt"], topic["batchsize"]
            if count["cnt"]:
                self._batches[name] += count["cnt"]
                self._batch_records[name] += count["sum"]
                self._batch_bytes[name] += size["sum"]
                self._batch_p50.append((size["cnt"], float(size["p50"])))
                self._batch_max = max(self._batch_max, float(size["max"]))

    # ------------------------------------------------------------------ run
    def run(self) -> Results:
        with quiet_gc():  # no full collection of the setup's objects mid-run (gc_quiet.py)
            return self._run()

    def _run(self) -> Results:
        producer = self._producer()
        try:
            self._await_producer_id(producer)
            generator = Generator(self.workload, self.first_slots,
                                  # a sink with the accumulator's append_many (duck-typed)
                                  ProduceSink(self, producer),  # type: ignore[arg-type]  # see above
                                  ClientBatching(), self.metrics,
                                  self.partitioning)
            self.start = self.clock() + START_LEAD_S
            if self.workload.start_at is not None:  # a share of a distributed run
                self.start = self.clock() + max(0.0, self.workload.start_at - time.time())
                time.sleep(max(0.0, self.start - self.clock()))
            self._warmup_until = self.start + self.workload.warmup_s
            self._last_progress = self.start
            generator.begin(self.start)
            self.intervals.begin(self.start, self.metrics, self._live_tally)
            self._intended = generator.intended_total()
            generated = threading.Event()
            reports = threading.Thread(target=self._serve_reports, args=(producer, generated),
                                       name="kbatch-librdkafka-reports", daemon=True)
            reports.start()
            try:
                self._generate(generator)
            finally:
                generated.set()
                reports.join()
            end = self._drain(producer)
            self._final_stats(producer)
            self._finish_trace()
            self.intervals.finish(end)  # after the statistics that hold the last requests
        finally:
            if self._stopping():  # stopped: a short grace for what is in flight, then purge
                self.metrics.complete = False
                producer.flush(min(STOP_GRACE_S, self.settings.request_timeout_s))
                producer.purge()
                producer.poll(0)
                producer.flush(0)
                self._collect()
                end = self.clock()
            close = getattr(producer, "close", None)  # releases before 2.13 have none
            if close is not None:
                close()
        if self._fatal is not None:
            raise BrokerError(
                f"librdkafka could not connect securely to {self.bootstrap} "
                f"({self.settings.security.describe()}): {self._fatal}.")
        return self._results(end)

    def _finish_trace(self) -> None:
        """The requests of the trace, from librdkafka's log lines (`librdkafka_trace`)."""
        if self.trace is None or self.tap is None:
            return
        config = self.config
        linger = float(config.get("linger.ms", config.get("queue.buffering.max.ms",
                                                            LIBRDKAFKA_LINGER_MS)))
        batch_messages = int(config.get("batch.num.messages", LIBRDKAFKA_BATCH_MESSAGES))
        add_requests(self.trace, self.tap.lines, linger, batch_messages,
                     client_in_flight(config), partition_cap(config))
        replay_order(self.trace)
        self.trace.settings = trace_settings(config, linger)

    def _await_producer_id(self, producer: Any) -> None:
        """With idempotence librdkafka fetches a producer id before it sends anything; the
        schedule starts once it has one (as the engine's does), read from its statistics,
        so the first messages' latency does not include that set-up."""
        if not self.settings.idempotent:
            return
        deadline = self.clock() + PRODUCER_ID_WAIT_S
        while (self._idempotence_state != "Assigned" and self.clock() < deadline
               and not self._stopping()):
            producer.poll(0.05)

    def _collect(self) -> None:
        """Move latencies taken in callbacks into the histograms; report progress."""
        if self._latencies:
            latencies, self._latencies = self._latencies, {}
            for topic, values in latencies.items():
                array = np.asarray(values)
                self.metrics.latency.record_seconds(array)
                self.topic_metrics[topic].latency.record_seconds(array)
        now = self.clock()
        self.intervals.poll(now)
        if self.on_progress is not None and now - self._last_progress >= PROGRESS_INTERVAL_S:
            self._last_progress = now
            m = self.metrics
            self.on_progress(Progress(
                elapsed_s=max(0.0, now - self.start), generated=m.messages_generated,
                acknowledged=m.messages_acked, failed=m.messages_failed,
                in_flight_requests=0, requests_sent=sum(self._produce_requests.values()),
                p99_ms=m.latency.percentile_ms(99) if m.latency.count else 0.0,
                target_messages=self._intended,
            ))

    def _live_tally(self) -> tuple[Tally, dict[str, Tally]]:
        """Request figures so far, from the last statistics emit (every second)."""
        m = self.metrics
        run = run_tally(m, sum(self._produce_requests.values()),
                        sum(self._batch_records.values()), sum(self._batch_bytes.values()))
        return run, {name: topic_tally(t, self._batches[name], self._batch_records[name],
                                       self._batch_bytes[name])
                     for name, t in m.topics.items()}

    def _serve_reports(self, producer: Any, generated: threading.Event) -> None:
        """While the generator runs: serve delivery reports and statistics, record them."""
        while not generated.is_set():
            producer.poll(0.05)
            self._collect()

    def _generate(self, generator: Generator) -> None:
        """The engine's generator loop; it only produces and sleeps until the next is due
        (delivery reports are served by `_serve_reports`)."""
        clock, sleep = self.clock, time.sleep
        while not self._stopping():
            now = clock()
            if generator.due(now) > 0:
                generator.generate(now)
            if generator.finished(clock()):
                self.blocked.release(clock())
                return
            if generator.unthrottled or generator.due(clock()) > 0:
                continue
            next_due = generator.next_due()
            wait = min(max(0.05 if next_due is None else next_due - clock(), 0.001), 0.05)
            if self._completion is None:
                sleep(wait)
            elif self._completion.wait(wait):  # a closed loop's sender is free
                self._completion.clear()

    def _drain(self, producer: Any) -> float:
        """Flush (librdkafka then sends at once, ignoring linger.ms, as the engine's flush
        does) and serve delivery reports until every message is acknowledged or failed."""
        deadline = self.clock() + self.settings.delivery_timeout_s + 60.0
        if self.trace is not None:
            self.trace.flush_ns = monotonic_ns()
        while producer.flush(0.05) > 0 and not self._stopping():
            self._collect()
            if self.clock() > deadline:
                break
        self._collect()
        return max(self._last_delivery, self.start)

    def _final_stats(self, producer: Any) -> None:
        """Wait for one more statistics emit, so the counts include every request."""
        seen = self._stats_seen
        deadline = self.clock() + 3 * STATS_INTERVAL_MS / 1000.0
        while self._stats_seen == seen and self.clock() < deadline and not self._stopping():
            producer.poll(0.05)
        if self._stats_seen == seen:
            self._errors["no final statistics"] += 1

    # -------------------------------------------------------------- results
    def _results(self, end: float) -> Results:
        m = self.metrics
        requests = sum(self._produce_requests.values())
        m.requests_by_broker.update(self._produce_requests)
        m.retried_requests = sum(self._retries.values())
        m.records_sent = sum(self._batch_records.values())
        m.bytes_sent = sum(self._batch_bytes.values())
        batches = sum(self._batches.values())
        if self._produce_partitions:  # counted per request by the library itself
            batches = sum(self._produce_partitions.values())
        m.client_counts = ClientCounts(
            requests=requests, batches=batches,
            batch_bytes_p50=_weighted_median(self._batch_p50), batch_bytes_max=self._batch_max,
        )
        for name, topic in m.topics.items():
            # with one partition per request, a topic's requests are its batches
            topic.requests = self._batches[name] if batches == requests else 0
            topic.records_sent = self._batch_records[name]
            topic.bytes_sent = self._batch_bytes[name]
        warnings = run_warnings(m, self.workload, "a full librdkafka queue")
        warnings.extend(self.settings.warnings)
        if self._errors:
            warnings.append(f"librdkafka reported errors: {dict(self._errors)}.")
        if batches != requests and self.mode == "librdkafka":  # librdkafka-broker: its docs
            warnings.append(
                f"librdkafka built {batches} partition batches in {requests} Produce "
                "requests: partitions and bytes per request show only their means, and "
                "per-topic request counts are unknown (0)."
            )
        from confluent_kafka import libversion, version

        collector = self.collector.section()
        return Results.of_run(
            self.mode, self.workload, dict(self.used_settings), self.bootstrap, m,
            start=self.start, end=end, intended=self._intended, warnings=warnings,
            client=Section("librdkafka", {
                "version": _version_text(libversion()),
                "confluent_kafka_version": _version_text(version()),
                "config": shown_config(self.config),
                "statistics_interval_ms": STATS_INTERVAL_MS,
                "produce_requests_by_broker": {
                    str(k): v for k, v in sorted(self._produce_requests.items())},
                "batches": batches,
                **({"produce_partitions_by_broker": {
                    str(k): v for k, v in sorted(self._produce_partitions.items())}}
                   if self._produce_partitions else {}),
                "rtt_p50_ms": round(_weighted_median(self._rtt_p50), 3),
                "rtt_max_ms": round(self._rtt_max, 3),
                **({"batch_collector": self.collector.by_broker()} if collector else {}),
            }),
            policy=Section("collector", collector) if collector else None,
        )


def _version_text(reported: Any) -> str:
    """A version confluent-kafka reports, as text: releases answer a (text, int) pair or
    the text alone."""
    return str(reported[0] if isinstance(reported, tuple) else reported)


def _weighted_median(points: list[tuple[int, float]]) -> float:
    """Median of per-window medians, weighted by the window's sample count."""
    if not points:
        return 0.0
    points = sorted(points, key=lambda p: p[1])
    half = sum(weight for weight, _ in points) / 2
    running = 0
    for weight, value in points:
        running += weight
        if running >= half:
            return value
    return points[-1][1]


def check_librdkafka_message_fits(specs: tuple[TopicSpec, ...], settings: ProducerSettings) -> None:
    """The engine's check, against librdkafka's request limit (message.max.bytes)."""
    limit = settings.max_request_size if "max.request.size" in settings.explicit else 1_000_000
    check_message_fits(specs, limit, "librdkafka's message.max.bytes")


@run_driver
async def run_async(call: RunCall) -> Results:
    """Run one workload through librdkafka; the same call and Results as the engine's.
    ``librdkafka@VERSION`` runs that confluent-kafka release in a child process."""
    check_librdkafka_message_fits(call.workload.topic_specs(), call.settings)
    label = parse_label(call.mode)
    if label.version is not None:
        from producer_core.engine.drivers.librdkafka_versions import run_out_of_process

        return await run_out_of_process(call, label.version)
    runner = LibrdkafkaRun(call.workload, call.settings, call.bootstrap, call.on_progress,
                           call.deliveries, label.base)
    return await run_in_thread(runner, call, abort=lambda: runner.stop.set())


async def run_traced(workload: Workload, settings: ProducerSettings, bootstrap: str
                     ) -> tuple[Results, ClientTrace]:
    """One librdkafka run (the installed confluent-kafka) that also records what librdkafka
    did, message by message and request by request (`ClientTrace`, from its debug log:
    `librdkafka_trace`), for a trace replay of mode partition."""
    check_librdkafka_message_fits(workload.topic_specs(), settings)
    runner = LibrdkafkaRun(workload, settings, bootstrap, trace=True)
    results = await run_in_thread(runner, RunCall(workload, settings, "librdkafka", bootstrap),
                                  abort=lambda: runner.stop.set())
    assert runner.trace is not None
    return results, runner.trace
