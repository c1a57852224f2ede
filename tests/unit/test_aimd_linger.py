"""Mode `aimd`: the controller with synthetic response times, and the collector it drives."""

from __future__ import annotations

import heapq
import itertools
import math

import numpy as np
import pytest

from producer_core.config import build_settings
from producer_core.engine.core.accumulator import Accumulator, TopicPartition
from producer_core.engine.core.linger.aimd_policy import MAX_POINTS, AimdLinger
from producer_core.engine.core.linger.base import PollContext, RequestLimits
from producer_core.engine.modes import make_policy
from producer_core.errors import ConfigError

VALUE = bytes(10)
MS = 0.001


def make(partitions: int = 4, leaders: list[int] | None = None, **options):
    acc = Accumulator([TopicPartition("t", p) for p in range(partitions)], 16384)
    policy = AimdLinger(acc, leaders or [1] * partitions, RequestLimits(1 << 20, None), **options)
    return acc, policy


def append(acc, policy, slot: int, now: float) -> None:
    event = acc.append(slot, 0, None, VALUE, now, now, 0)
    if event:
        policy.on_append(slot, event, now)


def window_ms(policy, broker: int = 1) -> float:
    return round(policy.broker_window_s(broker) / MS, 6)


def respond(policy, rtt_ms: float, now: float, broker: int = 1, **kwargs) -> float:
    policy.on_response(broker, rtt_ms * MS, now, kwargs.get("throttle_ms", 0),
                       kwargs.get("retried", False))
    return window_ms(policy, broker)


# ------------------------------------------------------------ the seed's rules
def test_additive_increase_while_the_round_trip_is_at_its_baseline_up_to_the_maximum():
    _, policy = make(initial_s=5 * MS, step_s=1 * MS, max_s=9 * MS)
    assert window_ms(policy) == 5.0
    assert [respond(policy, 1.0, now=i) for i in range(6)] == [6.0, 7.0, 8.0, 9.0, 9.0, 9.0]
    stats = policy.stats()["aimd"]["brokers"]["1"]
    assert stats["increases"] == 6 and stats["rtt_baseline_ms"] == 1.0


def test_moving_average_with_weight_one_eighth_and_the_seed_thresholds():
    _, policy = make(initial_s=20 * MS, step_s=1 * MS)
    assert respond(policy, 1.0, now=0.0) == 21.0  # first response: ema = baseline = 1 ms
    # round trips of 3 ms: ema 1.25, 1.46875 (between 1.1x and 1.5x: hold), then 1.66 > 1.5x
    assert respond(policy, 3.0, now=1.0) == 21.0
    assert respond(policy, 3.0, now=2.0) == 21.0
    assert policy.stats()["aimd"]["brokers"]["1"]["rtt_ema_ms"] == pytest.approx(1.469, abs=1e-3)
    assert respond(policy, 3.0, now=3.0) == 10.5  # multiplicative decrease, factor 0.5
    assert respond(policy, 3.0, now=4.0) == 5.25
    # back at the baseline the average comes down slowly: hold until it is below 1.1x
    history = [respond(policy, 1.0, now=5.0 + i) for i in range(30)]
    first_increase = next(i for i, w in enumerate(history) if w > history[0])
    ema = 1.0 + (policy.stats()["aimd"]["brokers"]["1"]["rtt_ema_ms"] - 1.0)
    assert first_increase > 5 and ema < 1.1
    assert history[-1] > 5.25


def test_thresholds_step_and_factor_are_settings():
    _, policy = make(initial_s=20 * MS, decrease_ratio=1.2, increase_ratio=1.05,
                     decrease_factor=0.25, step_s=4 * MS)
    assert respond(policy, 1.0, now=0.0) == 24.0
    assert respond(policy, 3.0, now=1.0) == 6.0  # ema 1.25 > 1.2x: cut to a quarter


@pytest.mark.parametrize("signal", [{"retried": True}, {"throttle_ms": 50}])
def test_retries_and_throttling_are_backpressure(signal):
    _, policy = make(initial_s=40 * MS, min_s=4 * MS)
    respond(policy, 1.0, now=0.0)  # 41
    assert [respond(policy, 1.0, now=1.0 + i, **signal) for i in range(5)] == [
        20.5, 10.25, 5.125, 4.0, 4.0]  # never below the minimum
    cause = "retry" if "retried" in signal else "throttle"
    assert policy.stats()["aimd"]["brokers"]["1"]["decreases"][cause] == 5


def test_a_response_while_every_request_slot_was_busy_is_backpressure():
    acc, policy = make(initial_s=8 * MS, max_in_flight=2)
    append(acc, policy, 0, now=0.0)
    (plan,) = policy.poll(0.008, PollContext({1: 1}))  # one slot was free: now both are busy
    assert respond(policy, 1.0, now=0.009) == 4.0
    assert policy.stats()["aimd"]["brokers"]["1"]["decreases"]["in_flight"] == 1
    append(acc, policy, 1, now=0.010)
    assert policy.poll(0.014, PollContext({1: 2})) != []  # one of two in flight after the send
    assert respond(policy, 1.0, now=0.015) == 5.0  # not all busy: healthy, increase


def test_the_window_times_each_broker_collection_independently():
    acc, policy = make(leaders=[1, 2, 1, 2], initial_s=10 * MS)
    for _ in range(5):
        respond(policy, 1.0, now=0.0, broker=2)  # broker 2 grows to 15 ms
    respond(policy, 1.0, now=0.0, broker=1)
    respond(policy, 1.0, now=0.1, broker=1, retried=True)  # broker 1: 11 -> 5.5 ms
    append(acc, policy, 0, now=1.0)
    append(acc, policy, 1, now=1.0)
    assert policy.next_wakeup() == pytest.approx(1.0055)
    plans = policy.poll(1.0055, PollContext({1: 5, 2: 5}))
    assert [(p.broker, p.reason) for p in plans] == [(1, "broker_linger")]
    assert policy.next_wakeup() == pytest.approx(1.015)
    assert [p.broker for p in policy.poll(1.015, PollContext({1: 5, 2: 5}))] == [2]


def test_the_window_over_time_is_recorded_relative_to_the_start():
    _, policy = make(initial_s=5 * MS)
    policy.begin(100.0)
    respond(policy, 1.0, now=101.0)
    respond(policy, 1.0, now=102.0)
    respond(policy, 1.0, now=104.0, retried=True)
    stats = policy.stats()
    assert stats["window_over_time"] == [[0.0, 1, 5.0], [1.0, 1, 6.0], [2.0, 1, 7.0],
                                         [4.0, 1, 3.5]]
    assert stats["window_over_time_resolution_s"] == 0.0
    window = stats["aimd"]["brokers"]["1"]["window_ms"]
    # time-weighted over 0..4 s: 5 for 1 s, 6 for 1 s, 7 for 2 s
    assert window == {"initial": 5.0, "final": 3.5, "mean": 6.25, "min": 3.5, "max": 7.0}
    assert stats["sends"] == 0 and "sends_by_reason" in stats  # the collector schema's fields


def test_a_long_history_is_downsampled_to_time_weighted_buckets():
    _, policy = make(initial_s=2 * MS, min_s=1 * MS, max_s=3 * MS)
    policy.begin(0.0)
    now = 0.0
    for i in range(5000):  # 1 -> 2 -> 3 -> 1.5 -> ... changes every 2 ms for 10 s
        now = i * 0.002
        respond(policy, 1.0, now=now, retried=(i % 3 == 2))
    points = policy.stats()["window_over_time"]
    resolution = policy.stats()["window_over_time_resolution_s"]
    assert resolution > 0 and len(points) <= MAX_POINTS
    assert all(1.0 <= w <= 3.0 for _, _, w in points)
    values = [w for _, _, w in points]
    mean = policy.stats()["aimd"]["brokers"]["1"]["window_ms"]["mean"]
    assert np.mean(values) == pytest.approx(mean, rel=0.02)


# ------------------------------------------------------------- the p99 target
def simulate(policy, acc, rate: float, start: float, end: float, rtt_ms, free_limit: int = 5):
    """Messages at `rate`/s round-robin over the partitions from `start` to `end`; each
    request is answered `rtt_ms(now)` later. Returns (ack time, latency) per message."""
    partitions = len(acc.queues)
    responses: list = []
    seq = itertools.count()
    in_flight = 0
    acked: list[tuple[float, float]] = []
    index = 0
    while True:
        t_msg = start + index / rate
        if t_msg >= end:
            t_msg = math.inf
        wake = policy.next_wakeup()
        t_resp = responses[0][0] if responses else math.inf
        now = min(t_msg, t_resp, wake if wake is not None else math.inf)
        if now == math.inf:
            return acked
        if t_resp <= now:
            _, _, plan, sent_at = heapq.heappop(responses)
            in_flight -= 1
            policy.on_response(plan.broker, now - sent_at, now, 0, False)
            latencies = np.concatenate([now - np.frombuffer(b.intended) for b in plan.batches])
            policy.on_acknowledged(plan.broker, latencies, now)
            acked.extend((now, float(x)) for x in latencies)
        elif t_msg <= now:
            append(acc, policy, index % partitions, now)
            index += 1
        for plan in policy.poll(now, PollContext({1: free_limit - in_flight})):
            in_flight += 1
            heapq.heappush(responses, (now + rtt_ms(now) * MS, next(seq), plan, now))


def p99_ms(acked, since: float, until: float = math.inf) -> float:
    values = [lat for t, lat in acked if since <= t < until]
    return float(np.percentile(values, 99)) / MS


def test_with_a_p99_target_the_window_converges_to_the_largest_that_meets_it():
    acc, policy = make(partitions=8, initial_s=5 * MS, min_s=1 * MS, max_s=100 * MS,
                       step_s=1 * MS, target_p99_s=20 * MS, target_interval_s=0.25)
    policy.begin(0.0)
    # 2000 msg/s; every request takes 2 ms, then 8 ms from t = 12 s on
    acked = simulate(policy, acc, 2000, 0.0, 24.0, lambda now: 2.0 if now < 12 else 8.0)
    points = policy.stats()["window_over_time"]

    def window_at(t: float) -> float:
        return [w for ts, _, w in points if ts <= t][-1]

    # latency ~ wait in the collection (up to the window) + round trip: with 2 ms the
    # largest window meeting 20 ms is about 18 ms, with 8 ms about 12 ms
    assert 15.0 <= window_at(11.9) <= 18.5, points
    assert p99_ms(acked, 6.0, 12.0) <= 20.0 + 1e-6
    assert 8.0 <= window_at(24.0) <= 12.5, points
    assert p99_ms(acked, 18.0) <= 20.0 + 1e-6
    # it did not get there by cutting the window to the bone meanwhile
    assert min(w for t, _, w in points if t >= 6.0) >= 5.0
    assert policy.stats()["aimd"]["brokers"]["1"]["decreases"]["p99"] >= 1


def test_without_a_target_acknowledgements_do_not_move_the_window():
    _, policy = make(initial_s=5 * MS)
    policy.on_acknowledged(1, np.full(1000, 0.5), now=1.0)
    assert window_ms(policy) == 5.0


# ----------------------------------------------------------------- settings
def test_settings_build_the_controller():
    settings = build_settings({
        "aimd.linger.min.ms": "2", "aimd.linger.max.ms": "50", "aimd.linger.initial.ms": "80",
        "aimd.linger.step.ms": "3", "aimd.decrease.factor": "0.7",
        "aimd.rtt.increase.ratio": "1.2", "aimd.rtt.decrease.ratio": "2",
        "aimd.target.p99.ms": "25", "max.in.flight.requests.per.connection": "3",
    }, mode="aimd")
    acc = Accumulator([TopicPartition("t", 0)], 16384)
    policy = make_policy("aimd", acc, [1], settings)
    assert isinstance(policy, AimdLinger) and policy.stats_key == "collector"
    assert (policy.min_s, policy.max_s, policy.initial_s, policy.step_s) == pytest.approx(
        (0.002, 0.050, 0.050, 0.003))  # the initial window is kept within the bounds
    assert (policy.decrease_factor, policy.increase_ratio, policy.decrease_ratio) == (
        0.7, 1.2, 2.0)
    assert policy.target_p99_s == pytest.approx(0.025) and policy.max_in_flight == 3
    default = make_policy("aimd", acc, [1], build_settings({}, mode="aimd"))
    assert default.target_p99_s is None
    assert (default.increase_ratio, default.decrease_ratio, default.decrease_factor) == (
        1.1, 1.5, 0.5)


@pytest.mark.parametrize("given, message", [
    ({"aimd.linger.min.ms": "20", "aimd.linger.max.ms": "10"}, "larger than aimd.linger.max"),
    ({"aimd.rtt.increase.ratio": "2", "aimd.rtt.decrease.ratio": "1.5"}, "healthy and as"),
    ({"aimd.decrease.factor": "1.5"}, "out of range"),
    ({"aimd.decrease.factor": "half"}, "is not a number"),
    ({"aimd.rtt.decrease.ratio": "nan"}, "is not a number"),
])
def test_bad_controller_settings_are_refused(given, message):
    with pytest.raises(ConfigError, match=message):
        build_settings(given, mode="aimd")
