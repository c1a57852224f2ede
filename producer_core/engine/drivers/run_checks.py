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
    if metrics.blocked_episodes:
        warnings.append(
            f"The generator was blocked on {blocked_on} for {metrics.blocked_s * 1000:.1f} ms "
            f"in total ({metrics.blocked_episodes} times, longest "
            f"{metrics.blocked_max_s * 1000:.1f} ms): every message due meanwhile was delayed "
            "by it."
        )
    return warnings
