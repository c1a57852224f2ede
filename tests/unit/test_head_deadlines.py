"""`HeadDeadlines` hands out expired slots in the order one heap of (deadline, order of
watching) would: its FIFO for deadlines in order and its heap for the others merge
exactly, whatever mix of new heads and older heads (queued behind a drained batch) comes."""

from __future__ import annotations

import heapq
import itertools
from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from producer_core.engine.core.linger.deadlines import HeadDeadlines


class Heads:
    """A stand-in accumulator: each slot's current head batch."""

    def __init__(self) -> None:
        self.heads: dict[int, object] = {}

    def head(self, slot: int) -> object | None:
        return self.heads.get(slot)


class OneHeap:
    """The reference: every entry in one heap."""

    def __init__(self, heads: Heads, linger_s: float) -> None:
        self.heads, self.linger_s = heads, linger_s
        self.heap: list[tuple[float, int, int, object]] = []
        self.seq = itertools.count()

    def watch(self, slot: int, head: SimpleNamespace) -> None:
        heapq.heappush(self.heap, (head.created + self.linger_s, next(self.seq), slot, head))

    def expired(self, now: float, everything: bool = False) -> list[int]:
        out = []
        while self.heap and (everything or self.heap[0][0] <= now):
            _, _, slot, batch = heapq.heappop(self.heap)
            if self.heads.head(slot) is batch:
                out.append(slot)
        return out

    def next_deadline(self) -> float | None:
        while self.heap and self.heads.head(self.heap[0][2]) is not self.heap[0][3]:
            heapq.heappop(self.heap)
        return self.heap[0][0] if self.heap else None


steps = st.lists(st.tuples(
    st.sampled_from(["new", "older", "drain", "expire", "next"]),
    st.integers(0, 7),  # slot
    st.integers(0, 30),  # time step or age, in ms
), max_size=120)


@given(steps, st.booleans())
@settings(max_examples=300, deadline=None)
def test_expired_slots_come_in_one_heaps_order(script: list[tuple[str, int, int]],
                                               flush: bool) -> None:
    heads = Heads()
    ours = HeadDeadlines(heads, linger_s=0.005)  # type: ignore[arg-type]  # Heads stands in for the accumulator
    reference = OneHeap(heads, linger_s=0.005)
    now = 0.0
    for action, slot, amount in script:
        if action == "new":  # a new batch, created now, becomes the slot's head
            now += amount / 1000
            head = SimpleNamespace(created=now)
        elif action == "older":  # a head that waited behind a drained batch: older
            head = SimpleNamespace(created=max(0.0, now - amount / 1000))
        elif action == "drain":
            heads.heads.pop(slot, None)
            continue
        elif action == "expire":
            now += amount / 1000
            assert list(ours.expired(now)) == reference.expired(now)
            continue
        else:
            assert ours.next_deadline() == reference.next_deadline()
            continue
        heads.heads[slot] = head
        ours.watch(slot, head)
        reference.watch(slot, head)
    assert list(ours.expired(now, everything=flush)) == reference.expired(now, flush)
    assert ours.next_deadline() == reference.next_deadline()
