"""What every run driver shares: the progress snapshot, the delivery record (defined by
the core's ledger, which makes them), the timing constants and the driver's call signature
(`RunDriver`, written once for all drivers by `run_driver`).

kbatch's engine (`engine.py`), librdkafka (`librdkafka_engine.py`) and the Java producer
(`kafka_java/run.py`) all run a workload the same way and return the same `Results`; they
import these from here rather than from each other, so no driver depends on another.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from producer_core.engine.core.ledger import Delivery

if TYPE_CHECKING:
    from producer_core.results.metrics import Results, RunMetrics
    from producer_core.settings import ProducerSettings
    from producer_core.workload.workload import Workload

PROGRESS_INTERVAL_S = 0.25
START_LEAD_S = 0.02
"""The schedule starts this long after setup, so message 0 is not already late."""
START_PHASE_S = 0.00025
"""...and this far past a whole millisecond of the producer's clock (`phased_start`)."""
STOP_GRACE_S = 2.0
"""After a stop request, how long in-flight requests may still be answered (at most
request.timeout.ms)."""
STOP_CHECK_S = 0.05
INTERRUPTED = "interrupted"


@dataclass(frozen=True)
class Progress:
    """A snapshot for live displays."""

    elapsed_s: float
    generated: int
    acknowledged: int
    failed: int
    in_flight_requests: int
    requests_sent: int
    p99_ms: float
    target_messages: int | None
    generator_lag_p99_ms: float | None = None
    """How late the generator is against the rate schedule (None: the driver cannot tell)."""

    @classmethod
    def of_metrics(cls, metrics: RunMetrics, elapsed_s: float, in_flight_requests: int,
                   target_messages: int | None) -> Progress:
        """A snapshot of a driver that keeps every figure in its `RunMetrics` as it runs."""
        m = metrics
        return cls(
            elapsed_s=max(0.0, elapsed_s), generated=m.messages_generated,
            acknowledged=m.messages_acked, failed=m.messages_failed,
            in_flight_requests=in_flight_requests, requests_sent=len(m.requests),
            p99_ms=m.latency.percentile_ms(99) if m.latency.count else 0.0,
            target_messages=target_messages,
            generator_lag_p99_ms=m.generator_lag.percentile_ms(99)
            if m.generator_lag.count else 0.0)


@dataclass(frozen=True)
class RunCall:
    """The arguments of one `RunDriver` call, as one value."""

    workload: Workload
    settings: ProducerSettings
    mode: str
    bootstrap: str
    on_progress: Callable[[Progress], None] | None = None
    deliveries: list[Delivery] | None = None
    stop: threading.Event | None = None

    async def on(self, driver: RunDriver) -> Results:
        """Pass this call on to another driver."""
        return await driver(self.workload, self.settings, self.mode, self.bootstrap,
                            self.on_progress, self.deliveries, self.stop)


class RunDriver(Protocol):
    """A driver's `run_async`: run one workload in one mode against the cluster at
    `bootstrap` and return its Results. Setting `stop` ends the run early (Results say
    `complete: false`); `deliveries`, when given, receives where each batch landed."""

    async def __call__(
        self,
        workload: Workload,
        settings: ProducerSettings,
        mode: str,
        bootstrap: str,
        on_progress: Callable[[Progress], None] | None = None,
        deliveries: list[Delivery] | None = None,
        stop: threading.Event | None = None,
    ) -> Results: ...


def phased_start(earliest: float, clock_offset: float = 0.0) -> float:
    """The first time at or after `earliest` that is `START_PHASE_S` past a whole
    millisecond of a clock reading `t + clock_offset`.

    The Java producer reads time in whole milliseconds (mode `java` models it), so where a
    schedule's messages fall inside each millisecond decides how a batch's linger rounds;
    a random phase made mode `java` and the Java producer (`kafka-java`, on the wall
    clock: `clock_offset = time.time() - time.monotonic()`) each send up to ~10% more or
    fewer requests from run to run at 2,000 msg/s. One phase for every run compares like
    with like."""
    reading = earliest + clock_offset
    ticks = math.ceil((reading - START_PHASE_S) * 1000.0)
    return ticks / 1000.0 + START_PHASE_S - clock_offset


def run_driver(body: Callable[[RunCall], Awaitable[Results]]) -> RunDriver:
    """A driver's `run_async` with the `RunDriver` call, made from a body that takes the
    call as one `RunCall`, so that no driver writes the signature again."""

    async def run_async(
        workload: Workload,
        settings: ProducerSettings,
        mode: str,
        bootstrap: str,
        on_progress: Callable[[Progress], None] | None = None,
        deliveries: list[Delivery] | None = None,
        stop: threading.Event | None = None,
    ) -> Results:
        return await body(RunCall(workload, settings, mode, bootstrap, on_progress,
                                  deliveries, stop))

    run_async.__doc__ = body.__doc__
    run_async.__module__ = body.__module__
    run_async.__qualname__ = body.__qualname__
    return run_async
