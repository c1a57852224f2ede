"""The parts of one engine run, wired from the workload, the settings and the cluster's
leaders: accumulator, linger policy, sender, transactions, ledger, the `Producer` core
around them, and the load `Generator`; and the run's `Results` read from them at the end.
Wiring only (no I/O, no decisions), kept out of the asyncio shell (`engine.py`) so that
the shell only does I/O."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from producer_core.engine.core.accumulator import Accumulator, TopicPartition
from producer_core.engine.core.ledger import Delivery, Ledger
from producer_core.engine.core.linger.base import Reporting
from producer_core.engine.core.memory import BatchMemory, BlockedGenerator
from producer_core.engine.core.producer import Producer, ProducerConfig
from producer_core.engine.core.sender import Sender, SenderConfig
from producer_core.engine.core.transactions import TransactionConfig, Transactions
from producer_core.engine.drivers.generator import Generator
from producer_core.engine.drivers.run_checks import (
    batch_pool_advice,
    largest_record,
    run_warnings,
)
from producer_core.engine.modes import make_policy
from producer_core.engine.modes import mode as mode_spec
from producer_core.results.metrics import Results, RunMetrics, Section
from producer_core.settings import ProducerSettings
from producer_core.workload.partitioners import Partitioning
from producer_core.workload.workload import Workload


@dataclass
class EngineParts:
    producer: Producer
    generator: Generator
    blocked: BlockedGenerator
    """The generator's waits for buffer memory (max.block.ms)."""


def transactional_id(workload: Workload, settings: ProducerSettings) -> str | None:
    """The id this producer's requests carry: a share of a distributed run adds its index
    (each share is its own producer, so no share fences another)."""
    tid = settings.transactional_id
    if tid is not None and workload.share_count > 1:
        tid = f"{tid}-{workload.share_index}"
    return tid


def build_parts(workload: Workload, settings: ProducerSettings, mode: str,
                leaders_by_topic: dict[str, list[int]], brokers: set[int],
                metrics: RunMetrics, deliveries: list[Delivery] | None) -> EngineParts:
    """One run's producer and generator; `leaders_by_topic`: each partition's leader."""
    specs = workload.topic_specs()
    layout = workload.slot_layout()
    slots = [TopicPartition(topic, partition) for topic, partition in layout.targets()]
    leaders = [leader for topic in layout.topics for leader in leaders_by_topic[topic]]
    first_slots = list(layout.first_slots)
    spec_of_mode = mode_spec(mode)
    accumulator = Accumulator(slots, spec_of_mode.accumulator_batch_size(settings),
                              settings["compression.type"])
    policy = make_policy(mode, accumulator, leaders, settings, specs)
    sender = Sender(slots, SenderConfig(
        acks=settings.acks, idempotent=settings.idempotent, retries=settings["retries"],
        retry_backoff_s=settings["retry.backoff.ms"] / 1000,
        request_timeout_s=settings.request_timeout_s,
        delivery_timeout_s=settings.delivery_timeout_s, max_in_flight=settings.max_in_flight,
        transactional=settings.transactional_id is not None,
    ))
    tid = transactional_id(workload, settings)
    txn = None if tid is None else Transactions(TransactionConfig(
        tid, settings["transaction.duration.ms"] / 1000, settings["transaction.abort.every"],
        settings["transaction.timeout.ms"]))
    batch_memory = None
    if spec_of_mode.buffer_pool:  # batch.size per batch until its outcome
        record = max(largest_record(spec) for spec in specs)
        batch_memory = BatchMemory(settings["buffer.memory"], max(settings.batch_size, record))
    generator = Generator(workload, first_slots, accumulator, policy, metrics,
                          Partitioning.from_settings(settings))
    producer = Producer(
        slots, leaders, accumulator, policy, sender, Ledger(metrics, slots, deliveries),
        ProducerConfig(acks=settings.acks, retry_backoff_s=settings["retry.backoff.ms"] / 1000,
                       delivery_timeout_s=settings.delivery_timeout_s,
                       request_timeout_ms=int(settings.request_timeout_s * 1000),
                       idempotent=settings.idempotent),
        txn=txn, batch_memory=batch_memory, buffer_memory=settings["buffer.memory"],
        brokers=brokers)
    return EngineParts(producer, generator,
                       BlockedGenerator(settings["max.block.ms"] / 1000.0, metrics))


def engine_results(producer: Producer, mode: str, workload: Workload,
                   settings: ProducerSettings, bootstrap: str, *, start: float, end: float,
                   intended: int | None, coordinator_sent: Mapping[str, int] | None
                   ) -> Results:
    """The run's Results: its metrics, the producer id it ended with, the policy's
    figures and, for a transactional run, the transactions' (`coordinator_sent`: the
    coordinator requests sent, retries included)."""
    metrics = producer.ledger.metrics
    warnings = run_warnings(metrics, workload, "buffer.memory")
    if producer.batch_memory is not None:  # mode java: Java's BufferPool
        advice = batch_pool_advice(metrics, workload, settings["buffer.memory"],
                                   settings.batch_size)
        warnings.extend([advice] if advice else [])
    warnings.extend(settings.warnings)
    state = producer.sender.id
    metrics.idempotence = {
        "enabled": settings.idempotent, "producer_id": state.producer_id,
        "producer_epoch": state.epoch, "epoch_bumps": state.epoch_bumps,
    }
    policy = producer.policy
    reporting = policy if isinstance(policy, Reporting) else None
    collector = reporting.stats() if reporting is not None else None
    txn = producer.txn
    return Results.of_run(
        mode, workload, settings.as_dict(), bootstrap, metrics, start=start, end=end,
        intended=intended or 0, warnings=warnings,
        policy=Section(reporting.stats_key, collector) if reporting and collector else None,
        transactions=(txn.as_dict(coordinator_sent)
                      if txn is not None and coordinator_sent is not None else None),
    )
