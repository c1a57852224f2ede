"""Linger modes: one module per mode, each a pure policy (see `base.LingerPolicy`; the
collector modes broker, adaptive and aimd share `collector.CollectorPolicy`).

Which module builds which mode's policy is declared in `producer_core.modes`.
"""

from __future__ import annotations

from collections.abc import Sequence

from producer_core.accumulator import Accumulator
from producer_core.config import ProducerSettings
from producer_core.linger.base import LingerPolicy, PollContext, RequestLimits, RequestPlan
from producer_core.modes import mode as mode_spec
from producer_core.workload import TopicSpec

__all__ = ["LingerPolicy", "PollContext", "RequestLimits", "RequestPlan", "make_policy"]


def make_policy(
    mode: str, accumulator: Accumulator, leaders: list[int], settings: ProducerSettings,
    topics: Sequence[TopicSpec] = (),
) -> LingerPolicy:
    """The policy object for a mode name, configured from the settings.

    `topics` are the workload's topics in slot order (topic i's partitions follow topic
    i-1's in the accumulator), for modes with per-topic options.
    """
    limits = RequestLimits(settings.max_request_size, settings.max_partitions_per_request)
    factory = mode_spec(mode).load_policy()
    return factory(accumulator, leaders, limits, settings, topics)
