"""The accumulator's per-partition state at scale: a slot's queue exists only while it has
batches, and its record bytes (`Accumulator.slot_bytes`, which the broker collector reads
on every send) always equal a full recount of its batches, after any sequence of appends,
bulk passes, drains, retries and a final take-all."""

from __future__ import annotations

import random
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from producer_core.engine.core.accumulator import (
    BULK_MIN_RECORDS,
    NO_BATCHES,
    Accumulator,
    SlotQueue,
    TopicPartition,
)

PARTITIONS = 5
BATCH_SIZE = 400
"""Small batches: a few records fill one, so passes cross batch boundaries."""


def _recount(acc: Accumulator, slot: int) -> int:
    return sum(batch.record_bytes for batch in acc.queues[slot])


def _check(acc: Accumulator) -> None:
    """Per slot: the kept bytes equal a recount; a queue object exists iff it has batches;
    the totals agree with the slots."""
    for slot in range(len(acc.slots)):
        queue = acc.queues[slot]
        assert acc.slot_bytes(slot) == _recount(acc, slot)
        if queue:
            assert type(queue) is SlotQueue
        else:
            assert queue is NO_BATCHES
        assert acc.has_data(slot) == bool(queue)
    assert acc.queued_bytes == sum(acc.slot_bytes(s) for s in range(len(acc.slots)))


operation = st.one_of(
    st.tuples(st.just("append"), st.integers(0, PARTITIONS - 1), st.integers(0, 300)),
    st.tuples(st.just("bulk"), st.integers(0, 2**32), st.sampled_from([3, BULK_MIN_RECORDS,
                                                                        600])),
    st.tuples(st.just("drain"), st.integers(0, PARTITIONS - 1), st.integers(1, 4)),
    st.tuples(st.just("retry"), st.integers(0, 10), st.just(0)),
    st.tuples(st.just("take_all"), st.just(0), st.just(0)),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(operation, max_size=40))
def test_slot_bytes_equal_a_recount_after_any_sequence(operations) -> None:
    acc = Accumulator([TopicPartition("t", p) for p in range(PARTITIONS)], BATCH_SIZE)
    drained = []  # batches taken for sending, some of which come back for a retry
    next_id = 0
    now = 0.0
    for kind, a, b in operations:
        now += 0.001
        if kind == "append":
            acc.append(a, next_id, None, bytes(b), now, now, 0)
            next_id += 1
        elif kind == "bulk":
            rng = random.Random(a)
            slots = [rng.randrange(PARTITIONS) for _ in range(b)]
            acc.append_many(slots, range(next_id, next_id + b), None, [bytes(20)] * b,
                            [now] * b, now, 0, value_size=20)
            next_id += b
        elif kind == "drain":
            for _ in range(b):
                if acc.head(a) is not None:
                    batch = acc.pop_head(a, now)
                    batch.order = len(drained)
                    drained.append(batch)
        elif kind == "retry" and drained:
            acc.requeue_front(drained.pop(a % len(drained)))
        elif kind == "take_all":
            acc.take_all()
            drained.clear()
        _check(acc)


def test_no_queue_is_made_before_a_slot_gets_a_batch() -> None:
    """100,000 partitions cost one shared empty tuple each, not 100,000 deques."""
    acc = Accumulator([TopicPartition("t", p) for p in range(100_000)], 16384)
    assert all(queue is NO_BATCHES for queue in acc.queues)
    assert acc.nonempty_slots() == []
    acc.append(7, 0, None, b"v", 0.0, 0.0, 0)
    assert [slot for slot, queue in enumerate(acc.queues) if type(queue) is SlotQueue] == [7]
    assert acc.nonempty_slots() == [7]


def test_the_last_batch_drained_drops_the_queue_and_the_next_append_makes_one() -> None:
    acc = Accumulator([TopicPartition("t", p) for p in range(2)], 16384)
    event = acc.append(1, 0, None, b"v" * 10, 0.0, 0.0, 0)
    assert event == 1  # BECAME_NONEMPTY
    batch = acc.pop_head(1, 0.1)
    assert acc.queues[1] is NO_BATCHES and acc.slot_bytes(1) == 0
    assert acc.head(1) is None and not acc.head_is_full(1)
    assert acc.append(1, 1, None, b"v" * 10, 0.2, 0.2, 0) == 1  # empty again: a new start
    batch.order = 0
    acc.requeue_front(batch)  # a retry goes back in front of the newer batch
    assert [b.ids.tolist() for b in acc.queues[1]] == [[0], [1]]
    assert acc.slot_bytes(1) == 2 * batch.record_bytes


def test_take_all_keeps_the_list_partitioners_hold() -> None:
    acc = Accumulator([TopicPartition("t", p) for p in range(3)], 16384)
    held = acc.queues  # the sticky partitioner keeps this list
    acc.append(2, 0, None, b"v", 0.0, 0.0, 0)
    assert len(acc.take_all()) == 1
    assert acc.queues is held and all(queue is NO_BATCHES for queue in held)


@pytest.mark.skipif(sys.implementation.name != "cpython", reason="object sizes are CPython's")
def test_per_partition_memory_stays_small() -> None:
    """What 100,000 idle partitions add beyond the slot list itself: the queue list only
    (8 bytes a slot), where an empty deque per slot was 760 bytes."""
    acc = Accumulator([TopicPartition("t", p) for p in range(100_000)], 16384)
    assert sys.getsizeof(acc.queues) < 100_000 * 8 + 1024
