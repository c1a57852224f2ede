"""Mode `librdkafka`: the real client beside kbatch's engine, on the same workload.

confluent-kafka's `Producer` (librdkafka) is driven by the same generator as the in-repo
engine: message `i` is intended at `start + i / rate`, its value is the 8-byte
big-endian id plus the seeded pad, its key and partition come from the same
`MessageSource` and murmur2 table, and the partition is passed explicitly to `produce`,
so both engines send identical messages to identical partitions. Latency is taken in
the delivery callback from the intended send time, exactly as the engine does.

What librdkafka does not tell per request, kbatch does not invent: `requests_sent` is the
sum of `brokers[*].req.Produce` from librdkafka's statistics (`stats_cb`), read after
one more statistics interval once every message is delivered; records, bytes and
partitions per request come from the topic's `batchcnt` / `batchsize` statistics. The
per-request log (`RunMetrics.requests`) stays empty, and so do the `linger` and `rtt`
histograms, which are per-request figures.

Settings are passed under librdkafka's names (`config.LIBRDKAFKA_NAMES`): those given
explicitly with `-X`, plus `acks` and `client.id` always (so acknowledgement means the
same in every mode); everything else stays at librdkafka's defaults. Settings librdkafka
has no equivalent for are refused in `config.build_settings`.

The producer runs in a worker thread (librdkafka's `poll` blocks), started from the
asyncio world after the topic is created with the engine's own `Cluster`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import threading
import time
from array import array
from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
from aiokafka.record.default_records import DefaultRecordBatchBuilder

from producer_core.config import LIBRDKAFKA_NAMES, ProducerSettings
from producer_core.engine import PROGRESS_INTERVAL_S, START_LEAD_S, Delivery, Progress
from producer_core.errors import ConfigError, UsageError
from producer_core.generator import CHUNK
from producer_core.memory import BlockedGenerator
from producer_core.metrics import ClientCounts, Results, RunMetrics
from producer_core.transport import Cluster
from producer_core.workload import ID_BYTES, MessageSource, Workload

STATS_INTERVAL_MS = 1000
"""librdkafka statistics interval; the run ends with one more interval after the last ack."""
QUEUE_FULL_REASON = "max.block.ms (librdkafka queue full)"
MESSAGE_MAX_BYTES = 1_000_000_000
ALWAYS_PASSED = ("acks", "client.id")

_log = logging.getLogger("kbatch.librdkafka")
_log.addHandler(logging.NullHandler())
_log.propagate = False


def librdkafka_config(settings: ProducerSettings) -> tuple[dict[str, Any], dict[str, Any]]:
    """(librdkafka properties, the kbatch settings they came from) for these settings."""
    config: dict[str, Any] = {}
    used: dict[str, Any] = {}
    for key in [*ALWAYS_PASSED, *sorted(settings.explicit)]:
        name = LIBRDKAFKA_NAMES.get(key)
        if name is None or key in used:
            continue
        value = settings[key]
        used[key] = value
        if key == "buffer.memory":
            value = max(1, math.ceil(value / 1024))
        config[name] = str(value)
    if "max.block.ms" in settings.explicit:
        used["max.block.ms"] = settings["max.block.ms"]
    return config, used


class LibrdkafkaRun:
    """One run of one workload through confluent-kafka's Producer."""

    def __init__(
        self,
        workload: Workload,
        settings: ProducerSettings,
        bootstrap: str,
        on_progress: Callable[[Progress], None] | None = None,
        deliveries: list[Delivery] | None = None,
    ) -> None:
        self.workload = workload
        self.settings = settings
        self.bootstrap = bootstrap
        self.on_progress = on_progress
        self.deliveries = deliveries
        self.metrics = RunMetrics()
        self.stop = threading.Event()
        self.clock = time.monotonic
        self.start = 0.0
        self._warmup_until = 0.0
        self._interval = 1.0 / workload.rate if workload.rate else 0.0
        self._append_times = array("d")  # unthrottled runs: append time per message id
        self._latencies: list[float] = []
        self._last_delivery = 0.0
        self._stats_seen = 0
        self._produce_requests: dict[int, int] = {}
        self._retries: dict[int, int] = {}
        self._batches = 0
        self._batch_records = 0
        self._batch_bytes = 0
        self._batch_p50: list[tuple[int, float]] = []
        self._batch_max = 0.0
        self._errors: Counter[str] = Counter()
        self.config, self.used_settings = librdkafka_config(settings)

    # ----------------------------------------------------------------- setup
    def _producer(self) -> Any:
        try:
            from confluent_kafka import KafkaException, Producer
        except ImportError as exc:  # pragma: no cover - a dependency of kbatch
            raise UsageError(
                "Mode librdkafka needs the confluent-kafka package: pip install "
                "confluent-kafka==2.16.1."
            ) from exc
        config = {
            "bootstrap.servers": self.bootstrap,
            "statistics.interval.ms": STATS_INTERVAL_MS,
            "stats_cb": self._on_stats,
            "on_delivery": self._on_delivery,
            "error_cb": self._on_error,
            "logger": _log,
            **self.config,
        }
        try:
            return Producer(config)
        except KafkaException as exc:
            raise ConfigError(
                f"librdkafka refused the settings {self.config}: {exc.args[0].str()}"
            ) from None

    # ------------------------------------------------------------ callbacks
    def _on_delivery(self, err: Any, msg: Any) -> None:
        self._delivered(int.from_bytes(msg.value()[:ID_BYTES], "big"), err, msg)

    def _delivered(self, message_id: int, err: Any, msg: Any) -> None:
        now = self.clock()
        self._last_delivery = now
        if err is not None:
            self.metrics.fail(1, err.name())
            return
        self.metrics.messages_acked += 1
        if self.workload.rate:
            intended = self.start + message_id * self._interval
        else:
            intended = self._append_times[message_id]
        if intended >= self._warmup_until:
            self._latencies.append(now - intended)
        if self.deliveries is not None:
            self.deliveries.append(
                Delivery(msg.topic(), msg.partition(), msg.offset(), [message_id]))

    def _on_error(self, err: Any) -> None:
        self._errors[err.name()] += 1

    def _on_stats(self, text: str) -> None:
        stats = json.loads(text)
        self._stats_seen += 1
        for broker in stats.get("brokers", {}).values():
            node = broker.get("nodeid", -1)
            if node < 0:  # bootstrap and internal entries send no Produce
                continue
            produced = broker.get("req", {}).get("Produce", 0)
            self._produce_requests[node] = max(self._produce_requests.get(node, 0), produced)
            self._retries[node] = max(self._retries.get(node, 0), broker.get("txretries", 0))
        topic = stats.get("topics", {}).get(self.workload.topic)
        if topic:  # windows restart at every emit: the sum over emits is the run's total
            count, size = topic["batchcnt"], topic["batchsize"]
            if count["cnt"]:
                self._batches += count["cnt"]
                self._batch_records += count["sum"]
                self._batch_bytes += size["sum"]
                self._batch_p50.append((size["cnt"], float(size["p50"])))
                self._batch_max = max(self._batch_max, float(size["max"]))

    # ------------------------------------------------------------------ run
    def run(self) -> Results:
        producer = self._producer()
        try:
            self.start = self.clock() + START_LEAD_S
            self._warmup_until = self.start + self.workload.warmup_s
            self._last_progress = self.start
            self._generate(producer)
            end = self._drain(producer)
            self._final_stats(producer)
        finally:
            if self.stop.is_set():
                producer.purge()
                producer.poll(0)
            producer.close()
        return self._results(end)

    def _collect(self) -> None:
        """Move latencies taken in callbacks into the histogram; report progress."""
        if self._latencies:
            self.metrics.latency.record_seconds(np.asarray(self._latencies))
            self._latencies.clear()
        now = self.clock()
        if self.on_progress is not None and now - self._last_progress >= PROGRESS_INTERVAL_S:
            self._last_progress = now
            m = self.metrics
            self.on_progress(Progress(
                elapsed_s=max(0.0, now - self.start), generated=m.messages_generated,
                acknowledged=m.messages_acked, failed=m.messages_failed,
                in_flight_requests=0, requests_sent=sum(self._produce_requests.values()),
                p99_ms=m.latency.percentile_ms(99) if m.latency.count else 0.0,
                target_messages=self.workload.total_messages,
            ))

    def _generate(self, producer: Any) -> None:
        from confluent_kafka import KafkaException

        w = self.workload
        clock = self.clock
        produce, poll = producer.produce, producer.poll
        topic = w.topic
        source = MessageSource(w)
        pad = source.pad
        small = w.message_size < ID_BYTES
        partitions = w.partitions
        keys, key_partitions = source.keys, source.key_partitions
        key_rng = np.random.default_rng(w.seed)
        carry: list[int] = []  # key choices drawn for messages not produced yet
        rate = w.rate
        interval = self._interval
        total = w.total_messages
        start = self.start
        end_by_time = start + w.duration_s if w.duration_s is not None else None
        blocked = BlockedGenerator(self.settings["max.block.ms"] / 1000.0, self.metrics,
                                   QUEUE_FULL_REASON)
        index = 0
        while not self.stop.is_set():
            now = clock()
            if rate is not None:
                due = int((now - start) * rate) + 1 if now >= start else 0
                if total is not None:
                    due = min(due, total)
            else:
                over = end_by_time is not None and now >= end_by_time
                due = index if over else index + CHUNK
                if total is not None:
                    due = min(due, total)
            count = min(due - index, CHUNK)
            if count > 0:
                ids = range(index, index + count)
                if small:
                    values = [source.value(i) for i in ids]
                else:
                    values = [i.to_bytes(ID_BYTES, "big") + pad for i in ids]
                if keys:
                    if len(carry) < count:
                        carry += key_rng.integers(0, len(keys), count - len(carry)).tolist()
                    choice = carry[:count]
                    batch_keys = [keys[c] for c in choice]
                    slots = [key_partitions[c] for c in choice]
                else:
                    batch_keys = [None] * count
                    slots = [i % partitions for i in ids]
                appended = 0
                for message_id, value, key, slot in zip(ids, values, batch_keys, slots,
                                                        strict=True):
                    try:
                        if small:
                            produce(topic, value, key, slot,
                                    partial(self._delivered, message_id))
                        else:
                            produce(topic, value, key, slot)
                    except BufferError:  # queue.buffering.max.* reached: wait, like Java
                        break
                    except KafkaException as exc:  # refused at once: it fails, with its reason
                        self.metrics.fail(1, exc.args[0].name())
                    appended += 1
                if appended:
                    blocked.release(now)
                    if keys:
                        del carry[:appended]
                    if rate is not None:
                        intended = start + np.arange(index, index + appended) * interval
                        if w.warmup_s:
                            intended = intended[intended >= self._warmup_until]
                        self.metrics.generator_lag.record_seconds(now - intended)
                    else:
                        self._append_times.extend([now] * appended)
                    index += appended
                if appended < count:  # the queue is full: a message that waited too long fails
                    failed = blocked.wait(clock(), due - index)
                    if failed and rate is None:
                        self._append_times.extend([now] * failed)
                    index += failed
                self.metrics.messages_generated = index
            poll(0)
            self._collect()
            finished = (total is not None and index >= total) or (
                rate is not None and end_by_time is not None and total is None
                and start + index * interval >= end_by_time
            ) or (rate is None and due == index and end_by_time is not None
                  and now >= end_by_time)
            if finished:
                blocked.release(clock())
                return
            if blocked.blocked:
                deadline = blocked.deadline() or 0.0
                poll(min(max(deadline - clock(), 0.001), 0.01))
            elif rate is not None and index >= due:
                poll(min(max(start + index * interval - clock(), 0.001), 0.05))

    def _drain(self, producer: Any) -> float:
        """Flush (librdkafka then sends at once, ignoring linger.ms, as the engine's flush
        does) and serve delivery reports until every message is acknowledged or failed."""
        deadline = self.clock() + self.settings.delivery_timeout_s + 60.0
        while producer.flush(0.05) > 0 and not self.stop.is_set():
            self._collect()
            if self.clock() > deadline:
                break
        self._collect()
        return max(self._last_delivery, self.start)

    def _final_stats(self, producer: Any) -> None:
        """Wait for one more statistics emit, so the counts include every request."""
        seen = self._stats_seen
        deadline = self.clock() + 3 * STATS_INTERVAL_MS / 1000.0
        while self._stats_seen == seen and self.clock() < deadline and not self.stop.is_set():
            producer.poll(0.05)
        if self._stats_seen == seen:
            self._errors["no final statistics"] += 1

    # -------------------------------------------------------------- results
    def _results(self, end: float) -> Results:
        m = self.metrics
        requests = sum(self._produce_requests.values())
        m.requests_by_broker.update(self._produce_requests)
        m.retried_requests = sum(self._retries.values())
        m.records_sent = self._batch_records
        m.bytes_sent = self._batch_bytes
        m.client_counts = ClientCounts(
            requests=requests, batches=self._batches,
            batch_bytes_p50=_weighted_median(self._batch_p50), batch_bytes_max=self._batch_max,
        )
        warnings = []
        lag = m.generator_lag
        if lag.count and lag.percentile_ms(99) > max(10.0, 0.05 * 1000 * (
                self.workload.duration_s or 1)):
            warnings.append(
                f"The generator fell behind its schedule (lag p99 {lag.percentile_ms(99):.1f} ms,"
                f" max {lag.max_ms:.1f} ms): the load was lower than asked for, and latencies "
                "include that lag."
            )
        if m.messages_failed:
            warnings.append(f"{m.messages_failed} messages failed: {dict(m.failed_reasons)}.")
        if m.blocked_episodes:
            warnings.append(
                f"The generator was blocked on a full librdkafka queue for "
                f"{m.blocked_s * 1000:.1f} ms in total ({m.blocked_episodes} times, longest "
                f"{m.blocked_max_s * 1000:.1f} ms): every message due meanwhile was delayed by it."
            )
        if self._errors:
            warnings.append(f"librdkafka reported errors: {dict(self._errors)}.")
        if self._batches != requests:
            warnings.append(
                f"librdkafka built {self._batches} partition batches in {requests} Produce "
                "requests: partitions and bytes per request show only their means."
            )
        from confluent_kafka import libversion

        return Results(
            mode="librdkafka",
            workload=self.workload.as_dict(),
            settings=dict(self.used_settings),
            bootstrap=self.bootstrap,
            broker="",
            duration_s=max(end - self.start, 1e-9),
            metrics=m,
            warnings=warnings,
            extra={
                "messages_intended": self.workload.total_messages or m.messages_generated,
                "json": {"librdkafka": {
                    "version": libversion()[0],
                    "config": dict(self.config),
                    "statistics_interval_ms": STATS_INTERVAL_MS,
                    "produce_requests_by_broker": {
                        str(k): v for k, v in sorted(self._produce_requests.items())},
                    "batches": self._batches,
                }},
            },
        )


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


def _check_message_fits(workload: Workload, settings: ProducerSettings) -> None:
    """The engine's check, against librdkafka's request limit."""
    size = workload.message_size
    key = b"key-%d" % max(0, workload.keys - 1) if workload.keys else None
    record = DefaultRecordBatchBuilder.estimate_size_in_bytes(key, bytes(size), [])
    limit = settings.max_request_size if "max.request.size" in settings.explicit else 1_000_000
    if record + 256 > limit:
        raise UsageError(
            f"A message of {size} bytes needs about {record} bytes on the wire, which does "
            f"not fit librdkafka's message.max.bytes={limit}. Lower --message-size or raise "
            "it with -X max.request.size=N."
        )


async def run_async(
    workload: Workload,
    settings: ProducerSettings,
    mode: str,
    bootstrap: str,
    on_progress: Callable[[Progress], None] | None = None,
    deliveries: list[Delivery] | None = None,
) -> Results:
    """Run one workload through librdkafka; the same call and Results as the engine's."""
    if getattr(workload, "topics", ()):
        raise UsageError(
            "Mode librdkafka runs the command line's one-topic workload (--topic, "
            "--partitions, --rate, --keys, --message-size); workload files with topics are "
            "not supported in this mode."
        )
    _check_message_fits(workload, settings)
    runner = LibrdkafkaRun(workload, settings, bootstrap, on_progress, deliveries)
    cluster = Cluster(bootstrap, settings["client.id"], settings.request_timeout_s)
    try:
        await cluster.connect()
        await cluster.ensure_topic(workload.topic, workload.partitions)
    finally:
        await cluster.close()
    try:
        return await asyncio.to_thread(runner.run)
    except asyncio.CancelledError:
        runner.stop.set()
        raise


def run(
    workload: Workload,
    settings: ProducerSettings,
    mode: str,
    bootstrap: str,
    on_progress: Callable[[Progress], None] | None = None,
    deliveries: list[Delivery] | None = None,
) -> Results:
    """`producer_core.engine.run` for mode librdkafka."""
    return asyncio.run(run_async(workload, settings, mode, bootstrap, on_progress, deliveries))
