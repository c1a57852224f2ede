"""When librdkafka's broker thread looks (issue 42), from its sources' rules, in synthetic
time: the writer's wake-ups (first message, linger run out, full batch; once per period),
a response, the timer rounded up to a whole millisecond, the spin while a ready partition
is held, and the thread's own lateness."""

from __future__ import annotations

import pytest

from producer_core.analysis.librdkafka_threads import BrokerThreads, whole_ms_after

MS = 0.001


class Queues:
    """Each partition's oldest batch: when it began, and whether it is full."""

    def __init__(self) -> None:
        self.created: dict[int, float] = {}
        self.full: set[int] = set()

    def head_created(self, slot: int) -> float | None:
        return self.created.get(slot)

    def head_is_full(self, slot: int) -> bool:
        return slot in self.full


def looked_at(now: float, queues: Queues, delay_s: float = 0.0) -> BrokerThreads:
    """One broker, partitions 0 and 1, linger 5 ms, whose thread looked at `now`."""
    threads = BrokerThreads([1, 1], 5 * MS, delay_s)
    threads.looped(1, now, queues, can_send=True)
    return threads


def test_the_wait_is_rounded_up_to_a_whole_millisecond() -> None:
    assert whole_ms_after(0.4 * MS, 5 * MS) == pytest.approx(5.4 * MS)
    assert whole_ms_after(1 * MS, 5 * MS) == pytest.approx(5 * MS)


def test_the_timer_waits_for_the_oldest_message_plus_linger_rounded_up() -> None:
    queues = Queues()
    queues.created[0] = 0.0
    threads = looked_at(0.4 * MS, queues)
    assert threads.next_loop() == pytest.approx(5.4 * MS)
    assert threads.due(5.3 * MS) == []
    assert threads.due(5.4 * MS) == [1]
    assert threads.next_loop() is None  # asleep until something wakes it


def test_the_first_message_of_an_empty_partition_wakes_the_thread_once() -> None:
    queues = Queues()
    queues.created[0] = 0.0
    threads = looked_at(0.4 * MS, queues)
    threads.appended(1, 1 * MS, batch_full=False)
    assert threads.due(1 * MS) == [1]
    queues.created[1] = 1 * MS
    threads.looped(1, 1 * MS, queues, can_send=True)
    threads.appended(1, 1.5 * MS, batch_full=False)  # the second: no wake-up
    assert threads.wakes["writer"] == 1
    assert threads.next_loop() == pytest.approx(5 * MS)  # partition 0's, from 1 ms


def test_a_message_after_the_linger_wakes_the_thread_before_its_timer() -> None:
    queues = Queues()
    queues.created[0] = 0.0
    threads = looked_at(0.4 * MS, queues)
    threads.appended(0, 3 * MS, batch_full=False)  # before abstime (5 ms): nothing
    assert threads.due(3 * MS) == []
    threads.appended(0, 5.1 * MS, batch_full=False)  # after it: the writer wakes it
    assert threads.next_loop() == pytest.approx(5.1 * MS)
    assert threads.wakes["writer"] == 1


def test_a_full_batch_wakes_the_thread_and_a_woken_partition_stays_quiet() -> None:
    queues = Queues()
    queues.created[0] = 0.0
    threads = looked_at(0.4 * MS, queues)
    threads.appended(0, 1 * MS, batch_full=True)
    threads.appended(0, 1.2 * MS, batch_full=True)  # signalled already: once a period
    assert threads.wakes["writer"] == 1
    assert threads.due(1 * MS) == [1]


def test_a_ready_partition_it_cannot_send_makes_it_spin_until_something_happens() -> None:
    queues = Queues()
    queues.created[0] = 0.0  # past its linger at 6 ms, held by its messages in flight
    threads = looked_at(6 * MS, queues)
    assert threads.next_loop() is None  # no timer: it looks at whatever comes next
    assert threads.due(6 * MS) == []  # not twice at the same instant
    assert threads.due(6.01 * MS) == [1]


def test_every_request_slot_taken_keeps_the_old_wake_ups() -> None:
    queues = Queues()
    threads = BrokerThreads([1, 1], 5 * MS)
    queues.created[0] = 0.0
    threads.looped(1, 0.4 * MS, queues, can_send=False)
    assert threads.next_loop() is None
    threads.appended(1, 1 * MS, batch_full=False)  # never looked at: its first wakes
    assert threads.due(1 * MS) == [1]


def test_a_late_thread_loops_its_delay_after_the_wake_up() -> None:
    queues = Queues()
    queues.created[0] = 0.0
    threads = looked_at(0.4 * MS, queues, delay_s=0.3 * MS)
    assert threads.next_loop() == pytest.approx(5.7 * MS)  # its timer too
    threads.answered(1, 2 * MS)
    assert threads.next_loop() == pytest.approx(2.3 * MS)
    assert threads.due(2.2 * MS) == []
    assert threads.due(2.3 * MS) == [1]
