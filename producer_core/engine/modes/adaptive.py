"""Mode adaptive: KIP-1224's idea (the group and share coordinators' adaptive append linger)
applied to a producer; a broker's collection is flushed behind the
work pending in the engine, so its window follows the load."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from producer_core.engine.modes.collector_settings import COLLECTOR_READS
from producer_core.engine.modes.spec import ModeSpec, SettingSpec

if TYPE_CHECKING:
    from producer_core.engine.core.linger.adaptive_policy import AdaptiveLinger
    from producer_core.engine.core.linger.base import QueueView, RequestLimits
    from producer_core.settings import ProducerSettings
    from producer_core.workload.workload import TopicSpec

MAX_WAIT = SettingSpec(
    "adaptive.linger.max.ms", -1, "int", "mode adaptive: longest a broker's collection "
    "waits for its queued flush before it is sent anyway (-1: no cap, KIP-1224's "
    "append.linger.ms=-1)", -1, 900_000, modes=("adaptive",))


def adaptive_policy(accumulator: QueueView, leaders: list[int], limits: RequestLimits,
                    settings: ProducerSettings, topics: Sequence[TopicSpec]
                    ) -> AdaptiveLinger:
    from producer_core.engine.core.linger.adaptive_policy import AdaptiveLinger
    cap = settings["adaptive.linger.max.ms"]
    max_bytes = settings["broker.batch.max.bytes"]
    return AdaptiveLinger(
        accumulator, leaders, limits,
        max_wait_s=cap / 1000.0 if cap >= 0 else None,
        max_partitions=settings["broker.batch.max.partitions"],
        # unset: KIP-1224's max.message.bytes, a collection that fills one request
        max_bytes=max_bytes if max_bytes > 0 else None,
    )


ADAPTIVE = ModeSpec(
    "adaptive", "KIP-1224's adaptive append linger (the group coordinator's) applied to a "
    "producer, a broker's collection is flushed behind the work pending in the engine",
    policy=adaptive_policy, collector=True, window=None,
    sweep_window="adaptive.linger.max.ms", reads=("adaptive.linger.max.ms", *COLLECTOR_READS),
    settings=(MAX_WAIT,),
    ignores=(("linger.ms", "linger.ms is ignored in mode adaptive: its collection window "
              "adapts to the load"),))
