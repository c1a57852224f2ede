"""Linger modes: one module per mode, each a pure policy (see `base.LingerPolicy`)."""

from __future__ import annotations

from collections.abc import Sequence

from producer_core.accumulator import Accumulator
from producer_core.config import ProducerSettings
from producer_core.linger.adaptive import AdaptiveLinger
from producer_core.linger.aimd import AimdLinger
from producer_core.linger.base import LingerPolicy, RequestLimits, RequestPlan
from producer_core.linger.broker import BrokerLinger
from producer_core.linger.bruce import BrucePolicy, bruce_config
from producer_core.linger.java import JavaLinger
from producer_core.linger.partition import NoLinger, PartitionLinger
from producer_core.workload import TopicSpec

__all__ = ["LingerPolicy", "RequestLimits", "RequestPlan", "make_policy"]


def make_policy(
    mode: str, accumulator: Accumulator, leaders: list[int], settings: ProducerSettings,
    topics: Sequence[TopicSpec] = (),
) -> LingerPolicy:
    """The policy object for a mode name, configured from the settings.

    `topics` are the workload's topics in slot order (topic i's partitions follow topic
    i-1's in the accumulator), for modes with per-topic options.
    """
    limits = RequestLimits(settings.max_request_size, settings.max_partitions_per_request)
    if mode == "partition":
        return PartitionLinger(accumulator, leaders, limits, settings.linger_s)
    if mode == "none":
        return NoLinger(accumulator, leaders, limits)
    if mode == "java":
        return JavaLinger(accumulator, leaders, limits, settings.linger_s)
    if mode == "broker":
        return BrokerLinger(
            accumulator, leaders, limits,
            linger_s=settings["broker.linger.ms"] / 1000.0,
            max_partitions=settings["broker.batch.max.partitions"],
            max_bytes=settings["broker.batch.max.bytes"],
        )
    if mode == "adaptive":
        cap = settings["adaptive.linger.max.ms"]
        max_bytes = settings["broker.batch.max.bytes"]
        return AdaptiveLinger(
            accumulator, leaders, limits,
            max_wait_s=cap / 1000.0 if cap >= 0 else None,
            max_partitions=settings["broker.batch.max.partitions"],
            # unset: KIP-1224's max.message.bytes, a collection that fills one request
            max_bytes=max_bytes if max_bytes > 0 else None,
        )
    if mode == "aimd":
        target = settings["aimd.target.p99.ms"]
        return AimdLinger(
            accumulator, leaders, limits,
            min_s=settings["aimd.linger.min.ms"] / 1000.0,
            max_s=settings["aimd.linger.max.ms"] / 1000.0,
            initial_s=settings["aimd.linger.initial.ms"] / 1000.0,
            step_s=settings["aimd.linger.step.ms"] / 1000.0,
            decrease_factor=settings["aimd.decrease.factor"],
            increase_ratio=settings["aimd.rtt.increase.ratio"],
            decrease_ratio=settings["aimd.rtt.decrease.ratio"],
            max_in_flight=settings.max_in_flight,
            target_p99_s=target / 1000.0 if target >= 0 else None,
            target_interval_s=settings["aimd.target.interval.ms"] / 1000.0,
            max_partitions=settings["broker.batch.max.partitions"],
            max_bytes=settings["broker.batch.max.bytes"],
        )
    if mode == "bruce":
        keyless = [topic.keys.kind == "none" for topic in topics]
        return BrucePolicy(accumulator, leaders, limits, bruce_config(settings, topics),
                           keyless)
    raise ValueError(f"unknown mode {mode!r}")
