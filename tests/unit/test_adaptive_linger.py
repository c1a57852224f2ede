"""Mode `adaptive` (KIP-1224's queued flush), with synthetic time and a real Accumulator.

Each test drives the policy the way the engine does: a generator pass is a run of
`append` calls followed by a `poll` whose context carries the backlog the pass left; a
response is a `poll` with a free request slot.
"""

from __future__ import annotations

import math

import pytest

from producer_core.config import build_settings
from producer_core.engine.core.accumulator import (
    PARTITION_OVERHEAD_BYTES,
    REQUEST_OVERHEAD_BYTES,
    Accumulator,
    TopicPartition,
)
from producer_core.engine.core.linger.adaptive_policy import AdaptiveLinger
from producer_core.engine.core.linger.base import PollContext, RequestLimits
from producer_core.engine.modes import make_policy

VALUE = bytes(10)
FREE = {1: 5, 2: 5}
BUSY = {1: 0, 2: 0}


def make(partitions: int = 4, leaders: list[int] | None = None, max_wait_s: float | None = None,
         max_partitions: int = -1, max_bytes: int | None = -1, max_request_size: int = 1 << 20):
    acc = Accumulator([TopicPartition("t", p) for p in range(partitions)], 16384)
    policy = AdaptiveLinger(acc, leaders or [1] * partitions,
                            RequestLimits(max_request_size, None), max_wait_s, max_partitions,
                            max_bytes)
    return acc, policy


def append(acc, policy, slot: int, now: float, intended: float | None = None) -> None:
    event = acc.append(slot, 0, None, VALUE, now if intended is None else intended, now, 0)
    if event:
        policy.on_append(slot, event, now)


def end_pass(policy, now: float, free=FREE, oldest_due: float | None = None,
             memory_exhausted: bool = False):
    """The end of a generator pass: the poll, with the backlog the pass leaves."""
    return policy.poll(now, PollContext(free, oldest_due, memory_exhausted))


def sent(plans) -> list[tuple[str, list[int]]]:
    return [(plan.reason, [b.slot for b in plan.batches]) for plan in plans]


def records(plans) -> int:
    return sum(b.record_count for plan in plans for b in plan.batches)


def test_idle_a_message_goes_at_the_poll_that_ends_its_pass():
    acc, policy = make()
    append(acc, policy, 0, now=1.000)
    assert policy.next_wakeup() == pytest.approx(1.000)  # its flush waits behind nothing
    plans = end_pass(policy, 1.000, oldest_due=1.010)  # next message due in 10 ms
    assert sent(plans) == [("queued_flush", [0])]
    assert plans[0].batches[0].drained_at - plans[0].batches[0].created == 0.0
    assert acc.empty and policy.next_wakeup() is None
    # the next message, alone again, also goes at once: a new collection, a new ticket
    append(acc, policy, 1, now=1.010)
    assert sent(end_pass(policy, 1.010, oldest_due=1.020)) == [("queued_flush", [1])]
    assert policy.stats()["flush_tickets"] == {"queued": 2, "ran": 2, "stale": 0, "waiting": 0}


def test_appends_of_the_same_pass_are_ahead_of_the_flush_and_join_the_batch():
    acc, policy = make()
    for i in range(40):  # one pass of 40 messages over 4 partitions
        append(acc, policy, i % 4, now=2.000, intended=1.990 + i * 0.00025)
    plans = end_pass(policy, 2.000, oldest_due=2.0001)
    assert sent(plans) == [("queued_flush", [0, 1, 2, 3])]
    assert records(plans) == 40
    assert policy.stats()["flush_tickets"]["queued"] == 1  # one collection, one ticket


def test_overdue_messages_a_pass_could_not_take_are_ahead_of_the_flush():
    acc, policy = make()
    # pass 1 took a chunk; messages intended up to 2.000 are still waiting (overdue)
    append(acc, policy, 0, now=2.000, intended=1.900)
    append(acc, policy, 1, now=2.000, intended=1.950)
    assert end_pass(policy, 2.000, oldest_due=1.960) == []  # the flush is behind them
    assert policy.next_wakeup() is None  # the generator's next pass comes first
    # pass 2 appends them (all intended before the flush was queued at 2.000)
    append(acc, policy, 2, now=2.004, intended=1.960)
    append(acc, policy, 3, now=2.004, intended=1.999)
    plans = end_pass(policy, 2.004, oldest_due=2.005)
    assert sent(plans) == [("queued_flush", [0, 1, 2, 3])]
    # a message intended after the flush was queued arrived behind it: next collection
    append(acc, policy, 0, now=2.006, intended=2.005)
    assert sent(end_pass(policy, 2.006, oldest_due=2.010)) == [("queued_flush", [0])]


def test_without_a_free_request_slot_the_collection_keeps_growing_until_one_frees():
    acc, policy = make()
    append(acc, policy, 0, now=1.000)
    assert end_pass(policy, 1.000, free=BUSY) == []  # the flush ran; no slot to send in
    assert policy.next_wakeup() is None  # only a response can unblock it
    for now in (1.001, 1.002, 1.003):  # later passes add to the same collection
        append(acc, policy, 1, now=now)
        append(acc, policy, 2, now=now)
        assert end_pass(policy, now, free=BUSY) == []
    plans = policy.poll(1.004, PollContext(FREE))  # a response freed a slot: polled at once
    assert sent(plans) == [("slot_freed", [0, 1, 2])]
    assert records(plans) == 7
    stats = policy.stats()
    assert stats["flush_tickets"]["queued"] == 1 and stats["sends_by_reason"]["slot_freed"] == 1


def test_a_flush_left_over_from_a_collection_a_cap_already_sent_does_nothing():
    acc, policy = make(max_partitions=2)
    append(acc, policy, 0, now=1.000, intended=0.990)
    append(acc, policy, 1, now=1.000, intended=0.991)
    # the flush of collection 1 waits behind overdue messages; the partition cap sends it
    assert sent(end_pass(policy, 1.000, oldest_due=0.995)) == [("max_partitions", [0, 1])]
    append(acc, policy, 2, now=1.002, intended=0.995)  # collection 2 starts, its own ticket
    assert end_pass(policy, 1.002, oldest_due=0.999) == []  # both tickets still behind
    plans = end_pass(policy, 1.004, oldest_due=1.010)  # a pass that caught up
    # ticket 1 is stale (its collection is gone); ticket 2 sends collection 2, once
    assert sent(plans) == [("queued_flush", [2])]
    assert policy.stats()["flush_tickets"] == {"queued": 2, "ran": 1, "stale": 1, "waiting": 0}
    assert policy.poll(1.005, PollContext(FREE)) == []


def test_the_wait_cap_sends_a_collection_whose_flush_is_still_behind_pending_work():
    acc, policy = make(max_wait_s=0.005)
    append(acc, policy, 0, now=1.000, intended=0.900)
    assert end_pass(policy, 1.000, oldest_due=0.950) == []
    assert policy.next_wakeup() == pytest.approx(1.005)
    append(acc, policy, 1, now=1.003, intended=0.950)
    assert end_pass(policy, 1.003, oldest_due=0.960) == []
    append(acc, policy, 2, now=1.006, intended=0.960)
    plans = end_pass(policy, 1.006, oldest_due=0.970)
    assert sent(plans) == [("linger_max", [0, 1, 2])]
    assert policy.stats()["collecting_for"]["max_ms"] == pytest.approx(6.0)
    # its ticket, when it finally runs, is stale
    append(acc, policy, 3, now=1.007, intended=0.970)
    assert sent(end_pass(policy, 1.007, oldest_due=1.100)) == [("queued_flush", [3])]
    assert policy.stats()["flush_tickets"]["stale"] == 1


def test_the_wait_cap_bounds_batch_linger_under_a_permanent_backlog():
    acc, policy = make(max_wait_s=0.010)
    lingers = []
    now = 0.0
    for step in range(200):  # the generator never catches up
        now = step * 0.001
        append(acc, policy, step % 4, now=now, intended=now - 0.5)
        for plan in end_pass(policy, now, oldest_due=now - 0.4):
            lingers += [b.drained_at - b.created for b in plan.batches]
    # sent at the first poll at or after the cap (polls come every millisecond here)
    assert lingers and max(lingers) < 0.010 + 0.001 + 1e-9


def test_flushes_are_per_broker_and_a_busy_broker_does_not_hold_back_another():
    acc, policy = make(leaders=[1, 2, 1, 2])
    for slot in range(4):
        append(acc, policy, slot, now=1.000)
    plans = end_pass(policy, 1.000, free={1: 0, 2: 5})
    assert sent(plans) == [("queued_flush", [1, 3])]
    assert sent(policy.poll(1.002, PollContext({1: 1, 2: 5}))) == [("slot_freed", [0, 2])]


def test_a_retried_batch_goes_at_the_next_poll_and_flushing_sends_everything():
    acc, policy = make()
    append(acc, policy, 0, now=1.000)
    (plan,) = end_pass(policy, 1.000)
    acc.requeue_front(plan.batches[0])
    policy.on_requeue(0, 1.100)  # from a timer callback, outside a pass
    assert policy.next_wakeup() == pytest.approx(1.100)
    assert sent(policy.poll(1.100, PollContext(FREE))) == [("queued_flush", [0])]
    append(acc, policy, 1, now=1.2, intended=1.1)
    assert end_pass(policy, 1.2, oldest_due=1.15) == []
    assert sent(policy.poll(1.2, PollContext(FREE, flushing=True))) == [("flush", [1])]


def test_collections_rebuilt_by_a_leader_change_get_new_flushes():
    acc, policy = make(leaders=[1, 1, 2, 2])
    append(acc, policy, 0, now=1.000)
    append(acc, policy, 2, now=1.000)
    assert end_pass(policy, 1.000, free=BUSY) == []  # both flushes ran; no slot anywhere
    policy.set_leaders([1, 1, 2, 2])  # nothing moved: the collections stand
    assert policy.stats()["flush_tickets"]["queued"] == 2
    policy.set_leaders([2, 2, 2, 2])  # partition 0 moves to broker 2
    assert policy.stats()["flush_tickets"]["queued"] == 3
    plans = end_pass(policy, 1.001, free={1: 5, 2: 5})
    assert [(p.broker, sorted(b.slot for b in p.batches)) for p in plans] == [(2, [0, 2])]
    assert policy.stats()["flush_tickets"]["ran"] == 3


FIVE_RECORD_BATCH, FIVE_RECORD_BYTES = 146, 85
"""Wire size and record bytes of a batch of five VALUE records."""


def test_under_unthrottled_load_a_collection_goes_when_it_fills_one_request():
    # with --rate max a message is always waiting: the flush never gets ahead of the
    # generator, and the size cap (one full request, KIP-1224's max.message.bytes) sends
    room = REQUEST_OVERHEAD_BYTES + 2 * (FIVE_RECORD_BATCH + PARTITION_OVERHEAD_BYTES)
    acc, policy = make(partitions=6, max_bytes=None, max_request_size=room)
    assert policy.request_cap and policy.max_bytes == room
    for i in range(24):  # 6 partitions x 4 records: below one request's worth
        append(acc, policy, i % 6, now=1.0)
    assert end_pass(policy, 1.0, oldest_due=-math.inf) == []
    assert policy.next_wakeup() is None
    for i in range(6):  # the fifth record each: 6 x 85 record bytes >= the request
        append(acc, policy, i, now=1.001)
    assert acc.head(0).size_bytes() == FIVE_RECORD_BATCH
    assert acc.head(0).record_bytes == FIVE_RECORD_BYTES
    plans = end_pass(policy, 1.001, oldest_due=-math.inf)
    # one request: the head batches that fit, oldest-joined first; the rest stays collected
    assert sent(plans) == [("max_bytes", [0, 1])]
    assert sum(b.size_bytes() + PARTITION_OVERHEAD_BYTES for b in plans[0].batches) \
        + REQUEST_OVERHEAD_BYTES <= room
    assert end_pass(policy, 1.002, oldest_due=-math.inf) == []
    assert policy.stats()["flush_tickets"] == {"queued": 2, "ran": 0, "stale": 1, "waiting": 1}
    # the rest is the next collection; its window started when its partitions joined
    # waiting for memory: nothing more can be appended, the flush no longer waits
    plans = end_pass(policy, 1.003, oldest_due=-math.inf, memory_exhausted=True)
    assert sent(plans) == [("queued_flush", [2, 3]), ("queued_flush", [4, 5])]  # 2 requests
    stats = policy.stats()
    assert stats["sends"] == 2 and stats["requests_per_send"]["max"] == 2
    assert stats["collecting_for"]["max_ms"] == pytest.approx(3.0)  # since 1.000


def test_settings_build_the_policy():
    settings = build_settings({"adaptive.linger.max.ms": "20", "broker.batch.max.bytes": "1000"},
                              mode="adaptive")
    acc = Accumulator([TopicPartition("t", 0)], 16384)
    policy = make_policy("adaptive", acc, [1], settings)
    assert isinstance(policy, AdaptiveLinger)
    assert policy.max_wait_s == pytest.approx(0.020) and policy.max_bytes == 1000
    assert not policy.request_cap and policy.stats_key == "collector"
    default = make_policy("adaptive", acc, [1], build_settings({}, mode="adaptive"))
    assert default.max_wait_s is None
    assert default.request_cap and default.max_bytes == settings.max_request_size
    assert "linger.ms is ignored in mode adaptive" in build_settings(
        {"linger.ms": "5"}, mode="adaptive").warnings[0]
