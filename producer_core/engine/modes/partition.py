"""Modes partition and none: per-partition linger.ms, and no linger at all.

`linger.ms` is a shared setting (java and librdkafka read it too), so it stays in
`config.SETTINGS`; these modes own no setting of their own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from producer_core.engine.modes.spec import ModeSpec, SettingSpec

if TYPE_CHECKING:
    from producer_core.engine.core.linger.base import QueueView, RequestLimits
    from producer_core.engine.core.linger.partition_policy import NoLinger, PartitionLinger
    from producer_core.settings import ProducerSettings
    from producer_core.workload.workload import TopicSpec

IDEMPOTENT_MAX_INFLIGHT_MESSAGES = 5
"""librdkafka's `RD_KAFKA_IDEMP_MAX_INFLIGHT`, which it compares with a partition's
messages in flight (`rktp_msgs_inflight`), not its requests."""

MAX_INFLIGHT_MESSAGES = SettingSpec(
    "partition.max.inflight.messages", -1, "int", "mode partition: a partition builds a "
    "request only while fewer of its messages than this are in flight (librdkafka with "
    "idempotence: 5; -1: 5 with enable.idempotence, no cap without; 0: no cap)",
    -1, 1_000_000, modes=("partition",))


def max_inflight_messages(settings: ProducerSettings) -> int | None:
    """The per-partition cap of messages in flight mode partition applies, or None."""
    value = settings["partition.max.inflight.messages"]
    if value < 0:
        return IDEMPOTENT_MAX_INFLIGHT_MESSAGES if settings.idempotent else None
    return value or None


def partition_policy(accumulator: QueueView, leaders: list[int], limits: RequestLimits,
                     settings: ProducerSettings, topics: Sequence[TopicSpec]
                     ) -> PartitionLinger:
    from producer_core.engine.core.linger.partition_policy import PartitionLinger
    return PartitionLinger(accumulator, leaders, limits, settings.linger_s,
                           max_inflight_messages(settings), settings.max_in_flight)


def no_linger_policy(accumulator: QueueView, leaders: list[int], limits: RequestLimits,
                     settings: ProducerSettings, topics: Sequence[TopicSpec]) -> NoLinger:
    from producer_core.engine.core.linger.partition_policy import NoLinger
    return NoLinger(accumulator, leaders, limits)


PARTITION = ModeSpec(
    "partition", "per-partition linger.ms, a request carries the partitions ready at that "
    "moment, in librdkafka's round robin per broker", policy=partition_policy,
    reads=("linger.ms", "partition.max.inflight.messages"), settings=(MAX_INFLIGHT_MESSAGES,))

NONE = ModeSpec("none", "linger 0", policy=no_linger_policy, sweep_window=None)
