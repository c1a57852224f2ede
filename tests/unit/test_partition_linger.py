"""Per-partition linger and mode none, driven with synthetic time."""

from __future__ import annotations

import pytest

from producer_core.engine.core.accumulator import Accumulator, TopicPartition
from producer_core.engine.core.linger.base import PollContext, RequestLimits
from producer_core.engine.core.linger.partition_policy import NoLinger, PartitionLinger

VALUE = bytes(100)


def make(partitions: int = 4, linger_s: float = 0.010, batch_size: int = 16384,
         leaders: list[int] | None = None, max_request_size: int = 1 << 20,
         max_partitions: int | None = None):
    acc = Accumulator([TopicPartition("t", p) for p in range(partitions)], batch_size)
    limits = RequestLimits(max_request_size, max_partitions)
    policy = PartitionLinger(acc, leaders or [1] * partitions, limits, linger_s)
    return acc, policy


def append(acc, policy, slot: int, now: float, message_id: int = 0) -> None:
    event = acc.append(slot, message_id, None, VALUE, now, now, 0)
    if event:
        policy.on_append(slot, event, now)


def sent_slots(plans) -> list[list[int]]:
    return [[b.slot for b in plan.batches] for plan in plans]


def test_staggered_arrivals_send_only_expired_partitions():
    acc, policy = make(linger_s=0.010)
    append(acc, policy, 0, now=0.000)
    append(acc, policy, 1, now=0.004)
    append(acc, policy, 2, now=0.008)
    assert policy.poll(0.009, PollContext({1: 5})) == []
    assert policy.next_wakeup() == pytest.approx(0.010)
    plans = policy.poll(0.010, PollContext({1: 5}))
    assert sent_slots(plans) == [[0]]
    assert plans[0].reason == "linger"
    assert policy.next_wakeup() == pytest.approx(0.014)
    plans = policy.poll(0.0185, PollContext({1: 5}))
    # partition 2 expires at 0.018, so both are ready at 0.0185 and share one request
    assert sent_slots(plans) == [[1, 2]]
    assert acc.empty


def test_full_batch_is_ready_at_once():
    acc, policy = make(batch_size=1024, linger_s=10.0)
    for i in range(30):  # ~110 bytes a record: the first batch fills after ~8 records
        append(acc, policy, 3, now=0.001 * i, message_id=i)
    full_batches = len(acc.queues[3]) - 1
    assert full_batches >= 2
    plans = policy.poll(0.05, PollContext({1: 5}))
    # one batch per partition per request: each full batch goes in its own request at once
    assert sent_slots(plans) == [[3]] * full_batches
    assert {p.reason for p in plans} == {"batch_full"}
    # the open batch (not full, linger not expired) stays behind
    assert len(acc.queues[3]) == 1 and not acc.queues[3][0].closed
    assert policy.next_wakeup() == pytest.approx(acc.queues[3][0].created + 10.0)


def test_no_request_slot_means_no_send_until_one_frees():
    acc, policy = make(linger_s=0.0)
    append(acc, policy, 0, now=0.0)
    assert policy.poll(1.0, PollContext({})) == []
    append(acc, policy, 1, now=1.0)
    plans = policy.poll(1.0, PollContext({1: 1}))
    assert sent_slots(plans) == [[0, 1]]


def test_requests_are_split_per_broker():
    acc, policy = make(partitions=4, linger_s=0.0, leaders=[1, 2, 1, 2])
    for slot in range(4):
        append(acc, policy, slot, now=0.0)
    plans = policy.poll(0.0, PollContext({1: 5, 2: 5}))
    by_broker = {plan.broker: [b.slot for b in plan.batches] for plan in plans}
    assert by_broker == {1: [0, 2], 2: [1, 3]}


def test_max_partitions_per_request_reproduces_one_partition_requests():
    acc, policy = make(partitions=3, linger_s=0.0, max_partitions=1)
    for slot in range(3):
        append(acc, policy, slot, now=0.0)
    plans = policy.poll(0.0, PollContext({1: 2}))
    assert sent_slots(plans) == [[0], [1]]  # two free slots: two one-partition requests
    assert sent_slots(policy.poll(0.0, PollContext({1: 1}))) == [[2]]


def test_max_request_size_splits_requests():
    acc, policy = make(partitions=3, linger_s=0.0, batch_size=2048, max_request_size=2200)
    for slot in range(3):
        for i in range(12):
            append(acc, policy, slot, now=0.0, message_id=i)
    plans = policy.poll(0.0, PollContext({1: 5}))
    assert [len(p.batches) for p in plans] == [1, 1, 1]
    assert all(sum(b.size_bytes() for b in p.batches) <= 2200 for p in plans)


def test_flush_makes_everything_ready():
    acc, policy = make(linger_s=60.0)
    append(acc, policy, 0, now=0.0)
    append(acc, policy, 2, now=0.0)
    assert policy.poll(0.001, PollContext({1: 5})) == []
    plans = policy.poll(0.001, PollContext({1: 5}, flushing=True))
    assert sent_slots(plans) == [[0, 2]]
    assert plans[0].reason == "flush"


def test_requeued_batch_goes_first_and_at_once():
    acc, policy = make(linger_s=60.0)
    append(acc, policy, 0, now=0.0, message_id=7)
    [plan] = policy.poll(0.0, PollContext({1: 1}, flushing=True))
    batch = plan.batches[0]
    append(acc, policy, 0, now=0.1, message_id=8)
    acc.requeue_front(batch)
    policy.on_requeue(0, 0.2)
    [plan] = policy.poll(0.2, PollContext({1: 1}))
    assert list(plan.batches[0].ids) == [7]


def test_none_mode_sends_whatever_is_queued():
    acc = Accumulator([TopicPartition("t", p) for p in range(2)], 16384)
    policy = NoLinger(acc, [1, 1], RequestLimits(1 << 20))
    append(acc, policy, 0, now=0.0)
    append(acc, policy, 1, now=0.0)
    plans = policy.poll(0.0, PollContext({1: 5}))
    assert sent_slots(plans) == [[0, 1]] and plans[0].reason == "immediate"
    assert policy.next_wakeup() is None


def _ready_order(poll_at_deadlines: bool) -> tuple[list[list[int]], list[float | None]]:
    """Slots 0-2 wait for linger (deadlines 10, 12, 14 ms) while every request slot is
    taken; slot 3 fills a batch at 15 ms; slots free at 16 ms. With
    `poll_at_deadlines` the loop polls at each deadline anyway (what it did when every
    deadline woke it)."""
    acc, policy = make(partitions=4, linger_s=0.010, batch_size=1024)
    wakeups = []
    for slot, now in ((0, 0.000), (1, 0.002), (2, 0.004)):
        append(acc, policy, slot, now=now)
    assert policy.poll(0.005, PollContext({})) == []  # every slot taken
    wakeups.append(policy.next_wakeup())
    if poll_at_deadlines:
        for deadline in (0.010, 0.012, 0.014):
            assert policy.poll(deadline, PollContext({})) == []
    for i in range(12):  # ~110 bytes a record: slot 3's first batch fills at 15 ms
        append(acc, policy, 3, now=0.015, message_id=i)
    plans = policy.poll(0.016, PollContext({1: 2}))  # one request; a slot stays free
    wakeups.append(policy.next_wakeup())
    return sent_slots(plans), wakeups


def test_with_every_request_slot_taken_linger_deadlines_wake_no_one():
    sent, wakeups = _ready_order(poll_at_deadlines=False)
    assert wakeups[0] is None  # only a response (a free slot) can send anything
    assert wakeups[1] == pytest.approx(0.015 + 0.010)  # slot 3's open batch, once free


def test_deadlines_passed_meanwhile_keep_their_place_in_the_ready_order():
    """The slots whose deadlines passed while no slot was free are ready before slot 3,
    whose batch filled later: the same request as when every deadline was polled."""
    sent, _ = _ready_order(poll_at_deadlines=False)
    assert sent == _ready_order(poll_at_deadlines=True)[0] == [[0, 1, 2, 3]]


def test_ready_partitions_go_in_librdkafkas_round_robin_not_oldest_first():
    """librdkafka's broker thread walks its partitions in a circle from a start that moves
    on: slot 3, ready first, waits for its turn after slot 1."""
    acc, policy = make(partitions=4, linger_s=0.0, max_partitions=1)
    append(acc, policy, 3, now=0.000)
    append(acc, policy, 1, now=0.001)
    assert sent_slots(policy.poll(0.002, PollContext({1: 1}))) == [[1]]
    append(acc, policy, 0, now=0.003)  # behind the start (now past slot 1): next round
    assert sent_slots(policy.poll(0.003, PollContext({1: 1}))) == [[3]]
    append(acc, policy, 2, now=0.004)  # the circle wraps: slot 0, then slot 2
    assert sent_slots(policy.poll(0.004, PollContext({1: 2}))) == [[0], [2]]
    assert policy.drain_cursor() == {1: 3}


def test_each_broker_has_its_own_round_robin():
    acc, policy = make(partitions=4, linger_s=0.0, max_partitions=1, leaders=[1, 2, 1, 2])
    for slot in (3, 2, 1, 0):
        append(acc, policy, slot, now=0.0)
    plans = policy.poll(0.0, PollContext({1: 1, 2: 1}))
    assert sorted(sent_slots(plans)) == [[0], [1]]
    assert sorted(sent_slots(policy.poll(0.0, PollContext({1: 1, 2: 1})))) == [[2], [3]]


def test_a_replay_can_put_the_round_robin_where_the_client_left_it():
    acc, policy = make(partitions=4, linger_s=0.0, max_partitions=1)
    for slot in range(4):
        append(acc, policy, slot, now=0.0)
    # the client served slot 1: its next loop starts at slot 2 at the latest
    policy.set_drain_cursor({1: policy.drain_cursor_after(1, {1}) or 0})
    assert sent_slots(policy.poll(0.0, PollContext({1: 1}))) == [[2]]
    # without a cap on partitions a request takes the ready ones in the walk's order
    acc, policy = make(partitions=4, linger_s=0.0)
    for slot in range(4):
        append(acc, policy, slot, now=0.0)
    policy.set_drain_cursor({1: 2})
    [plan] = policy.poll(0.0, PollContext({1: 1}))
    assert [b.slot for b in plan.batches] == [2, 3, 0, 1]


def capped(partitions: int = 2, cap: int | None = 5, leaders: list[int] | None = None):
    acc = Accumulator([TopicPartition("t", p) for p in range(partitions)], 16384)
    policy = PartitionLinger(acc, leaders or [1] * partitions, RequestLimits(1 << 20, 1),
                             0.005, max_inflight_messages=cap)
    return acc, policy


def test_a_partition_with_five_messages_in_flight_waits_for_their_response():
    # librdkafka with idempotence: a partition builds only while fewer than 5 of its
    # *messages* are in flight (rd_kafka_toppar_producer_serve), whatever the free slots
    acc, policy = capped()
    for i in range(6):
        append(acc, policy, 0, now=0.0001 * i, message_id=i)
    assert sent_slots(policy.poll(0.006, PollContext({1: 5}))) == [[0]]
    for i in range(3):
        append(acc, policy, 0, now=0.007 + 0.0001 * i, message_id=10 + i)
    append(acc, policy, 1, now=0.007, message_id=20)
    # both ready at 0.012: partition 0 is held by its 6 messages in flight, 1 goes
    assert sent_slots(policy.poll(0.013, PollContext({1: 4}))) == [[1]]
    assert policy.poll(0.014, PollContext({1: 3})) == []
    policy.on_response(1, 0.008, 0.015, 0, False)  # the oldest request: partition 0's
    plans = policy.poll(0.015, PollContext({1: 4}))
    assert sent_slots(plans) == [[0]] and plans[0].batches[0].record_count == 3


def test_under_the_cap_a_partition_builds_one_request_of_everything_queued():
    acc, policy = capped()
    for i in range(4):
        append(acc, policy, 0, now=0.0, message_id=i)
    assert sent_slots(policy.poll(0.006, PollContext({1: 5}))) == [[0]]  # 4 in flight
    for i in range(7):
        append(acc, policy, 0, now=0.007, message_id=10 + i)
    plans = policy.poll(0.013, PollContext({1: 4}))
    assert sent_slots(plans) == [[0]] and plans[0].batches[0].record_count == 7
    # 11 in flight now: a third batch waits for both answers, oldest first
    append(acc, policy, 0, now=0.014, message_id=30)
    assert policy.poll(0.020, PollContext({1: 3})) == []
    policy.on_response(1, 0.01, 0.021, 0, False)
    assert policy.poll(0.021, PollContext({1: 4})) == []  # 7 still in flight
    policy.on_response(1, 0.01, 0.022, 0, True)  # a failed request releases alike
    assert sent_slots(policy.poll(0.022, PollContext({1: 5}))) == [[0]]


def test_without_the_cap_and_on_another_broker_nothing_is_held():
    acc, policy = capped(cap=None)
    for i in range(6):
        append(acc, policy, 0, now=0.0, message_id=i)
    policy.poll(0.006, PollContext({1: 5}))
    append(acc, policy, 0, now=0.007, message_id=10)
    assert sent_slots(policy.poll(0.012, PollContext({1: 4}))) == [[0]]
    # a response from broker 2 does not release broker 1's requests
    acc, policy = capped(leaders=[1, 2])
    for i in range(6):
        append(acc, policy, 0, now=0.0, message_id=i)
    policy.poll(0.006, PollContext({1: 5, 2: 5}))
    append(acc, policy, 0, now=0.007, message_id=10)
    policy.on_response(2, 0.001, 0.008, 0, False)
    assert policy.poll(0.012, PollContext({1: 4, 2: 5})) == []


@pytest.mark.parametrize(("given", "cap"), [
    ([], 5), ([("enable.idempotence", "false")], None),
    ([("partition.max.inflight.messages", "0")], None),
    ([("enable.idempotence", "false"), ("partition.max.inflight.messages", "2")], 2)])
def test_mode_partition_caps_messages_in_flight_as_librdkafka_with_idempotence(given, cap):
    from producer_core.analysis.compare import parse_mode_configs
    from producer_core.engine.modes import make_policy

    settings = parse_mode_configs(["partition"], [("acks", "all"), *given], [],
                                  linger_ms=5)[0].settings
    acc = Accumulator([TopicPartition("t", 0)], 16384)
    policy = make_policy("partition", acc, [1], settings, ())
    assert policy.max_inflight_messages == cap


def test_requests_given_up_unanswered_release_their_partitions():
    # a closed connection or a request timeout: the engine answers nothing, but once every
    # slot of the broker is free nothing of it is in flight, and the partition goes again
    acc = Accumulator([TopicPartition("t", 0)], 16384)
    policy = PartitionLinger(acc, [1], RequestLimits(1 << 20, 1), 0.005,
                             max_inflight_messages=5, connection_slots=5)
    for i in range(6):
        append(acc, policy, 0, now=0.0, message_id=i)
    policy.poll(0.006, PollContext({1: 5}))
    append(acc, policy, 0, now=0.007, message_id=10)
    assert policy.poll(0.012, PollContext({1: 4})) == []
    assert sent_slots(policy.poll(0.013, PollContext({1: 5}))) == [[0]]
