"""A whole engine run on a virtual clock against a fake cluster: no socket, no sleep.

`VirtualLoop` is an asyncio loop whose clock jumps to the next timer instead of waiting
for it, so a run of seconds takes milliseconds and gives the same result every time.
`FakeCluster` answers every request after a round trip that depends only on the request
(and, for chosen requests, with an error or a lost connection), so the engine's
decisions -- which batches go when, in which request -- are a pure function of the
workload and the settings. The golden plan dump (test_plan_dump.py) records them.
"""

from __future__ import annotations

import asyncio
import selectors
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from aiokafka.errors import KafkaConnectionError

from producer_core.engine.transport.transport import ClusterView

WALL_CLOCK_BASE = 1_700_000_000.0
"""The wall clock (record timestamps) during a virtual run: this plus the loop's time."""


class _VirtualSelector(selectors.SelectSelector):
    """Never waits: a select with a timeout moves the virtual clock to its end."""

    def __init__(self, clock: list[float]) -> None:
        super().__init__()
        self.clock = clock

    def select(self, timeout: float | None = None) -> list[Any]:
        if timeout is None:
            raise RuntimeError("the virtual loop would wait forever (no timer is set)")
        self.clock[0] += max(0.0, timeout)
        return []


class VirtualLoop(asyncio.SelectorEventLoop):
    """An event loop on a virtual clock that starts at 1000.0 s."""

    def __init__(self) -> None:
        self.clock = [1000.0]
        super().__init__(_VirtualSelector(self.clock))

    def time(self) -> float:
        return self.clock[0]


@contextmanager
def virtual_wall_clock(loop: VirtualLoop) -> Iterator[None]:
    """`time.time()` follows the virtual clock (record timestamps are deterministic)."""
    real = time.time
    time.time = lambda: WALL_CLOCK_BASE + loop.time()  # type: ignore[assignment]  # the virtual wall clock
    try:
        yield
    finally:
        time.time = real  # type: ignore[assignment]  # the real one back


@dataclass
class FakeCluster:
    """Brokers 1..`brokers` leading partitions round-robin; answers after `rtt(request)`.

    `errors`: Produce request number (0-based) -> error code answered for its first
    partition; `lost`: Produce request numbers whose connection is lost (the response
    never comes, the request fails with a connection error); `hang`: Produce request
    numbers never answered at all; `refuse_send`: request
    numbers that cannot be written at all; `fence_end`: EndTxn answers
    PRODUCER_FENCED."""

    brokers: int = 3
    errors: dict[int, int] = field(default_factory=dict)
    lost: set[int] = field(default_factory=set)
    refuse_send: set[int] = field(default_factory=set)
    hang: set[int] = field(default_factory=set)
    fence_end: bool = False
    base_rtt_s: float = 0.002
    bootstrap: str = "fake:9092"
    view: ClusterView | None = None
    produce_count: int = 0
    log: list[str] = field(default_factory=list)
    _offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    _producer_ids: int = 1000
    _topics: dict[str, int] = field(default_factory=dict)

    def rtt(self, partitions: int) -> float:
        return self.base_rtt_s + 0.00001 * partitions

    async def connect(self) -> ClusterView:
        return await self.refresh_metadata([])

    async def ensure_topic(self, name: str, partitions: int, *_: Any) -> bool:
        self._topics[name] = partitions
        return True

    async def ready_topic(self, name: str, partitions: int, *_: Any) -> None:
        """Created, not primed: the golden plans start on the schedule's first request."""
        await self.ensure_topic(name, partitions)
        return None

    async def refresh_metadata(self, topics: list[str]) -> ClusterView:
        self.log.append(f"metadata {sorted(topics)}")
        leaders = {name: [1 + p % self.brokers for p in range(count)]
                   for name, count in self._topics.items()}
        self.view = ClusterView(brokers={b: SimpleNamespace(node_id=b)  # type: ignore[misc]  # stand-in broker metadata
                                         for b in range(1, self.brokers + 1)},
                                controller_id=1, leaders=leaders, topic_errors={})
        return self.view

    async def connection(self, node_id: int) -> Any:
        return _FakeConnection(self)

    async def _any_conn(self) -> Any:
        return _FakeConnection(self)

    def has_connection(self, node_id: int) -> bool:
        return True

    def close_connection(self, node_id: int) -> None:
        self.log.append(f"close {node_id}")

    async def close(self) -> None:
        pass

    async def init_producer_id(self, producer_id: int = -1, epoch: int = -1, *_: Any,
                               **__: Any) -> tuple[int, int]:
        if producer_id >= 0:
            self.log.append(f"bump {producer_id} {epoch}")
            return producer_id, epoch + 1
        self._producer_ids += 1
        self.log.append(f"init_producer_id -> {self._producer_ids}")
        return self._producer_ids, 0

    def send(self, node_id: int, request: Any, expect_response: bool = True) -> Any:
        number = self.produce_count
        self.produce_count += 1
        if number in self.refuse_send:
            raise KafkaConnectionError(f"no open connection to broker {node_id}")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        topics = request._topics
        partitions = sum(len(parts) for _, parts in topics)
        if number in self.hang:
            return future
        if number in self.lost:
            loop.call_later(self.rtt(partitions) * 3, future.set_exception,
                            KafkaConnectionError("connection lost"))
            return future
        answer = []
        first = True
        for topic, parts in topics:
            entries = []
            for partition, _records in parts:
                code = self.errors.get(number, 0) if first else 0
                first = False
                offset = self._offsets.get((topic, partition), 0)
                if code == 0:
                    self._offsets[(topic, partition)] = offset + 1
                entries.append((partition, code, offset if code == 0 else -1, -1, 0))
            answer.append((topic, entries))
        response = SimpleNamespace(topics=answer, throttle_time_ms=0)
        loop.call_later(self.rtt(partitions), future.set_result,
                        response if expect_response else None)
        return future


class _FakeConnection:
    """FindCoordinator, AddPartitionsToTxn and EndTxn, always granted (EndTxn may fence)."""

    def __init__(self, cluster: FakeCluster) -> None:
        self.cluster = cluster

    def connected(self) -> bool:
        return True

    async def send(self, request: Any, expect_response: bool = True) -> Any:
        await asyncio.sleep(self.cluster.base_rtt_s)
        name = type(request).__name__
        self.cluster.log.append(name)
        if name.startswith("FindCoordinator"):
            return SimpleNamespace(error_code=0, coordinator_id=1)
        if name.startswith("AddPartitionsToTxn"):
            return SimpleNamespace(errors=[])
        if name.startswith("EndTxn"):
            return SimpleNamespace(error_code=90 if self.cluster.fence_end else 0)
        raise AssertionError(f"the fake cluster does not answer {name}")


def run_virtual(make: Callable[[], Any]) -> Any:
    """Run the coroutine `make()` builds on a fresh virtual loop; its result."""
    loop = VirtualLoop()
    try:
        asyncio.set_event_loop(loop)
        with virtual_wall_clock(loop):
            return loop.run_until_complete(make())
    finally:
        asyncio.set_event_loop(None)
        loop.close()
