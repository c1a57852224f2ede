"""Mode broker: the broker-level collector of the broker-level linger design
(`broker.linger.ms`, timed from the first partition a broker's collection takes)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from producer_core.engine.modes.collector_settings import COLLECTOR_READS, COLLECTOR_SETTINGS
from producer_core.engine.modes.spec import ModeSpec, SettingSpec

if TYPE_CHECKING:
    from producer_core.engine.core.linger.base import QueueView, RequestLimits
    from producer_core.engine.core.linger.broker_policy import BrokerLinger
    from producer_core.settings import ProducerSettings
    from producer_core.workload.workload import TopicSpec

LINGER = SettingSpec(
    "broker.linger.ms", 5, "int", "broker-level linger: how long a broker's batch collector "
    "gathers partitions, timed from the first partition it collects", 0, 900_000,
    modes=("broker", "librdkafka-broker"))


def broker_policy(accumulator: QueueView, leaders: list[int], limits: RequestLimits,
                  settings: ProducerSettings, topics: Sequence[TopicSpec]) -> BrokerLinger:
    from producer_core.engine.core.linger.broker_policy import BrokerLinger
    return BrokerLinger(
        accumulator, leaders, limits,
        linger_s=settings["broker.linger.ms"] / 1000.0,
        max_partitions=settings["broker.batch.max.partitions"],
        max_bytes=settings["broker.batch.max.bytes"],
    )


BROKER = ModeSpec(
    "broker", "broker-level collector (broker.linger.ms)", policy=broker_policy,
    collector=True, window="broker.linger.ms", sweep_window="broker.linger.ms",
    reads=("broker.linger.ms", *COLLECTOR_READS), settings=(LINGER, *COLLECTOR_SETTINGS),
    ignores=(("linger.ms", "linger.ms is ignored in mode broker; use broker.linger.ms "
              "(deprecated per the broker-level linger design)"),))
