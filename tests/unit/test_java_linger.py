"""Mode java with synthetic time: node readiness, drain of every partition with data,
memory exhaustion, and max.block.ms."""

from __future__ import annotations

import pytest

from producer_core.config import build_settings
from producer_core.engine.core.accumulator import Accumulator, TopicPartition
from producer_core.engine.core.linger.base import PollContext, RequestLimits
from producer_core.engine.core.linger.java_policy import (
    JavaLinger,
    java_metadata_order,
    java_string_hash,
    sender_timer,
)
from producer_core.engine.core.memory import MAX_BLOCK_REASON, BatchMemory, BlockedGenerator
from producer_core.engine.modes import make_policy
from producer_core.errors import ConfigError
from producer_core.results.metrics import RunMetrics

VALUE = bytes(100)


def make(partitions: int = 6, linger_s: float = 0.010, batch_size: int = 16384,
         leaders: list[int] | None = None, max_request_size: int = 1 << 20,
         max_partitions: int | None = None):
    acc = Accumulator([TopicPartition("t", p) for p in range(partitions)], batch_size)
    limits = RequestLimits(max_request_size, max_partitions)
    policy = JavaLinger(acc, leaders or [1] * partitions, limits, linger_s)
    return acc, policy


def append(acc, policy, slot: int, now: float, message_id: int = 0) -> None:
    event = acc.append(slot, message_id, None, VALUE, now, now, 0)
    if event:
        policy.on_append(slot, event, now)


def sent(plans) -> list[tuple[int, list[int]]]:
    return [(plan.broker, sorted(b.slot for b in plan.batches)) for plan in plans]


def test_make_policy_builds_java_with_java_defaults():
    settings = build_settings(mode="java")
    acc = Accumulator([TopicPartition("t", 0)], settings.batch_size)
    policy = make_policy("java", acc, [1], settings)
    assert isinstance(policy, JavaLinger)
    assert policy.linger_s == pytest.approx(0.005)  # Java's linger.ms default
    assert settings.batch_size == 16384 and settings["buffer.memory"] == 32 * 1024 * 1024
    assert settings["max.block.ms"] == 60000


def test_one_expired_partition_makes_its_broker_ready_and_drains_every_partition():
    # slots 0-2 led by broker 1, slots 3-5 by broker 2
    acc, policy = make(leaders=[1, 1, 1, 2, 2, 2], linger_s=0.010)
    append(acc, policy, 0, now=0.000)
    append(acc, policy, 1, now=0.006)
    append(acc, policy, 2, now=0.009)
    append(acc, policy, 3, now=0.001)
    append(acc, policy, 4, now=0.008)
    assert policy.poll(0.0090, PollContext({1: 5, 2: 5})) == []
    # partition 0 expires at 0.010; the Sender that looked at 0.009 sleeps 1 whole ms
    assert policy.next_wakeup() == pytest.approx(0.010)
    plans = policy.poll(0.010, PollContext({1: 5, 2: 5}))
    # partition 0 expired: broker 1 sends partitions 0, 1 and 2 (not expired) in one request;
    # broker 2's partitions have not expired (3 expires at 0.011)
    assert sent(plans) == [(1, [0, 1, 2])]
    assert plans[0].reason == "linger"
    assert policy.next_wakeup() == pytest.approx(0.011)
    assert policy.poll(0.0105, PollContext({1: 5, 2: 5})) == []
    plans = policy.poll(0.011, PollContext({1: 5, 2: 5}))
    assert sent(plans) == [(2, [3, 4])]
    assert acc.empty
    stats = policy.stats()
    assert stats["partitions_drained"] == 5 and stats["partitions_drained_sendable"] == 2


# ------------------------------------------- Java's millisecond clock and Sender wakes
def test_linger_is_counted_in_whole_milliseconds_of_javas_clock():
    # RecordAccumulator.batchReady: waitedTimeMs = nowMs - createdMs >= lingerMs, both
    # from Time.milliseconds(). Created at 10.9 ms, the batch is sendable from 15.0 ms.
    acc, policy = make(linger_s=0.005)
    append(acc, policy, 0, now=0.0109)
    assert policy.poll(0.0109, PollContext({1: 5})) == []
    # a Sender that looked at 10.9 ms polls for 15 - 10 = 5 whole ms: it wakes at 15.9
    assert policy.next_wakeup() == pytest.approx(0.0159)
    append(acc, policy, 1, now=0.0123)  # a new batch wakes the Sender (doSend)
    assert policy.poll(0.0123, PollContext({1: 5})) == []
    assert policy.next_wakeup() == pytest.approx(0.0153)  # 12.3 + (15 - 12) ms
    assert policy.poll(0.0152, PollContext({1: 5})) == []
    plans = policy.poll(policy.next_wakeup(), PollContext({1: 5}))
    assert sent(plans) == [(1, [0, 1])] and plans[0].reason == "linger"
    # partition 0 lingered 4.4 ms of linger.ms=5: Java's effective linger is 4-5 ms


def test_a_sender_woken_after_the_deadline_sends_at_once():
    acc, policy = make(linger_s=0.005)
    append(acc, policy, 0, now=0.0109)
    assert policy.poll(0.0109, PollContext({1: 5})) == []
    append(acc, policy, 1, now=0.01502)  # new batch at nowMs=15: partition 0 is ready
    assert sent(policy.poll(0.01502, PollContext({1: 5}))) == [(1, [0, 1])]


def test_a_record_added_to_an_open_batch_does_not_wake_the_sender_but_a_response_does():
    acc, policy = make(linger_s=0.005)
    append(acc, policy, 0, now=0.0109)
    assert policy.poll(0.0109, PollContext({1: 5})) == []
    append(acc, policy, 0, now=0.0155)  # same batch: doSend does not wake the Sender
    assert policy.poll(0.0155, PollContext({1: 5})) == []
    policy.on_response(1, 0.002, 0.0157, 0, False)  # a response ends client.poll
    assert sent(policy.poll(0.0157, PollContext({1: 5}))) == [(1, [0])]


def test_sender_timer_sleeps_whole_milliseconds_from_the_current_one():
    assert sender_timer(0.0123, 0.015) == pytest.approx(0.0153)
    assert sender_timer(0.0150, 0.015) == pytest.approx(0.015)
    assert sender_timer(0.0161, 0.015) == pytest.approx(0.0161)  # overdue: at once


def test_full_batch_makes_the_broker_ready_and_takes_the_others_along():
    acc, policy = make(batch_size=1024, linger_s=10.0)
    append(acc, policy, 5, now=0.0)
    for i in range(12):  # the first batch of partition 2 fills after ~8 records
        append(acc, policy, 2, now=0.001 * i, message_id=i)
    plans = policy.poll(0.02, PollContext({1: 5}))
    # first request: partition 2's full batch and partition 5's open batch; then partition
    # 2's open batch is not sendable (linger 10 s), so the broker is no longer ready
    assert sent(plans) == [(1, [2, 5])]
    assert plans[0].reason == "batch_full"
    assert acc.has_data(2) and not acc.has_data(5)


def test_memory_exhaustion_makes_every_broker_ready():
    acc, policy = make(leaders=[1, 1, 2, 2, 3, 3], linger_s=10.0)
    for slot in range(5):
        append(acc, policy, slot, now=0.0)
    assert policy.poll(0.001, PollContext({1: 5, 2: 5, 3: 5})) == []
    plans = policy.poll(0.002, PollContext({1: 5, 2: 5, 3: 5}, memory_exhausted=True))
    assert sent(plans) == [(1, [0, 1]), (2, [2, 3]), (3, [4])]
    assert {p.reason for p in plans} == {"memory"}
    assert acc.empty
    append(acc, policy, 0, now=0.003)
    assert policy.poll(0.004, PollContext({1: 5, 2: 5, 3: 5})) == []


def test_flush_makes_everything_ready():
    acc, policy = make(linger_s=10.0)
    append(acc, policy, 1, now=0.0)
    append(acc, policy, 4, now=0.0)
    plans = policy.poll(0.001, PollContext({1: 1}, flushing=True))
    assert sent(plans) == [(1, [1, 4])] and plans[0].reason == "flush"


def test_no_free_request_slot_means_no_request():
    acc, policy = make(linger_s=0.0)
    append(acc, policy, 0, now=0.0)
    assert policy.poll(0.0, PollContext({1: 0})) == []
    assert sent(policy.poll(0.001, PollContext({1: 1}))) == [(1, [0])]


def drain_all(policy, now: float, free: int = 10) -> list[list[int]]:
    """Sender passes at `now` until nothing more is sent: Java sends one request per node
    per pass, and a node still ready has its next pass come at once."""
    requests = []
    while plans := policy.poll(now, PollContext({1: free})):
        assert len(plans) == 1  # one node: one request per pass
        requests.extend(slots for _, slots in sent(plans))
    return requests


def test_max_request_size_cuts_the_request_and_the_next_pass_starts_where_it_stopped():
    # Java walks topic t's partitions in its metadata's order: 5, 4, 3, 2, 1, 0
    acc, policy = make(partitions=6, linger_s=0.010, max_request_size=520)
    for slot in range(6):
        append(acc, policy, slot, now=0.0)
    batch = acc.head(0).size_bytes()
    assert 3 * batch <= 520 < 4 * batch  # the limit counts the batches' bytes only
    (plan,) = policy.poll(0.010, PollContext({1: 10}))  # one request per Sender pass
    assert sorted(b.slot for b in plan.batches) == [3, 4, 5]
    assert policy.next_wakeup() == 0.010  # still ready: the next pass comes at once
    (plan,) = policy.poll(0.010, PollContext({1: 10}))
    assert sorted(b.slot for b in plan.batches) == [0, 1, 2]
    assert policy.poll(0.010, PollContext({1: 10})) == []
    for slot in (0, 1, 2, 3, 4):
        append(acc, policy, slot, now=0.020)
    # all expire at 0.030. The last walk began at 2 and went all the way round (2, 1, 0,
    # 5, 4, 3); Java's drainIndex stays on the last partition examined: the next walk
    # starts at 3. A request cut short starts the next at the partition that did not fit.
    assert drain_all(policy, 0.030) == [[1, 2, 3], [0, 4]]


def test_max_partitions_per_request():
    acc, policy = make(linger_s=0.0, max_partitions=2)
    for slot in range(5):
        append(acc, policy, slot, now=0.0)
    assert [len(r) for r in drain_all(policy, 0.0)] == [2, 2, 1]


def test_every_ready_node_gets_one_request_per_pass():
    acc, policy = make(partitions=4, leaders=[1, 1, 2, 2], linger_s=0.0, max_partitions=1)
    for slot in range(4):
        append(acc, policy, slot, now=0.0)
    plans = policy.poll(0.0, PollContext({1: 5, 2: 5}))
    assert sorted(plan.broker for plan in plans) == [1, 2]


@pytest.mark.parametrize(("topic", "partitions", "first"), [
    # the first entries of Java's own HashMap<TopicPartition, ...> iteration, printed by a
    # JVM with kafka-clients 4.3.1 (new HashMap<>(n), n partitions put in order)
    ("t", 6, [5, 4, 3, 2, 1, 0]),
    ("kbatch-x", 64, [6, 39, 10, 43, 60, 31, 2, 35, 22, 55, 26, 59, 14, 47, 18, 51]),
    ("fid-real-848486818", 1000, [489, 555, 621, 687, 753, 819, 885, 951, 26, 92, 158]),
])
def test_java_metadata_order_is_javas_hashmap_order(topic: str, partitions: int,
                                                   first: list[int]) -> None:
    order = java_metadata_order([TopicPartition(topic, p) for p in range(partitions)])
    assert order[:len(first)] == first and sorted(order) == list(range(partitions))


def test_java_string_hash_is_javas() -> None:
    assert java_string_hash("") == 0 and java_string_hash("t") == 116
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -2147483648  # wraps to Integer.MIN_VALUE
    assert java_string_hash("é") == 233


def test_retry_is_sendable_at_once():
    acc, policy = make(linger_s=10.0)
    append(acc, policy, 2, now=0.0)
    (plan,) = policy.poll(0.0, PollContext({1: 1}, flushing=True))
    acc.requeue_front(plan.batches[0])
    policy.on_requeue(2, now=0.1)
    plans = policy.poll(0.1, PollContext({1: 1}))
    assert sent(plans) == [(1, [2])] and plans[0].reason == "retry"


def test_leader_change_moves_queued_partitions():
    acc, policy = make(partitions=2, leaders=[1, 1], linger_s=0.010)
    append(acc, policy, 0, now=0.0)
    append(acc, policy, 1, now=0.0)
    policy.set_leaders([1, 2])
    plans = policy.poll(0.010, PollContext({1: 1, 2: 1}))
    assert sent(plans) == [(1, [0]), (2, [1])]


# ------------------------------------------------------------- memory and max.block.ms
def test_max_block_ms_expiry_fails_the_waiting_message_with_its_reason():
    metrics = RunMetrics()
    blocked = BlockedGenerator(0.100, metrics)
    assert blocked.wait(now=1.000, waiting=3) == 0  # the first message starts waiting
    assert blocked.blocked and blocked.deadline() == pytest.approx(1.100)
    assert blocked.wait(now=1.050, waiting=3) == 0
    assert blocked.wait(now=1.100, waiting=3) == 1  # its max.block.ms ran out
    assert metrics.failed_reasons == {MAX_BLOCK_REASON: 1}
    assert MAX_BLOCK_REASON.startswith("max.block.ms")
    # the next message's wait started when the first one failed
    assert blocked.deadline() == pytest.approx(1.200)
    assert blocked.wait(now=1.250, waiting=2) == 1
    blocked.release(now=1.260)  # memory came back
    assert not blocked.blocked
    assert metrics.messages_failed == 2
    assert metrics.blocked_episodes == 1
    assert metrics.blocked_s == pytest.approx(0.260)
    assert metrics.blocked_max_s == pytest.approx(0.260)
    blocked.wait(now=2.0, waiting=1)
    blocked.release(now=2.1)
    assert metrics.blocked_episodes == 2
    assert metrics.blocked_s == pytest.approx(0.360)
    assert metrics.blocked_max_s == pytest.approx(0.260)


def test_max_block_ms_zero_fails_every_message_that_meets_full_memory():
    metrics = RunMetrics()
    blocked = BlockedGenerator(0.0, metrics)
    assert blocked.wait(now=5.0, waiting=7) == 7
    assert metrics.failed_reasons[MAX_BLOCK_REASON] == 7


def test_java_memory_counts_whole_batches_until_their_response():
    memory = BatchMemory(limit=4 * 16384, batch_bytes=16384)
    assert not memory.exhausted(queued_batches=3)  # a fourth batch still fits
    assert memory.exhausted(queued_batches=4)
    memory.held = 2  # two batches in flight still hold their memory
    assert memory.exhausted(queued_batches=2)
    assert memory.used(queued_batches=2) == 4 * 16384


def test_a_send_waits_only_when_its_record_needs_a_new_batch_and_none_fits():
    from producer_core.engine.core.memory import appendable

    room = {0: 500, 1: 70}  # slot 2 has no open batch
    # records into open batches need no memory; slot 1's second record does not fit
    assert appendable([0, 0, 1], [100, 100, 30], room.get, 1024, free_batches=0) == 3
    assert appendable([0, 1, 1], [100, 30, 50], room.get, 1024, free_batches=0) == 2
    # a new batch per allocation left; the record after the last allocation waits
    assert appendable([2, 1, 1, 2, 0], [100, 30, 30, 100, 100], room.get, 1024,
                      free_batches=1) == 5
    assert appendable([2, 1, 1, 3, 0], [100, 30, 30, 100, 100], room.get, 1024,
                      free_batches=1) == 3
    # a record that fills its new batch: the next one for that slot needs another
    assert appendable([2, 2], [900, 200], room.get, 1024, free_batches=1) == 1
    assert appendable([], [], room.get, 1024, free_batches=0) == 0


def test_java_memory_counts_free_allocations():
    memory = BatchMemory(limit=4 * 16384, batch_bytes=16384)
    assert memory.free(queued_batches=1) == 3
    memory.held = 3
    assert memory.free(queued_batches=1) == 0 and memory.exhausted(queued_batches=1)
    assert memory.free(queued_batches=5) == 0  # over the limit (a record above batch.size)


def test_java_refuses_batch_size_above_buffer_memory():
    with pytest.raises(ConfigError, match="buffer.memory"):
        build_settings({"batch.size": "65536", "buffer.memory": "32768"}, mode="java")


def test_runs_start_at_one_phase_of_the_producers_millisecond():
    from producer_core.engine.drivers.run_types import START_PHASE_S, phased_start

    for earliest, offset in [(100.0123456, 0.0), (100.0123456, 1.7e9 + 0.00037),
                             (5.00025, 0.0), (7.0009, -0.0004)]:
        start = phased_start(earliest, offset)
        assert earliest <= start < earliest + 0.001 + 1e-9
        past_tick = (start + offset) * 1000 % 1.0
        assert past_tick == pytest.approx(START_PHASE_S * 1000, abs=1e-3)


def test_the_drain_index_a_clients_walk_leaves_is_the_one_drain_would_leave():
    # a trace replay restarts mode java from a client's state after a divergence; this is
    # where the client's own request leaves Java's drain index (issue 42)
    acc, policy = make(partitions=6, linger_s=0.0, max_partitions=2)
    for slot in (0, 2, 3, 5):
        append(acc, policy, slot, now=0.0)
    position = policy._position
    policy.set_drain_cursor({1: position[2]})
    walk = sorted((0, 2, 3, 5), key=lambda s: (position[s] - position[2]) % 6)
    # a cut request of the walk's first two: the next walk starts at its third
    assert policy.drain_cursor_after(1, set(walk[:2])) == position[walk[2]]
    # ... as mode java's own drain leaves it
    plans = policy.poll(0.0, PollContext({1: 1}, None, False, False))
    assert sent(plans) == [(1, sorted(walk[:2]))]
    assert policy.drain_cursor() == {1: position[walk[2]]}
    # a client whose walk began elsewhere: its run wraps around this walk's start, and the
    # next walk starts after it
    assert policy.drain_cursor_after(1, {walk[3]}) == position[walk[2]]
    # a full walk leaves the index one step back from where it began
    acc2, full = make(partitions=6, linger_s=0.0)
    for slot in (0, 2, 3, 5):
        append(acc2, full, slot, now=0.0)
    full.set_drain_cursor({1: 4})
    assert full.drain_cursor_after(1, {0, 2, 3, 5}) == 3
    assert full.drain_cursor_after(7, {0}) is None  # a node without data
