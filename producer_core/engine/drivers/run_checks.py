"""Checks and warnings every runner shares (the in-repo engine and the librdkafka one):
whether the largest message fits a request, and what a person should know about a run."""

from __future__ import annotations

from collections.abc import Iterable

from aiokafka.record.default_records import DefaultRecordBatchBuilder

from producer_core.engine.drivers.run_types import INTERRUPTED
from producer_core.errors import UsageError
from producer_core.results.metrics import RunMetrics
from producer_core.workload.workload import TopicSpec, Workload

REQUEST_HEADROOM_BYTES = 256
"""Room for the request, topic and partition headers around one record batch."""


def largest_record(spec: TopicSpec) -> int:
    """Wire size of a topic's largest record (longest key, largest value, its headers)."""
    key = b"key-%d" % max(0, spec.keys.count - 1) if spec.keys.count else None
    return DefaultRecordBatchBuilder.estimate_size_in_bytes(
        key, bytes(spec.sizes.largest), list(spec.headers))


def check_message_fits(specs: Iterable[TopicSpec], limit: int, limit_name: str) -> None:
    """Refuse a workload whose largest message could never be sent in one request."""
    for spec in specs:
        record = largest_record(spec)
        if record + REQUEST_HEADROOM_BYTES > limit:
            raise UsageError(
                f"A message of {spec.sizes.largest} bytes (topic {spec.name!r}) needs about "
                f"{record} bytes on the wire, which does not fit {limit_name}={limit}. Lower "
                "the message size or raise the limit with -X max.request.size=N."
            )


def run_warnings(metrics: RunMetrics, workload: Workload, blocked_on: str) -> list[str]:
    """Sentences about a run's honesty: generator lag, failures, time blocked on memory."""
    warnings = []
    lag = metrics.generator_lag
    if lag.count and lag.percentile_ms(99) > max(10.0, 0.05 * 1000 * (workload.duration_s or 1)):
        warnings.append(
            f"The generator fell behind its schedule (lag p99 {lag.percentile_ms(99):.1f} ms, "
            f"max {lag.max_ms:.1f} ms): the load was lower than asked for, and latencies "
            "include that lag."
        )
    stopped = metrics.failed_reasons.get(INTERRUPTED, 0)
    failed = {k: v for k, v in metrics.failed_reasons.items() if k != INTERRUPTED}
    if metrics.messages_failed - stopped:
        warnings.append(f"{metrics.messages_failed - stopped} messages failed (not written): "
                        f"{failed}.")
    if stopped:
        warnings.append(f"{stopped} messages were not sent: the run was stopped (a signal) "
                        "before their turn; they count as failed in the results "
                        f"(failed_reasons '{INTERRUPTED}'), but nothing went wrong with them.")
    if metrics.messages_unknown:
        warnings.append(f"{metrics.messages_unknown} messages have an unknown outcome (they "
                        f"may have been written): {dict(metrics.unknown_reasons)}.")
    if metrics.blocked_episodes or metrics.blocked_s > 0:
        how = (f"{metrics.blocked_episodes} times, longest {metrics.blocked_max_s * 1000:.1f} ms"
               if metrics.blocked_episodes else "the client's own count")
        warnings.append(
            f"The generator was blocked on {blocked_on} for {metrics.blocked_s * 1000:.1f} ms "
            f"in total ({how}): every message due meanwhile was delayed by it."
        )
    return warnings


def batch_pool_advice(metrics: RunMetrics, workload: Workload, buffer_memory: int,
                      batch_size: int) -> str | None:
    """Why a Java-style producer that waited for memory may have sent one record a batch.

    The Java producer's BufferPool gives every batch `batch.size` bytes, whatever it holds.
    Once a send() waits, every batch is ready, so after that each freed allocation comes
    back as a new batch of one record until every partition has an open batch again
    (docs/findings/fidelity.md, "the one-record trap"). With room for fewer than
    `TRAP_BATCHES_PER_PARTITION` batches per partition that is likely; say so, with the fix.
    """
    if not (metrics.blocked_episodes or metrics.blocked_s > 0) or batch_size <= 0:
        return None
    partitions = sum(spec.partitions for spec in workload.topic_specs())
    batches = buffer_memory // batch_size
    if batches >= TRAP_BATCHES_PER_PARTITION * partitions:
        return None
    return (
        f"buffer.memory={buffer_memory} holds {batches:,} batches of batch.size={batch_size}, "
        f"{batches / partitions:.1f} per partition for {partitions:,} partitions. Every batch "
        "takes batch.size of it however few records it holds, and once a send() waits every "
        "batch is sent: the next ones may hold one record each until every partition has a "
        "batch again. Raise buffer.memory or lower batch.size to keep batching."
    )


TRAP_BATCHES_PER_PARTITION = 3
"""Room for fewer batches a partition than this: one batch lingering and one in flight
per partition leave almost none for the next."""
