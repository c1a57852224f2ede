"""The load generator: the workload's schedules turned into appends, one pass at a time.

Each topic has its schedule (when each message is intended), its message source (key,
value, partition) and a contiguous range of accumulator slots. A pass appends every
message that is due (at most `CHUNK` per topic), tells the policy about slots that became
non-empty or filled a batch, and records the generator's lag. A policy with the
`Admission` capability (mode bruce) also decides how many messages are admitted and where
keyless ones go; the generator checks that once, not per message. Message ids are
`topic index << 40 | sequence`, so a reader can tell every message of a run apart.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from producer_core.engine.core.accumulator import BATCH_FILLED, BULK_MIN_RECORDS, Accumulator
from producer_core.engine.core.linger.base import Admission, AppendListener
from producer_core.engine.core.memory import RECORD_OVERHEAD_MAX
from producer_core.results.metrics import RunMetrics, TopicMetrics
from producer_core.workload.closed_loop import ClosedLoopSchedule
from producer_core.workload.message_source import TopicSource, make_schedule, scheduled_total
from producer_core.workload.partitioners import Partitioning
from producer_core.workload.partitioners.sticky import record_sizes
from producer_core.workload.partitioners.topic import TopicPartitioner
from producer_core.workload.schedule import Schedule, Unthrottled
from producer_core.workload.workload import TopicSpec, Workload

CHUNK = 1000
"""Messages per topic per pass before the loop lets responses in and polls the policy."""
CYCLE_PARTITIONS = 4096
"""Topics with up to this many partitions keep a precomputed round-robin cycle."""


@dataclass
class TopicState:
    index: int
    spec: TopicSpec
    first_slot: int
    schedule: Schedule | ClosedLoopSchedule
    source: TopicSource
    metrics: TopicMetrics
    partitioner: TopicPartitioner
    sequence: int = 0
    cycle: list[int] = field(default_factory=list)
    """Round-robin slots of consecutive messages from partition 0, a pass long (any pass
    starts within its first `partitions`): a pass's slots are one slice of it."""


class Generator:
    """Appends what the schedules say is due; pure apart from the wall-clock timestamp."""

    def __init__(self, workload: Workload, first_slots: list[int], accumulator: Accumulator,
                 policy: AppendListener, metrics: RunMetrics,
                 partitioning: Partitioning | None = None) -> None:
        self.workload = workload
        self.accumulator = accumulator
        self.policy = policy
        self._admission = policy if isinstance(policy, Admission) else None
        self.metrics = metrics
        self.start = 0.0
        self.warmup_until = 0.0
        self.cap = workload.messages
        self.partitioning = partitioning or Partitioning()
        leaders = getattr(policy, "leaders", None)
        self.topics: list[TopicState] = []
        for index, (spec, first_slot) in enumerate(
                zip(workload.topic_specs(), first_slots, strict=True)):
            topic_metrics = metrics.topics.setdefault(spec.name, TopicMetrics())
            source = TopicSource(spec, index, workload.seed, workload.share_index)
            partitioner = TopicPartitioner(
                self.partitioning.for_topic(spec.partitioner), spec.partitions, first_slot,
                accumulator, leaders, (workload.seed * 104729 + index) * 31
                + workload.share_index, source.keys, source.key_partitions)
            self.topics.append(TopicState(
                index, spec, first_slot, make_schedule(spec, workload.duration_s,
                                                       workload.seed * 7919 + index),
                source, topic_metrics, partitioner))
            if spec.partitions <= CYCLE_PARTITIONS:
                self.topics[-1].cycle = [first_slot + k % spec.partitions
                                         for k in range(spec.partitions + CHUNK)]
        self.closed: ClosedLoopSchedule | None = None
        """The closed loop's senders (`Workload.closed_loop`), or None: open loop."""
        self.completions: Callable[[], int] = metrics.settled
        """Messages completed so far, which a closed loop's senders wait for: the engine's
        ledger keeps `metrics` current; a driver whose client settles messages elsewhere
        (the Java producer) sets its own count."""
        self._skipped = 0
        self._observed_at = 0.0
        if workload.closed_loop is not None:
            self.closed = ClosedLoopSchedule(workload.closed_loop, workload.think_time_s,
                                             workload.duration_s)
            self.topics[0].schedule = self.closed
        self._takes_arrays = isinstance(accumulator, Accumulator)
        self.unthrottled = any(isinstance(t.schedule, Unthrottled) for t in self.topics)
        self.horizon = workload.duration_s if workload.duration_s is not None else math.inf
        self._counted: tuple[float, list[int]] | None = None
        """`due`'s counts and their `now`, until the next `generate` or `skip` uses them."""

    def begin(self, start: float) -> None:
        self.start = start
        self.warmup_until = start + self.workload.warmup_s

    @property
    def generated(self) -> int:
        return self.metrics.messages_generated

    def intended_total(self) -> int | None:
        """Messages the run intends to send, if known before it runs."""
        totals = [scheduled_total(t.schedule) for t in self.topics]
        if any(t is None for t in totals):
            return self.cap
        total = sum(t for t in totals if t is not None)
        return min(total, self.cap) if self.cap is not None else total

    def _room(self) -> float:
        return math.inf if self.cap is None else self.cap - self.generated

    def _due_counts(self, now: float) -> list[int]:
        elapsed = now - self.start
        room = self._room()
        if self.closed is not None:  # acknowledgements free senders
            self.closed.observe(elapsed, self.completions() + self._skipped)
            self._observed_at = elapsed
        counts = []
        for topic in self.topics:
            schedule = topic.schedule
            if isinstance(schedule, Unthrottled):  # due at once, from the run's start on
                due = CHUNK if 0.0 <= elapsed < self.horizon else 0
            else:
                due = schedule.pending(elapsed, CHUNK)
            due = int(min(due, room))
            room -= due
            counts.append(due)
        return counts

    def due(self, now: float) -> int:
        """Messages due now (bounded by a pass and the message cap)."""
        counts = self._due_counts(now)
        self._counted = (now, counts)  # the engine asks, then generates at the same `now`
        return sum(counts)

    def _counts_for(self, now: float) -> list[int]:
        counted, self._counted = self._counted, None
        if counted is not None and counted[0] == now:
            return counted[1]
        return self._due_counts(now)

    def skip(self, count: int, now: float, reason: str) -> None:
        """Take `count` due messages off the schedules without sending them (they failed
        before they could be appended); they are counted against their topics."""
        elapsed = now - self.start
        for topic, due in zip(self.topics, self._counts_for(now), strict=True):
            take = min(due, count)
            if take:
                topic.schedule.take(elapsed, take)
                topic.sequence += take
                topic.metrics.generated += take
                topic.metrics.failed += take
                self._skipped += take  # completed, for a closed loop's senders
                self.metrics.messages_generated += take
                count -= take

    def due_records(self, now: float) -> tuple[list[int], list[int]] | None:
        """The due messages' slots and record sizes (upper bounds: `RECORD_OVERHEAD_MAX`
        over key, value and headers), in the order `generate` appends them, or None when
        they cannot be known without drawing them: a policy that admits and places
        messages (bruce), a partitioner other than round robin or a key table, keys
        drawn at random, values of varying size."""
        if self._admission is not None:
            return None
        counts = self._counts_for(now)
        self._counted = (now, counts)  # `generate` at this `now` uses them again
        slots: list[int] = []
        sizes: list[int] = []
        for topic, due in zip(self.topics, counts, strict=True):
            if not due:
                continue
            source, partitioner = topic.source, topic.partitioner
            fixed = source.fixed_size
            if fixed is None:
                return None
            seqs = range(topic.sequence, topic.sequence + due)
            base = fixed + source.header_bytes + RECORD_OVERHEAD_MAX
            if source.spec.keys.kind == "none":
                if partitioner.keyless is not None:
                    return None
                first, partitions = topic.first_slot, topic.spec.partitions
                slots.extend(first + seq % partitions for seq in seqs)
                sizes.extend([base] * due)
            else:
                key_indexes = source.key_indexes(seqs) if source.spec.keys.kind not in (
                    "uniform", "zipf") else None
                if (key_indexes is None or partitioner.keyed is not None
                        or partitioner.random_keys):
                    return None
                table, keys = partitioner.key_partitions, source.keys
                slots.extend(topic.first_slot + table[k] for k in key_indexes)
                sizes.extend(base + len(keys[k]) for k in key_indexes)
        return slots, sizes

    def generate(self, now: float, limit: int | None = None) -> int:
        """Append the due messages (the first `limit` of them, topic by topic, when
        given); returns how many were appended."""
        appended = 0
        counts = self._counts_for(now)
        if limit is not None:
            counts = _first(counts, limit)
        if not any(counts):
            return 0
        timestamp_ms = int(time.time() * 1000)
        elapsed = now - self.start
        for topic, due in zip(self.topics, counts, strict=True):
            if due:
                offsets = topic.schedule.take(elapsed, due)
                appended += self._append_topic(topic, offsets, now, timestamp_ms)
        return appended

    def _append_topic(self, topic: TopicState, offsets: np.ndarray, now: float,
                      timestamp_ms: int) -> int:
        count = len(offsets)
        if not count:
            return 0
        source = topic.source
        seqs = range(topic.sequence, topic.sequence + count)
        topic.sequence += count
        admitted = count if self._admission is None else self._admission.admit(
            topic.index, count, now)
        if admitted < count:
            self.metrics.discard(topic.spec.name, count - admitted,
                                 f"rate_limit ({topic.spec.name})")
            self.metrics.messages_generated += count - admitted
            topic.metrics.generated += count - admitted
            seqs = seqs[:admitted]
            offsets = offsets[:admitted]
            count = admitted
            if not count:
                return 0
        ids = range(source.id_base + seqs.start, source.id_base + seqs.stop)
        values = source.values(ids)
        key_indexes = source.key_indexes(seqs)
        fixed = source.fixed_size
        payload = count * fixed if fixed is not None else sum(map(len, values))
        first = topic.first_slot
        partitioner = topic.partitioner
        if key_indexes is None:
            keys = None
            slots = None if self._admission is None else self._admission.keyless_slots(
                topic.index, first, topic.spec.partitions, seqs, now)
            if slots is None:
                chooser = partitioner.keyless
                if chooser is None:  # round_robin: the hot path, a slice of the cycle
                    partitions = topic.spec.partitions
                    begin = seqs.start % partitions
                    if begin + count <= len(topic.cycle):
                        slots = topic.cycle[begin:begin + count]
                    else:
                        slots = [first + seq % partitions for seq in seqs]
                else:
                    sizes = record_sizes(values, None, source.header_bytes)
                    slots = [first + p for p in chooser.choose(sizes, now)]
        else:
            keys = [source.keys[k] for k in key_indexes]
            if partitioner.keyed is None and not partitioner.random_keys:
                table = partitioner.key_partitions
                slots = [first + table[k] for k in key_indexes]
            else:
                sizes = record_sizes(values, keys, source.header_bytes)
                slots = [first + p for p in partitioner.keyed_partitions(key_indexes, sizes,
                                                                         now)]
            payload += sum(map(len, keys))
        self.metrics.payload_bytes += payload
        topic.metrics.payload_bytes += payload
        if isinstance(topic.schedule, Unthrottled):
            intended_array = np.full(count, now)
        else:
            intended_array = self.start + offsets
        # the accumulator takes a large pass's intended times as the array (it sorts
        # them with numpy); other sinks (librdkafka, Java) and small passes, a list
        intended = (intended_array if self._takes_arrays and count >= BULK_MIN_RECORDS
                    else intended_array.tolist())
        on_append = self.policy.on_append
        for slot, event in self.accumulator.append_many(
                slots, ids, keys, values, intended, now, timestamp_ms, source.headers,
                value_size=fixed):
            on_append(slot, event, now)
        if partitioner.closes is not None:
            for slot in partitioner.closes.finish_pass():
                on_append(slot, BATCH_FILLED, now)
        if not isinstance(topic.schedule, Unthrottled):
            lags = now - intended_array
            if self.workload.warmup_s:
                lags = lags[intended_array >= self.warmup_until]
            self.metrics.generator_lag.record_seconds(lags)
        self.metrics.messages_generated += count
        topic.metrics.generated += count
        return count

    def finished(self, now: float) -> bool:
        """Nothing more to generate: the cap is reached or every schedule has ended."""
        if self.cap is not None and self.generated >= self.cap:
            return True
        if self.unthrottled:
            return now - self.start >= self.horizon
        if self.closed is not None:
            return self.closed.over(now - self.start)
        return all(t.schedule.next_offset() is None for t in self.topics)

    def next_due(self) -> float | None:
        """When the next scheduled message is due (None: nothing scheduled). In a closed
        loop, a completion not yet seen by `due` makes a sender due at once (the last
        time it looked), so a loop woken early by that acknowledgement does not sleep."""
        closed = self.closed
        if (closed is not None and closed.in_flight
                and self.completions() + self._skipped > closed.completed):
            return self.start + self._observed_at
        offsets = [t.schedule.next_offset() for t in self.topics
                   if not isinstance(t.schedule, Unthrottled)]
        due = [o for o in offsets if o is not None]
        return self.start + min(due) if due else None


def _first(counts: list[int], limit: int) -> list[int]:
    """Per-topic counts cut to the first `limit` messages, topic by topic."""
    cut = []
    for count in counts:
        take = min(count, limit)
        cut.append(take)
        limit -= take
    return cut


class ClientBatching:
    """The generator's policy hook when a real client (librdkafka, the Java producer)
    batches and sends by itself: no events (and, without `Admission`, every message is
    admitted and keyless ones follow the partitioner)."""

    def on_append(self, slot: int, event: int, now: float) -> None:
        pass
