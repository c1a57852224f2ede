"""Broker-level linger (mode `broker`), driven with synthetic time and a real Accumulator."""

from __future__ import annotations

import random

import pytest

from producer_core.config import build_settings
from producer_core.engine.core.accumulator import (
    PARTITION_OVERHEAD_BYTES,
    REQUEST_OVERHEAD_BYTES,
    Accumulator,
    TopicPartition,
)
from producer_core.engine.core.linger.base import PollContext, RequestLimits
from producer_core.engine.core.linger.broker_policy import BrokerLinger
from producer_core.engine.modes import make_policy

VALUE = bytes(10)
RECORD_BYTES = 17
"""Record bytes of one VALUE record (no key) in a batch."""
ONE_RECORD_BATCH = 78
"""Wire size of a batch holding one VALUE record."""
FREE = {1: 5, 2: 5}


def make(partitions: int = 4, leaders: list[int] | None = None, linger_s: float = 0.010,
         max_partitions: int = -1, max_bytes: int = -1, batch_size: int = 16384,
         max_request_size: int = 1 << 20, request_max_partitions: int | None = None,
         instant_brokers: bool = True):
    """A policy over an accumulator. With `instant_brokers` every broker has answered once
    in no time, so windows last exactly `linger_s` (no send lead); without, nothing is
    measured yet."""
    acc = Accumulator([TopicPartition("t", p) for p in range(partitions)], batch_size)
    limits = RequestLimits(max_request_size, request_max_partitions)
    leaders = leaders or [1] * partitions
    policy = BrokerLinger(acc, leaders, limits, linger_s, max_partitions, max_bytes)
    if instant_brokers:
        for broker in set(leaders):
            policy.on_response(broker, 0.0, now=0.0, throttle_ms=0, retried=False)
    return acc, policy


def append(acc, policy, slot: int, now: float, intended: float | None = None,
           message_id: int = 0) -> None:
    when = now if intended is None else intended
    event = acc.append(slot, message_id, None, VALUE, when, now, 0)
    if event:
        policy.on_append(slot, event, now)


def sent_slots(plans) -> list[list[int]]:
    return [[b.slot for b in plan.batches] for plan in plans]


def request_room(batches: int) -> int:
    """A max.request.size that fits exactly `batches` one-record batches."""
    return REQUEST_OVERHEAD_BYTES + batches * (ONE_RECORD_BATCH + PARTITION_OVERHEAD_BYTES)


def test_one_record_sizes_match_the_constants():
    acc, policy = make()
    append(acc, policy, 0, now=0.0)
    assert acc.head(0).record_bytes == RECORD_BYTES
    assert acc.head(0).size_bytes() == ONE_RECORD_BATCH


# ------------------------------------------------------------------- the window
def test_window_starts_at_first_add_and_later_partitions_do_not_extend_it():
    acc, policy = make(linger_s=0.010)
    # a message that has already waited a long time does not make the collector send at once
    append(acc, policy, 0, now=1.000, intended=0.0)
    assert policy.poll(1.000, PollContext(FREE)) == []
    assert policy.next_wakeup() == pytest.approx(1.010)
    append(acc, policy, 1, now=1.004)
    append(acc, policy, 2, now=1.008)
    assert policy.poll(1.009, PollContext(FREE)) == []
    assert policy.next_wakeup() == pytest.approx(1.010)  # not restarted, not extended
    plans = policy.poll(1.010, PollContext(FREE))
    assert sent_slots(plans) == [[0, 1, 2]]
    assert plans[0].reason == "broker_linger"
    stats = policy.stats()
    assert stats["sends"] == 1
    assert stats["collecting_for"]["max_ms"] == pytest.approx(10.0)
    assert acc.empty
    assert policy.next_wakeup() is None
    # the next window starts with the next first add, not at the end of the last one
    append(acc, policy, 3, now=1.500)
    assert policy.next_wakeup() == pytest.approx(1.510)
    assert policy.poll(1.509, PollContext(FREE)) == []
    plans = policy.poll(1.510, PollContext(FREE))
    assert sent_slots(plans) == [[3]]
    assert policy.stats()["sends"] == 2


def test_more_data_for_a_collected_partition_does_not_move_it_or_the_window():
    acc, policy = make(linger_s=0.010)
    append(acc, policy, 3, now=0.000)
    append(acc, policy, 0, now=0.002)
    append(acc, policy, 2, now=0.003)
    append(acc, policy, 1, now=0.004)
    for i in range(5):  # more records to the partitions that joined first
        append(acc, policy, 3, now=0.005 + i * 0.001, message_id=i + 1)
        append(acc, policy, 0, now=0.005 + i * 0.001, message_id=i + 1)
    assert policy.next_wakeup() == pytest.approx(0.010)
    plans = policy.poll(0.010, PollContext(FREE))
    assert sent_slots(plans) == [[3, 0, 2, 1]]  # oldest-joined first
    assert [b.record_count for b in plans[0].batches] == [6, 6, 1, 1]


def test_one_collector_per_broker():
    acc, policy = make(leaders=[1, 2, 1, 2], linger_s=0.010)
    append(acc, policy, 0, now=0.000)
    append(acc, policy, 1, now=0.004)
    append(acc, policy, 2, now=0.006)
    plans = policy.poll(0.010, PollContext(FREE))
    assert [(p.broker, [b.slot for b in p.batches]) for p in plans] == [(1, [0, 2])]
    assert policy.next_wakeup() == pytest.approx(0.014)
    plans = policy.poll(0.014, PollContext(FREE))
    assert [(p.broker, [b.slot for b in p.batches]) for p in plans] == [(2, [1])]


# --------------------------------------------------------------- early triggers
def test_partition_cap_sends_early():
    acc, policy = make(partitions=6, linger_s=10.0, max_partitions=3)
    append(acc, policy, 4, now=0.0)
    append(acc, policy, 1, now=0.1)
    assert policy.poll(0.1, PollContext(FREE)) == []
    assert policy.next_wakeup() == pytest.approx(10.0)
    append(acc, policy, 5, now=0.2)
    assert policy.next_wakeup() == pytest.approx(0.0)  # due now: poll at once
    plans = policy.poll(0.2, PollContext(FREE))
    assert sent_slots(plans) == [[4, 1, 5]]
    assert plans[0].reason == "max_partitions"
    assert policy.stats()["collecting_for"]["max_ms"] == pytest.approx(200.0)


def test_bytes_cap_sends_early_and_counts_only_its_own_brokers_bytes():
    acc, policy = make(leaders=[1, 2, 1, 2], linger_s=10.0, max_bytes=100)
    for i in range(5):  # 85 bytes for broker 1, 85 for broker 2: 170 in all
        append(acc, policy, 0, now=0.0, message_id=i)
        append(acc, policy, 1, now=0.0, message_id=i)
    assert acc.queued_bytes == 10 * RECORD_BYTES
    assert policy.poll(0.001, PollContext(FREE)) == []
    append(acc, policy, 2, now=0.002)  # broker 1 now holds 102 bytes
    plans = policy.poll(0.002, PollContext(FREE))
    assert [(p.broker, [b.slot for b in p.batches]) for p in plans] == [(1, [0, 2])]
    assert plans[0].reason == "max_bytes"
    assert policy.stats()["collected_bytes_per_send"]["max"] == 6 * RECORD_BYTES
    # broker 2 reaches the cap with its next record, long before its window ends
    append(acc, policy, 3, now=0.003)
    plans = policy.poll(0.003, PollContext(FREE))
    assert [(p.broker, p.reason) for p in plans] == [(2, "max_bytes")]
    assert acc.empty


def test_bytes_cap_counts_records_appended_without_an_event():
    acc, policy = make(linger_s=10.0, max_bytes=100)
    append(acc, policy, 0, now=0.0)
    assert policy.poll(0.0, PollContext(FREE)) == []
    for i in range(5):  # plain appends to an open batch: the policy hears nothing
        append(acc, policy, 0, now=0.001, message_id=i + 1)
    assert acc.queued_bytes == 6 * RECORD_BYTES
    plans = policy.poll(0.001, PollContext(FREE))
    assert [p.reason for p in plans] == ["max_bytes"]


def test_partition_cap_beats_bytes_cap_and_bytes_cap_beats_linger():
    acc, policy = make(linger_s=0.010, max_partitions=2, max_bytes=30)
    append(acc, policy, 0, now=0.0, message_id=0)
    append(acc, policy, 0, now=0.0, message_id=1)  # 34 bytes: bytes cap holds
    append(acc, policy, 1, now=0.0)  # 2 partitions: partition cap holds too
    plans = policy.poll(0.020, PollContext(FREE))  # and the window is over as well
    assert [p.reason for p in plans] == ["max_partitions"]

    acc, policy = make(linger_s=0.010, max_partitions=5, max_bytes=30)
    append(acc, policy, 0, now=0.0, message_id=0)
    append(acc, policy, 0, now=0.0, message_id=1)
    plans = policy.poll(0.020, PollContext(FREE))
    assert [p.reason for p in plans] == ["max_bytes"]


def test_flush_beats_caps():
    acc, policy = make(linger_s=0.010, max_partitions=1, max_bytes=1)
    append(acc, policy, 0, now=0.0)
    plans = policy.poll(0.020, PollContext(FREE, flushing=True))
    assert [p.reason for p in plans] == ["flush"]


def test_flush_sends_everything_regardless_of_thresholds():
    acc, policy = make(partitions=4, leaders=[1, 2, 1, 2], linger_s=100.0, batch_size=200,
                       max_partitions=50, max_bytes=1 << 30)
    for i in range(20):  # slot 0 gets several batches
        append(acc, policy, 0, now=0.001 * i, message_id=i)
    for slot in (1, 2, 3):
        append(acc, policy, slot, now=0.05, message_id=100 + slot)
    assert len(acc.queues[0]) >= 3
    assert policy.poll(0.1, PollContext(FREE)) == []
    assert policy.poll(0.1, PollContext({}, flushing=True)) == []  # no free request slot
    assert policy.next_wakeup() is None  # due: only a response can unblock it
    plans = policy.poll(0.1, PollContext(FREE, flushing=True))
    assert acc.empty
    assert {p.reason for p in plans} == {"flush"}
    assert sorted(i for p in plans for b in p.batches for i in b.ids) == list(range(20)) + [
        101, 102, 103]
    assert policy.next_wakeup() is None


# ------------------------------------------------------------ building requests
def test_a_send_splits_into_several_requests_when_they_are_small():
    acc, policy = make(partitions=5, linger_s=0.010, max_request_size=request_room(2))
    for i, slot in enumerate((4, 2, 0, 3, 1)):
        append(acc, policy, slot, now=0.001 * i)
    plans = policy.poll(0.010, PollContext(FREE))
    assert sent_slots(plans) == [[4, 2], [0, 3], [1]]
    assert {p.reason for p in plans} == {"broker_linger"}
    stats = policy.stats()
    assert stats["sends"] == 1  # the three requests are one send
    assert stats["partitions_per_send"]["max"] == 5
    assert stats["collecting_for"]["max_ms"] == pytest.approx(10.0)
    assert stats["requests_per_send"] == {"mean": 3.0, "max": 3.0}


def test_produce_request_partition_limit_also_splits():
    acc, policy = make(partitions=5, linger_s=0.010, request_max_partitions=2)
    for slot in range(5):
        append(acc, policy, slot, now=0.0)
    plans = policy.poll(0.010, PollContext(FREE))
    assert sent_slots(plans) == [[0, 1], [2, 3], [4]]


def test_a_partition_with_several_batches_sends_them_all_round_by_round():
    acc, policy = make(partitions=3, linger_s=0.010, batch_size=200)
    for i in range(20):  # 8 records fill a 200-byte batch: slot 0 holds 3 batches
        append(acc, policy, 0, now=0.0, message_id=i)
    append(acc, policy, 1, now=0.001, message_id=100)
    for i in range(10):  # slot 2 holds 2 batches
        append(acc, policy, 2, now=0.002, message_id=200 + i)
    assert [len(q) for q in acc.queues] == [3, 1, 2]
    plans = policy.poll(0.010, PollContext(FREE))
    # one batch per partition per request; every batch queued at the send is in it
    assert sent_slots(plans) == [[0, 1, 2], [0, 2], [0]]
    assert policy.stats()["sends"] == 1
    assert [list(b.ids) for b in plans[0].batches][0] == list(range(8))  # partition order kept
    assert acc.empty
    stats = policy.stats()
    assert stats["partitions_per_send"]["max"] == 3
    assert stats["requests_per_send"]["max"] == 3


# ------------------------------------------------------------ the in-flight limit
def test_at_the_in_flight_limit_the_collector_keeps_collecting_and_sends_when_a_slot_frees():
    acc, policy = make(partitions=4, linger_s=0.010)
    append(acc, policy, 0, now=0.000)
    assert policy.poll(0.010, PollContext({})) == []  # due, but no free request slot
    assert policy.poll(0.010, PollContext({1: 0})) == []
    assert policy.next_wakeup() is None  # only a response can unblock it
    append(acc, policy, 1, now=0.012)  # joins the waiting collection
    append(acc, policy, 0, now=0.013, message_id=1)
    assert policy.poll(0.013, PollContext({})) == []
    assert policy.next_wakeup() is None
    plans = policy.poll(0.015, PollContext({1: 1}))  # a response freed a slot
    assert sent_slots(plans) == [[0, 1]]
    assert plans[0].reason == "broker_linger"
    assert policy.stats()["collecting_for"]["max_ms"] == pytest.approx(15.0)
    assert [b.record_count for b in plans[0].batches] == [2, 1]
    assert acc.empty


def test_a_send_needing_more_requests_than_free_slots_finishes_as_slots_free():
    acc, policy = make(partitions=4, linger_s=0.010, max_request_size=request_room(1))
    for slot in range(3):
        append(acc, policy, slot, now=0.0)
    plans = policy.poll(0.010, PollContext({1: 1}))
    assert sent_slots(plans) == [[0]]
    # new data during the unfinished send starts the next window; it is not part of the send
    append(acc, policy, 3, now=0.011)
    assert policy.next_wakeup() == pytest.approx(0.021)
    assert policy.poll(0.012, PollContext({})) == []
    plans = policy.poll(0.013, PollContext({1: 1}))
    assert sent_slots(plans) == [[1]]
    plans = policy.poll(0.014, PollContext({1: 3}))
    assert sent_slots(plans) == [[2]]  # slot 3's window is still open
    assert policy.stats()["sends"] == 1
    assert plans[0].reason == "broker_linger"
    plans = policy.poll(0.021, PollContext({1: 3}))
    assert sent_slots(plans) == [[3]]
    stats = policy.stats()
    assert stats["sends"] == 2
    assert stats["requests_per_send"] == {"mean": 2.0, "max": 3.0}


def test_batches_created_after_a_send_started_go_in_the_next_window():
    acc, policy = make(partitions=3, linger_s=0.010, batch_size=200, request_max_partitions=1)
    for slot in range(3):
        append(acc, policy, slot, now=0.0, message_id=slot)
    assert sent_slots(policy.poll(0.010, PollContext({1: 1}))) == [[0]]
    for i in range(10):  # slot 2's open batch fills (8 records) and a new one starts
        append(acc, policy, 2, now=0.011, message_id=100 + i)
    assert len(acc.queues[2]) == 2
    plans = policy.poll(0.012, PollContext({1: 5}))
    assert sent_slots(plans) == [[1], [2]]
    assert plans[1].batches[0].record_count == 8  # the batch that was open at the send
    assert policy.stats()["sends"] == 1
    # the batch started after the send joins a new window when slot 2 leaves the send (at
    # 0.012), timed from when its first record was due (0.011, after the send started)
    assert acc.queues[2][0].record_count == 3
    assert policy.next_wakeup() == pytest.approx(0.021)
    assert policy.poll(0.0209, PollContext({1: 5})) == []
    plans = policy.poll(0.021, PollContext({1: 5}))
    assert sent_slots(plans) == [[2]]
    assert policy.stats()["sends"] == 2
    assert acc.empty


def test_cap_reached_while_blocked_sends_everything_with_the_cap_reason():
    acc, policy = make(partitions=4, linger_s=0.010, max_partitions=3)
    append(acc, policy, 0, now=0.0)
    assert policy.poll(0.010, PollContext({})) == []  # due by linger, blocked
    append(acc, policy, 1, now=0.011)
    append(acc, policy, 2, now=0.012)
    append(acc, policy, 3, now=0.013)
    plans = policy.poll(0.014, PollContext({1: 1}))
    assert sent_slots(plans) == [[0, 1, 2, 3]]
    assert plans[0].reason == "max_partitions"  # reason decided at send time, by priority


# ----------------------------------------------------------------------- property
@pytest.mark.parametrize("seed", range(8))
def test_no_message_waits_longer_than_the_window(seed: int):
    rng = random.Random(seed)
    window = rng.choice([0.0, 0.002, 0.005, 0.020])
    partitions = rng.randint(1, 12)
    leaders = [rng.choice([1, 2]) for _ in range(partitions)]
    acc, policy = make(
        partitions=partitions, leaders=leaders, linger_s=window,
        batch_size=rng.choice([200, 400, 16384]),
        max_partitions=rng.choice([-1, -1, 2, 5]),
        max_bytes=rng.choice([-1, -1, 150, 1000]),
        max_request_size=rng.choice([request_room(1), request_room(3), 1 << 20]),
    )
    arrivals: list[float] = []
    t = 0.0
    for _ in range(2000):
        t += rng.expovariate(1 / 0.0005) if rng.random() < 0.9 else rng.uniform(0.01, 0.05)
        arrivals.append(t)
    sent: list[int] = []
    worst = 0.0

    def take(plans, now: float) -> None:
        nonlocal worst
        for plan in plans:
            assert len({b.slot for b in plan.batches}) == len(plan.batches)
            assert all(leaders[b.slot] == plan.broker for b in plan.batches)
            for batch in plan.batches:
                sent.extend(batch.ids)
                worst = max(worst, max(now - i for i in batch.intended))

    index = 0
    polls = 0
    while index < len(arrivals) or policy.next_wakeup() is not None:
        wake = policy.next_wakeup()
        arrival = arrivals[index] if index < len(arrivals) else None
        if arrival is not None and (wake is None or arrival < wake):
            now = arrival
            append(acc, policy, rng.randrange(partitions), now=now, message_id=index)
            index += 1
        else:
            now = wake
        take(policy.poll(now, PollContext(FREE)), now)
        polls += 1
        assert polls < 10 * len(arrivals), "poll loop does not progress"
    assert acc.empty
    assert sorted(sent) == list(range(len(arrivals)))
    assert worst <= window + 1e-9
    stats = policy.stats()
    assert stats["collecting_for"]["max_ms"] <= window * 1000 + 1e-6
    if window > 0 and stats["sends_by_reason"]["broker_linger"]:
        assert stats["collecting_for"]["max_ms"] == pytest.approx(window * 1000)


# ------------------------------------------------------------ retries and leaders
def test_a_retried_batch_goes_at_once_with_its_collection():
    acc, policy = make(linger_s=10.0)
    append(acc, policy, 0, now=0.0)
    [plan] = policy.poll(10.0, PollContext(FREE))
    append(acc, policy, 1, now=10.1)  # a new window for slot 1 is running
    acc.requeue_front(plan.batches[0])
    policy.on_requeue(0, 10.2)
    assert policy.next_wakeup() == pytest.approx(10.1)  # due now
    plans = policy.poll(10.2, PollContext(FREE))
    assert sent_slots(plans) == [[1, 0]]
    assert plans[0].reason == "retry"
    assert acc.empty


def test_a_retry_into_an_unfinished_send_goes_with_that_send():
    acc, policy = make(linger_s=0.010, batch_size=200, max_request_size=222)
    for i in range(10):  # two batches: ids 0-7 and 8-9
        append(acc, policy, 0, now=0.0, message_id=i)
    append(acc, policy, 1, now=0.0, message_id=100)
    [first] = policy.poll(0.010, PollContext({1: 1}))
    assert sent_slots([first]) == [[0]]
    acc.requeue_front(first.batches[0])  # slot 0 still has a batch in send 1
    policy.on_requeue(0, 0.012)
    plans = policy.poll(0.012, PollContext({1: 5}))
    assert sent_slots(plans) == [[1], [0], [0]]
    assert [list(p.batches[0].ids) for p in plans[1:]] == [list(range(8)), [8, 9]]
    assert policy.stats()["sends"] == 1
    assert acc.empty


def test_a_retry_after_its_send_finished_starts_a_send_of_its_own():
    acc, policy = make(linger_s=0.010, max_request_size=request_room(1))
    append(acc, policy, 0, now=0.0)
    append(acc, policy, 1, now=0.0)
    [first] = policy.poll(0.010, PollContext({1: 1}))
    assert sent_slots([first]) == [[0]]  # slot 0 is done with send 1; slot 1 still waits
    acc.requeue_front(first.batches[0])
    policy.on_requeue(0, 0.012)
    plans = policy.poll(0.012, PollContext({1: 5}))
    assert sent_slots(plans) == [[1], [0]]
    assert [p.reason for p in plans] == ["broker_linger", "retry"]
    stats = policy.stats()
    assert stats["sends"] == 2  # send 1: slots 0 and 1, send 2: the retry
    assert stats["requests_per_send"] == {"mean": 1.5, "max": 2.0}
    assert acc.empty


def test_leader_change_moves_collected_partitions_keeping_the_earlier_window():
    leaders = [1, 1, 2, 2]
    acc, policy = make(leaders=leaders, linger_s=0.010)
    append(acc, policy, 0, now=0.000)  # broker 1 window: 0.000 - 0.010
    append(acc, policy, 2, now=0.004)  # broker 2 window: 0.004 - 0.014
    append(acc, policy, 1, now=0.006)  # joins broker 1
    leaders[1] = 2  # the engine updates the list in place, then tells the policy
    policy.set_leaders(leaders)
    assert policy.poll(0.009, PollContext(FREE)) == []
    plans = policy.poll(0.010, PollContext(FREE))
    assert [(p.broker, [b.slot for b in p.batches]) for p in plans] == [(1, [0]), (2, [2, 1])]
    assert acc.empty


def test_leader_change_during_an_unfinished_send_moves_the_rest():
    leaders = [1, 1, 1, 1]
    acc, policy = make(leaders=leaders, linger_s=0.010, max_request_size=request_room(1))
    for slot in range(3):
        append(acc, policy, slot, now=0.0)
    assert sent_slots(policy.poll(0.010, PollContext({1: 1}))) == [[0]]
    leaders[2] = 2
    policy.set_leaders(leaders)
    plans = policy.poll(0.011, PollContext({1: 5, 2: 5}))
    assert [(p.broker, [b.slot for b in p.batches]) for p in plans] == [(1, [1]), (2, [2])]
    assert plans[1].reason == "retry"
    assert acc.empty


# -------------------------------------------------------------- settings, stats
def test_linger_ms_in_mode_broker_is_deprecated_with_a_warning():
    settings = build_settings([("linger.ms", "10")], mode="broker")
    assert len(settings.warnings) == 1
    assert "linger.ms is ignored in mode broker" in settings.warnings[0]
    assert "broker.linger.ms" in settings.warnings[0]
    assert build_settings([("broker.linger.ms", "10")], mode="broker").warnings == ()
    assert build_settings([("linger.ms", "10")], mode="partition").warnings == ()
    assert build_settings((), mode="broker").warnings == ()


def test_broker_settings_reach_the_policy():
    acc = Accumulator([TopicPartition("t", 0)], 16384)
    defaults = make_policy("broker", acc, [1], build_settings((), mode="broker"))
    assert isinstance(defaults, BrokerLinger)
    assert defaults.linger_s == pytest.approx(0.005)
    assert defaults.max_partitions is None and defaults.max_bytes is None
    settings = build_settings(
        [("broker.linger.ms", "500"), ("broker.batch.max.partitions", "100"),
         ("broker.batch.max.bytes", "10485760")], mode="broker")
    policy = make_policy("broker", acc, [1], settings)
    assert policy.linger_s == pytest.approx(0.5)
    assert policy.max_partitions == 100 and policy.max_bytes == 10485760


def test_stats_for_a_known_scenario():
    acc, policy = make(partitions=4, linger_s=0.010, max_partitions=3,
                       max_request_size=request_room(2))
    assert policy.stats() == {"sends": 0, "sends_by_reason": {
        "flush": 0, "max_partitions": 0, "max_bytes": 0, "broker_linger": 0, "retry": 0}}
    # send 1: the window ends, 2 partitions, 1 request, collected for 10 ms
    append(acc, policy, 0, now=0.000)
    append(acc, policy, 1, now=0.002)
    assert len(policy.poll(0.010, PollContext(FREE))) == 1
    # send 2: the partition cap, 3 partitions, 2 requests, collected for 2 ms
    for slot in range(3):
        append(acc, policy, slot, now=0.020 + 0.001 * slot)
    assert len(policy.poll(0.022, PollContext(FREE))) == 2
    # send 3: flush, 1 partition, 1 request, collected for 1 ms
    append(acc, policy, 3, now=0.030)
    assert len(policy.poll(0.031, PollContext(FREE, flushing=True))) == 1
    stats = policy.stats()
    assert stats["sends"] == 3
    assert stats["sends_by_reason"] == {
        "flush": 1, "max_partitions": 1, "max_bytes": 0, "broker_linger": 1, "retry": 0}
    assert stats["partitions_per_send"] == {"mean": 2.0, "p50": 2.0, "max": 3.0}
    b = ONE_RECORD_BATCH
    assert stats["bytes_per_send"] == {"mean": 2.0 * b, "p50": 2.0 * b, "max": 3.0 * b}
    assert stats["collected_bytes_per_send"] == {"mean": 2.0 * RECORD_BYTES,
                                                 "max": 3.0 * RECORD_BYTES}
    assert stats["collecting_for"] == {
        "p50_ms": pytest.approx(2.0), "p99_ms": pytest.approx(9.84), "max_ms": pytest.approx(10.0)
    }
    assert stats["requests_per_send"] == {"mean": pytest.approx(1.333), "max": 2.0}


# ------------------------------------------------------------------ send lead
def test_window_ends_early_by_the_measured_send_time():
    acc, policy = make(linger_s=1.000, instant_brokers=False)
    policy.on_response(1, 0.010, now=0.0, throttle_ms=0, retried=False)
    append(acc, policy, 0, now=1.000)
    # first sample: average 10 ms, deviation half of it (RFC 6298) -> lead 10 + 4 * 5 ms
    assert policy.next_wakeup() == pytest.approx(1.970)
    assert policy.poll(1.969, PollContext(FREE)) == []
    assert sent_slots(policy.poll(1.970, PollContext(FREE))) == [[0]]


def test_send_time_is_an_average_plus_deviation_of_answered_round_trips_only():
    acc, policy = make(linger_s=1.000, instant_brokers=False)
    policy.on_response(1, 0.010, now=0.0, throttle_ms=0, retried=False)
    policy.on_response(1, 0.020, now=0.1, throttle_ms=0, retried=False)
    policy.on_response(1, 5.000, now=0.2, throttle_ms=0, retried=True)  # failed: ignored
    append(acc, policy, 0, now=1.000)
    average = 0.010 + 0.3 * (0.020 - 0.010)
    deviation = 0.005 + 0.3 * (abs(0.020 - 0.010) - 0.005)
    assert policy.next_wakeup() == pytest.approx(2.000 - (average + 4 * deviation))


def test_steady_round_trips_make_the_lead_their_average_and_jitter_makes_it_longer():
    steady_acc, steady = make(linger_s=0.500, instant_brokers=False)
    jittery_acc, jittery = make(linger_s=0.500, instant_brokers=False)
    for index in range(60):
        steady.on_response(1, 0.012, now=index, throttle_ms=0, retried=False)
        jittery.on_response(1, 0.004 if index % 2 else 0.020, now=index, throttle_ms=0,
                            retried=False)
    append(steady_acc, steady, 0, now=100.0)
    append(jittery_acc, jittery, 0, now=100.0)
    assert steady.next_wakeup() == pytest.approx(100.488, abs=1e-6)
    # the same 12 ms average, but the slow sends are 20 ms: the lead covers them
    assert jittery.next_wakeup() <= 100.5 - 0.020


def test_send_lead_is_per_broker_and_the_cap_until_a_broker_has_answered():
    acc, policy = make(partitions=2, leaders=[1, 2], linger_s=0.500, instant_brokers=False)
    for index in range(60):
        policy.on_response(2, 0.015, now=index, throttle_ms=0, retried=False)
    append(acc, policy, 0, now=100.000)  # broker 1: nothing measured, the cap
    append(acc, policy, 1, now=100.000)
    assert policy.next_wakeup() == pytest.approx(100.500 - 0.500 / 21)
    assert sent_slots(policy.poll(100.500 - 0.500 / 21, PollContext(FREE))) == [[0]]
    assert policy.next_wakeup() == pytest.approx(100.485, abs=1e-6)


def test_send_lead_is_capped_so_windows_stay_within_five_percent_of_the_floor():
    acc, policy = make(linger_s=0.500)
    policy.on_response(1, 0.300, now=0.0, throttle_ms=0, retried=False)  # a slow broker
    append(acc, policy, 0, now=1.000)
    deadline = policy.next_wakeup()
    assert deadline == pytest.approx(1.000 + 0.500 * 20 / 21)
    # windows back to back over 60 s: at most 5% more than 60 / 0.5 = 120
    assert 60.0 / (deadline - 1.000) <= 120 * 1.05 + 1e-9


# ------------------------------------------------------------ window start
def test_a_message_due_during_the_previous_send_is_timed_from_when_it_was_due():
    acc, policy = make(linger_s=0.500)
    append(acc, policy, 0, now=1.000)
    assert sent_slots(policy.poll(1.500, PollContext(FREE))) == [[0]]
    # due at 1.501 while kbatch was busy building that send; appended at 1.508
    append(acc, policy, 1, now=1.508, intended=1.501)
    assert policy.next_wakeup() == pytest.approx(2.001)


def test_a_window_never_starts_before_the_previous_send_however_old_the_message():
    acc, policy = make(linger_s=0.500)
    append(acc, policy, 0, now=1.000)
    assert sent_slots(policy.poll(1.500, PollContext(FREE))) == [[0]]
    append(acc, policy, 1, now=1.700, intended=0.900)  # a stalled generator's message
    assert policy.next_wakeup() == pytest.approx(2.000)  # the send start + the window


def test_the_first_window_starts_at_the_first_add_even_for_old_messages():
    acc, policy = make(linger_s=0.500)
    append(acc, policy, 0, now=1.000, intended=0.200)  # the seed's "key insight"
    assert policy.next_wakeup() == pytest.approx(1.500)


# ------------------------------------------------- held partitions (retry backoff)
def _poll_within(policy, now: float, context: PollContext, seconds: int = 5):
    """`poll`, failing (not hanging) if it does not return: a collection of held
    partitions was sent again and again inside one poll."""
    import signal

    def stuck(signum, frame):
        raise AssertionError("poll did not return")

    previous = signal.signal(signal.SIGALRM, stuck)
    signal.alarm(seconds)
    try:
        return policy.poll(now, context)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_a_flush_of_held_partitions_sends_nothing_and_waits_for_the_retry():
    acc, policy = make(partitions=2)
    append(acc, policy, 0, now=0.0)
    acc.hold(0)  # its earlier batch waits for retry.backoff.ms
    flushing = PollContext(FREE, flushing=True)
    assert _poll_within(policy, 0.001, flushing) == []
    assert policy.stats()["sends"] == 1  # one send, that found nothing drainable
    assert policy.next_wakeup() is None  # time cannot help; the retry's return will
    assert _poll_within(policy, 0.002, flushing) == []
    assert policy.stats()["sends"] == 2  # a poll (an event) tries once more, no more
    acc.release(0)
    plans = _poll_within(policy, 0.100, flushing)
    assert sent_slots(plans) == [[0]]
    assert plans[0].reason == "flush"


def test_a_held_partition_does_not_hold_back_the_others_once_an_append_comes():
    acc, policy = make(partitions=2, linger_s=0.010)
    append(acc, policy, 0, now=0.0)
    acc.hold(0)
    assert _poll_within(policy, 0.010, PollContext(FREE)) == []  # window over, all held
    assert policy.next_wakeup() == pytest.approx(0.020)  # it rejoined: a new window
    assert _poll_within(policy, 0.020, PollContext(FREE)) == []
    append(acc, policy, 1, now=0.022)  # an event: the collection goes with what it can
    plans = _poll_within(policy, 0.030, PollContext(FREE))
    assert sent_slots(plans) == [[1]]
    assert acc.has_data(0)  # still queued, still held, collected for the next window
    acc.release(0)
    assert _poll_within(policy, 0.040, PollContext(FREE)) != []


# ------------------------------------- a due collection behind an unfinished send
def _polls_until_quiet(policy, now: float, context: PollContext, most: int = 100) -> int:
    """Poll as the engine does, again whenever `next_wakeup` says a poll is due by `now`
    (no event comes: the broker has not answered); the number of polls made."""
    for polls in range(1, most + 1):
        assert policy.poll(now, context) == []
        wake = policy.next_wakeup()
        if wake is None or wake > now:
            return polls
    return most + 1


@pytest.mark.parametrize("flushing", [False, True])
def test_a_due_collection_behind_an_unfinished_send_waits_for_a_response(flushing: bool):
    """A send that needs more requests than the broker has free slots stays pending; the
    next collection, once due, can only go after it, when a response frees a slot. Its
    window end (or a flush) is in the past: reported as a wake-up, the engine turned
    without pause as long as the broker took (at 10,000 partitions on a slow Kafka node,
    most of a core and 64 µs of kbatch CPU per message)."""
    acc, policy = make(partitions=4, linger_s=0.010, max_request_size=request_room(1))
    for slot in range(3):
        append(acc, policy, slot, now=0.0)
    assert sent_slots(policy.poll(0.010, PollContext({1: 1}))) == [[0]]  # 1 and 2 wait
    append(acc, policy, 3, now=0.011)  # the next window: until 0.021
    blocked = PollContext({}, flushing=flushing)
    now = 0.012 if flushing else 0.025
    assert _polls_until_quiet(policy, now, blocked) == 1
    assert policy.next_wakeup() is None  # only a response can help
    # the response: the unfinished send goes on, then the next collection, as before
    plans = policy.poll(now + 0.001, PollContext({1: 5}, flushing=flushing))
    assert sent_slots(plans) == [[1], [2], [3]]
    # the unfinished send keeps its reason; the collection behind it has its own
    assert [plan.reason for plan in plans] == [
        "broker_linger", "broker_linger", "flush" if flushing else "broker_linger"]
    assert policy.stats()["sends"] == 2
    assert acc.empty


def test_a_collection_not_due_behind_an_unfinished_send_still_wakes_at_its_window_end():
    acc, policy = make(partitions=4, linger_s=0.010, max_request_size=request_room(1))
    for slot in range(3):
        append(acc, policy, slot, now=0.0)
    policy.poll(0.010, PollContext({1: 1}))
    append(acc, policy, 3, now=0.011)
    assert policy.poll(0.012, PollContext({})) == []
    assert policy.next_wakeup() == pytest.approx(0.021)  # its window ends then
    assert policy.poll(0.021, PollContext({})) == []  # due now, behind the send
    assert policy.next_wakeup() is None
    append(acc, policy, 3, now=0.022, message_id=1)  # an append does not unblock it
    assert policy.poll(0.022, PollContext({})) == []
    assert policy.next_wakeup() is None
