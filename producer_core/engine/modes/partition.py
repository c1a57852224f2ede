"""Modes partition and none: per-partition linger.ms, and no linger at all.

`linger.ms` is a shared setting (java and librdkafka read it too), so it stays in
`config.SETTINGS`; these modes own no setting of their own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from producer_core.engine.modes.spec import ModeSpec

if TYPE_CHECKING:
    from producer_core.engine.core.linger.base import QueueView, RequestLimits
    from producer_core.engine.core.linger.partition_policy import NoLinger, PartitionLinger
    from producer_core.settings import ProducerSettings
    from producer_core.workload.workload import TopicSpec


def partition_policy(accumulator: QueueView, leaders: list[int], limits: RequestLimits,
                     settings: ProducerSettings, topics: Sequence[TopicSpec]
                     ) -> PartitionLinger:
    from producer_core.engine.core.linger.partition_policy import PartitionLinger
    return PartitionLinger(accumulator, leaders, limits, settings.linger_s)


def no_linger_policy(accumulator: QueueView, leaders: list[int], limits: RequestLimits,
                     settings: ProducerSettings, topics: Sequence[TopicSpec]) -> NoLinger:
    from producer_core.engine.core.linger.partition_policy import NoLinger
    return NoLinger(accumulator, leaders, limits)


PARTITION = ModeSpec(
    "partition", "per-partition linger.ms, a request carries the partitions ready at that "
    "moment, in librdkafka's round robin per broker", policy=partition_policy, reads=("linger.ms",))

NONE = ModeSpec("none", "linger 0", policy=no_linger_policy, sweep_window=None)
