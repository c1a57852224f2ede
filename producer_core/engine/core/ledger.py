"""The outcome ledger: every count a run keeps about its messages and requests, in one
place (the run's `RunMetrics` and each topic's `TopicMetrics`).

Each message ends in exactly one outcome -- acknowledged, failed with a reason, unknown,
written without acknowledgement (acks=0) or, in an aborted transaction, aborted -- and
the ledger books it for the run and for its topic at once, so the two can never disagree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from producer_core.engine.core.accumulator import ProducerBatch, TopicPartition
from producer_core.engine.core.sender import Fail, Unknown, Written
from producer_core.results.metrics import RequestRecord, RunMetrics

AckFeedback = Callable[[int, np.ndarray, float], None]
"""`(broker, latencies_s, now)`: a policy that steers by acknowledged latencies."""


@dataclass
class Delivery:
    """Where one acknowledged batch landed: for tests that read the topic back."""

    topic: str
    partition: int
    base_offset: int
    message_ids: list[int]
    aborted: bool = False
    """Written in a transaction that was then aborted (read_committed never sees it)."""


class Ledger:
    """Books outcomes and requests for the run and per topic."""

    def __init__(self, metrics: RunMetrics, slots: list[TopicPartition],
                 deliveries: list[Delivery] | None = None,
                 on_acknowledged: AckFeedback | None = None) -> None:
        self.metrics = metrics
        self.slots = slots
        self.slot_metrics = [metrics.topics[tp.topic] for tp in slots]
        self.warmup_until: float | None = None
        """Messages intended before this are not in the latency histograms (warm-up;
        None: no warm-up)."""
        self.deliveries = deliveries
        self.on_acknowledged = on_acknowledged
        self.on_txn_ack: Callable[[int, int], None] | None = None
        """A transactional run: acknowledged records count toward the open transaction."""
        self._txn_deliveries_from = 0

    # ------------------------------------------------------------------ requests
    def record_request(self, record: RequestRecord, batches: list[ProducerBatch],
                       lingers: list[float]) -> None:
        """A ProduceRequest was written: the run's request log and each topic's figures
        (a request counts once for each topic it carries)."""
        self.metrics.record_request(record)
        self.metrics.batch_linger.record_seconds(np.asarray(lingers))
        seen = set()
        for batch in batches:
            topic = self.slot_metrics[batch.slot]
            topic.records_sent += batch.record_count
            topic.bytes_sent += batch.size_bytes()
            if id(topic) not in seen:
                seen.add(id(topic))
                topic.requests += 1

    # ------------------------------------------------------------------ outcomes
    def settle(self, action: Fail | Unknown | Written) -> int:
        """Batches that end failed, unknown or (acks=0) written without acknowledgement;
        returns how many records."""
        count = sum(batch.record_count for batch in action.batches)
        if isinstance(action, Written):
            self.metrics.messages_sent_unacknowledged += count
        elif isinstance(action, Unknown):
            self.metrics.unknown(count, action.reason)
        else:
            self.metrics.fail(count, action.reason)
        for batch in action.batches:
            topic = self.slot_metrics[batch.slot]
            if isinstance(action, Written):
                topic.sent_unacknowledged += batch.record_count
            elif isinstance(action, Unknown):
                topic.unknown += batch.record_count
            else:
                topic.failed += batch.record_count
        return count

    def acknowledge(self, broker: int, acknowledged: list[tuple[ProducerBatch, int]],
                    now: float) -> None:
        """Acknowledged batches; one histogram pass per response and topic.

        A response may carry 1,000 batches: their intended send times are joined into one
        array per topic in one C call (`bytes.join` over the batches' arrays), not one
        numpy call per batch."""
        if not acknowledged:
            return
        slot_metrics = self.slot_metrics
        by_topic: dict[int, tuple[Any, list[Any]]] = {}
        total = 0
        for batch, _ in acknowledged:
            topic = slot_metrics[batch.slot]
            count = len(batch.ids)
            total += count
            topic.acknowledged += count
            entry = by_topic.get(id(topic))
            if entry is None:
                by_topic[id(topic)] = (topic, [batch.intended])
            else:
                entry[1].append(batch.intended)
        all_latencies = []
        for topic, arrays in by_topic.values():
            intended = np.frombuffer(b"".join(arrays), dtype=np.float64)
            if self.warmup_until is not None:
                intended = intended[intended >= self.warmup_until]
            latencies = now - intended
            self.metrics.latency.record_seconds(latencies)
            topic.latency.record_seconds(latencies)
            all_latencies.append(latencies)
        if self.on_acknowledged is not None:
            self.on_acknowledged(broker, np.concatenate(all_latencies)
                                 if len(all_latencies) > 1 else all_latencies[0], now)
        self.metrics.messages_acked += total
        if self.on_txn_ack is None and self.deliveries is None:
            return
        for batch, offset in acknowledged:
            if self.on_txn_ack is not None:
                self.on_txn_ack(batch.slot, batch.record_count)
            if self.deliveries is not None:
                tp = self.slots[batch.slot]
                self.deliveries.append(
                    Delivery(tp.topic, tp.partition, offset, batch.ids.tolist()))

    def abort(self, aborted: dict[int, int]) -> None:
        """An aborted transaction's acknowledged records: outcome `aborted`, not
        acknowledged (read_committed consumers never see them)."""
        for slot, count in aborted.items():
            self.metrics.messages_acked -= count
            self.metrics.messages_aborted += count
            topic = self.slot_metrics[slot]
            topic.acknowledged -= count
            topic.aborted += count
        if self.deliveries is not None:
            for delivery in self.deliveries[self._txn_deliveries_from:]:
                delivery.aborted = True

    def transaction_closed(self) -> None:
        """The open transaction ended: deliveries from here on belong to the next one."""
        if self.deliveries is not None:
            self._txn_deliveries_from = len(self.deliveries)
