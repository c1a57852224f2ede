"""The linger policy interface: the core every mode implements, the capabilities a mode
opts into, the poll context, and the collector's composable triggers (synthetic time)."""

from __future__ import annotations

import pytest

from producer_core.config import build_settings
from producer_core.engine.core.accumulator import Accumulator, TopicPartition
from producer_core.engine.core.linger.base import (
    Admission,
    LatencyFeedback,
    PollContext,
    Reporting,
    RequestLimits,
    RunStart,
)
from producer_core.engine.core.linger.collector_policy import (
    Collector,
    CollectorPolicy,
    Flush,
    MaxPartitions,
    Trigger,
    Window,
)
from producer_core.engine.modes import REGISTRY, make_policy

ENGINE_MODES = [spec.name for spec in REGISTRY if spec.policy is not None]
FREE = PollContext({1: 5})


def policy_of(mode: str):
    settings = build_settings(mode=mode)
    acc = Accumulator([TopicPartition("t", p) for p in range(4)], settings.batch_size)
    return acc, make_policy(mode, acc, [1] * 4, settings)


def append(acc: Accumulator, policy, slot: int, now: float) -> None:
    event = acc.append(slot, 0, None, b"v" * 10, now, now, 0)
    if event:
        policy.on_append(slot, event, now)


@pytest.mark.parametrize("mode", ENGINE_MODES)
def test_each_mode_opts_into_exactly_the_capabilities_it_uses(mode: str) -> None:
    _, policy = policy_of(mode)
    assert isinstance(policy, RunStart) == (mode == "aimd")
    assert isinstance(policy, LatencyFeedback) == (mode == "aimd")
    assert isinstance(policy, Admission) == (mode == "bruce")
    assert isinstance(policy, Reporting) == (mode not in ("partition", "none"))
    for hook in ("set_backlog", "set_memory_exhausted", "start_flush"):
        assert not hasattr(policy, hook)  # engine state comes in the poll's context


@pytest.mark.parametrize("mode", ENGINE_MODES)
def test_a_flushing_context_sends_everything_in_every_mode(mode: str) -> None:
    acc, policy = policy_of(mode)
    for slot in range(4):
        append(acc, policy, slot, now=1.0)
    plans = policy.poll(1.0, PollContext({1: 5}, flushing=True))
    assert acc.empty
    assert sum(b.record_count for p in plans for b in p.batches) == 4
    assert policy.flushing  # the last context is kept for next_wakeup
    assert policy.next_wakeup() is None


@pytest.mark.parametrize("mode", ENGINE_MODES)
def test_no_free_request_slot_in_the_context_means_no_request(mode: str) -> None:
    acc, policy = policy_of(mode)
    append(acc, policy, 0, now=1.0)
    assert policy.poll(1.0, PollContext({1: 0}, flushing=True)) == []
    assert policy.poll(1.0, PollContext({}, flushing=True)) == []  # a broker missing: none
    assert not acc.empty


class Pairs(CollectorPolicy):
    """A collector mode composed from shared triggers: pairs of partitions, or a window."""

    name = "pairs"
    reasons = ("flush", "max_partitions", "broker_linger")

    def triggers(self) -> list[Trigger]:
        return [Flush(), MaxPartitions(2), Window()]

    def window_s(self, collector: Collector) -> float:
        return 0.010


def test_a_collector_mode_is_its_trigger_chain() -> None:
    acc = Accumulator([TopicPartition("t", p) for p in range(4)], 16384)
    policy = Pairs(acc, [1] * 4, RequestLimits(1 << 20))
    append(acc, policy, 0, now=1.000)
    assert policy.poll(1.000, FREE) == []
    assert policy.next_wakeup() == pytest.approx(1.010)  # the window's trigger
    append(acc, policy, 1, now=1.002)
    assert policy.next_wakeup() == pytest.approx(1.000)  # the pair holds: poll at once
    append(acc, policy, 2, now=1.003)  # the first trigger that holds is the reason
    [plan] = policy.poll(1.003, FREE)
    assert plan.reason == "max_partitions" and [b.slot for b in plan.batches] == [0, 1, 2]
    append(acc, policy, 3, now=1.004)
    assert policy.poll(1.013, FREE) == []
    [plan] = policy.poll(1.014, FREE)
    assert plan.reason == "broker_linger"
    assert policy.stats()["sends_by_reason"] == {
        "flush": 0, "max_partitions": 1, "broker_linger": 1}
