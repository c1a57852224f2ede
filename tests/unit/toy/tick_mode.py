"""A toy mode, written the way a new mode is added to producer_core/engine/modes/: its own
setting, its check, its help text and its policy, in one module. (It lives under tests/
so that it is not a mode of kbatch; test_toy_mode.py registers it with one line.)

Mode `tick`: every `tick.interval.ms` each broker gets one request with everything
queued for it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from producer_core.engine.core.accumulator import drain_request
from producer_core.engine.core.linger.base import (
    LingerPolicy,
    PollContext,
    QueueView,
    RequestLimits,
    RequestPlan,
)
from producer_core.engine.modes.spec import ModeSpec, SettingSpec
from producer_core.errors import ConfigError

if TYPE_CHECKING:
    from producer_core.settings import ProducerSettings
    from producer_core.workload.workload import TopicSpec

INTERVAL = SettingSpec("tick.interval.ms", 4, "int", "mode tick: how often every broker "
                       "gets one request with all it has queued", 1, 60_000, modes=("tick",))


class TickPolicy(LingerPolicy):
    name = "tick"

    def __init__(self, accumulator: QueueView, leaders: list[int], limits: RequestLimits,
                 interval_s: float) -> None:
        super().__init__(accumulator, leaders, limits)
        self.interval_s = interval_s
        self.next_tick: float | None = None
        self.ticks = 0

    def on_append(self, slot: int, event: int, now: float) -> None:
        if self.next_tick is None:
            self.next_tick = now + self.interval_s

    def on_requeue(self, slot: int, now: float) -> None:
        self.on_append(slot, 0, now)

    def poll(self, now: float, context: PollContext) -> list[RequestPlan]:
        self.context = context
        if not context.flushing and (self.next_tick is None or now < self.next_tick):
            return []
        self.ticks += 1
        self.next_tick = None
        plans = []
        for broker in sorted(set(self.leaders)):
            slots = [s for s, leader in enumerate(self.leaders)
                     if leader == broker and self.accumulator.has_data(s)]
            while slots and context.free_slots.get(broker, 0) > len(
                    [p for p in plans if p.broker == broker]):
                batches = drain_request(self.accumulator, slots, now,  # type: ignore[arg-type]  # the policy's QueueView
                                        self.limits.max_request_size, self.limits.max_partitions)
                plans.append(RequestPlan(broker, batches, "tick"))
            if slots:  # no free request slot: the rest goes at the next tick
                self.next_tick = now + self.interval_s
        return plans

    def next_wakeup(self) -> float | None:
        return self.next_tick

    def stats(self) -> dict[str, object]:
        return {"ticks": self.ticks}

    stats_key = "tick"


def check_tick(explicit: set[str], values: Mapping[str, Any], warnings: list[str]) -> None:
    if values["tick.interval.ms"] > values["delivery.timeout.ms"]:
        raise ConfigError("tick.interval.ms is longer than delivery.timeout.ms.")


def tick_policy(accumulator: QueueView, leaders: list[int], limits: RequestLimits,
                settings: ProducerSettings, topics: Sequence[TopicSpec]) -> TickPolicy:
    return TickPolicy(accumulator, leaders, limits, settings["tick.interval.ms"] / 1000.0)


TICK = ModeSpec("tick", "every broker gets one request per tick.interval.ms",
                policy=tick_policy, window="tick.interval.ms",
                sweep_window="tick.interval.ms", reads=("tick.interval.ms",),
                settings=(INTERVAL,), check=check_tick)
