"""When librdkafka's broker threads look at their partitions (issue 42): the free run's
timing for librdkafka, not its decisions (those are mode `partition`'s policy).

Read in librdkafka's sources (`rdkafka_msg.c`, `rdkafka_partition.c`, `rdkafka_broker.c`,
2.x). A broker's thread loops when something wakes it, and in each loop serves every
partition it leads (`rd_kafka_broker_produce_toppars`). It is woken by:

- **the writer** (`rd_kafka_toppar_enq_msg`, `rd_kafka_msgq_may_wakeup`): a `produce()` to
  a partition wakes the thread once per wake-up period (`signalled`) if the partition's
  linger has run out (`now >= abstime`), if it is the first message since the thread's
  last look at an empty partition (`on_first`), or if a batch is full;
- **a response** on the connection (its socket is readable);
- **its timer**: after a loop it waits for the earliest `abstime` of its partitions,
  rounded up to a whole millisecond (`rd_timeout_remains`: `+ 999` µs). A partition past
  its linger that cannot send (held by its messages in flight) sets that time to *now*:
  the thread spins until the response comes (each of those loops moves its round robin's
  start, which is why the order among ready partitions is timing).

After each loop the thread resets each partition's wake-up (`rd_kafka_msgq_allow_wakeup_at`):
an empty partition wakes on its first message, or `linger.ms` from now; one with
messages at its oldest message's time plus `linger.ms`. It does so only while the
connection takes requests (`rd_kafka_broker_outbufs_space`): with every request slot
taken, the partitions keep their old wake-ups.

`delay_s` is the thread's own lateness after a wake-up or its timer (scheduling on a
loaded machine):
librdkafka's trace shows its requests built a median 0.1 ms after the rule allowed them.
Pure: no clock; times are seconds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol


class Queues(Protocol):
    """What the model reads of the accumulator: each partition's oldest batch."""

    def head_created(self, slot: int) -> float | None:
        """When the oldest unsent batch began (None: nothing queued)."""
        ...

    def head_is_full(self, slot: int) -> bool: ...


def whole_ms_after(looked: float, deadline: float) -> float:
    """When a thread that last looked at `looked` wakes for `deadline`: the wait is
    rounded up to a whole millisecond."""
    return looked + math.ceil(round((deadline - looked) * 1000, 6)) / 1000


class BrokerThreads:
    """Each broker thread's next loop, from the writer's appends, the responses and the
    threads' own timers."""

    def __init__(self, leaders: Sequence[int], linger_s: float, delay_s: float = 0.0) -> None:
        self.leaders = list(leaders)
        self.linger_s = linger_s
        self.delay_s = delay_s
        count = len(self.leaders)
        self.signalled = [False] * count
        self.abstime = [-math.inf] * count  # never looked at: the first message wakes
        self.on_first = [False] * count
        self.unseen = [0] * count  # messages since the thread last moved them
        self.slots: dict[int, list[int]] = {}
        for slot, broker in enumerate(self.leaders):
            self.slots.setdefault(broker, []).append(slot)
        self.timer: dict[int, float] = {}
        """broker -> when its timer ends."""
        self.woken: dict[int, float] = {}
        """broker -> when it loops after a wake-up (the wake-up plus `delay_s`)."""
        self.spinning: dict[int, float] = {}
        """broker -> when it last looked, for a thread that loops without waiting: it
        looks again at the next thing that happens after that (plus `delay_s`)."""
        self.wakes = {"writer": 0, "response": 0, "timer": 0}

    def _wake(self, broker: int, now: float, reason: str) -> None:
        self.wakes[reason] += 1
        if broker not in self.woken:
            self.woken[broker] = now + self.delay_s

    def appended(self, slot: int, now: float, batch_full: bool) -> None:
        """The application produced a message to `slot` at `now`."""
        self.unseen[slot] += 1
        if self.signalled[slot]:
            return
        if (now >= self.abstime[slot] or batch_full
                or (self.unseen[slot] == 1 and self.on_first[slot])):
            self.signalled[slot] = True
            self._wake(self.leaders[slot], now, "writer")

    def answered(self, broker: int, now: float) -> None:
        self._wake(broker, now, "response")

    def next_loop(self) -> float | None:
        """The earliest time a thread loops for its own reasons (None: every thread waits
        to be woken; a spinning thread looks at whatever happens next)."""
        times = [*self.woken.values(), *self.timer.values(),
                 *(at + self.delay_s for at in self.spinning.values() if self.delay_s)]
        return min(times) if times else None

    def due(self, now: float) -> list[int]:
        """The brokers whose thread loops at `now`: woken, timer ended, or spinning."""
        brokers = sorted({b for b, at in self.woken.items() if at <= now}
                         | {b for b, at in self.timer.items() if at <= now}
                         | {b for b, at in self.spinning.items()
                            if at + self.delay_s <= now and at < now})
        for broker in brokers:
            if self.timer.get(broker, math.inf) <= now:
                self.wakes["timer"] += 1
            self.woken.pop(broker, None)
            self.timer.pop(broker, None)
            self.spinning.pop(broker, None)
        return brokers

    def looped(self, broker: int, now: float, queues: Queues, can_send: bool) -> None:
        """The thread of `broker` served its partitions at `now`: their wake-ups and its
        timer. `can_send`: the connection had a request slot left."""
        if not can_send:
            return
        earliest = math.inf
        for slot in self.slots.get(broker, ()):
            self.unseen[slot] = 0
            created = queues.head_created(slot)
            if created is None:
                self.on_first[slot] = True
                self.abstime[slot] = now + self.linger_s
                self.signalled[slot] = False
                continue
            self.on_first[slot] = False
            due = max(now, created + self.linger_s)
            self.abstime[slot] = due
            self.signalled[slot] = due <= now or queues.head_is_full(slot)
            earliest = min(earliest, due)
        if earliest <= now:  # a partition past its linger that it could not send
            self.spinning[broker] = now
        elif earliest < math.inf:
            self.timer[broker] = whole_ms_after(now, earliest) + self.delay_s
