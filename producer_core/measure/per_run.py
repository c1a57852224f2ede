"""A fresh embedded Tansu broker for every run of a comparison or sweep.

Runs that share one Tansu broker are not measured alike: Tansu keeps every idempotent
producer's sequence numbers, for every partition it ever wrote, in one metadata object
that it reads and writes back for *each* idempotent batch, so a batch costs more with
every producer the broker has seen. Measured with ``benchmarks/produce_rtt.py`` (1,000
partitions x 10 records, idempotent) on one broker, four times in a row: round trip
median 78, 148, 191, 255 ms. A mode that runs second in ``compare-modes`` paid for the
first one's producer. Tansu also keeps every message in memory, so a long comparison
grew by each run's data. Starting Tansu takes milliseconds, so each run gets its own
(one broker, or the lab's N brokers with their delays). Apache Kafka keeps its producer
state per partition and takes seconds to start: ``--broker kafka`` and an external
cluster stay shared by every run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from producer_core.brokers import BrokerTarget, validate_broker_choice
from producer_core.brokers.target import broker_target, check_container_options

Run = Callable[..., Any]
"""The engine's run: ``run(workload, settings, mode, bootstrap, progress, **extra)``."""


def fresh_per_run(bootstrap: str | None, broker: str = "tansu", **_shape: Any) -> bool:
    """Whether each run gets its own broker: Tansu started by kbatch (one broker or a lab)."""
    return not bootstrap and broker == "tansu"


def on_own_broker(run: Run, shape: dict[str, Any], measure: bool = True) -> Run:
    """Wrap `run` so that each call starts, uses and stops its own Tansu broker (or lab).

    The wrapper ignores the bootstrap it is given and passes the new broker's. Wrap the
    innermost run that still needs the broker (a --verify read-back comes inside)."""

    def run_on_own_broker(workload: Any, settings: Any, mode: str, _bootstrap: str,
                          progress: Any = None, **extra: Any) -> Any:
        with broker_target(None, **shape) as target:
            inner = with_cost(run, target) if measure else run
            return inner(workload, settings, mode, target.bootstrap, progress, **extra)

    return run_on_own_broker


def tansu_shape(brokers: int = 1, rtt_ms: float = 0.0, jitter_ms: float = 0.0,
                **_rest: Any) -> str:
    """Describe the Tansu broker or lab `broker_target` would start; refuse a bad shape now,
    before any run, as starting it would."""
    from producer_core.brokers.lab import DelayModel, validate_shape

    validate_shape(brokers, None)
    delay = DelayModel(rtt_ms, jitter_ms)
    if brokers == 1 and not delay.enabled:
        return "an embedded Tansu broker"
    return (f"a lab of {brokers} embedded Tansu broker{'s' if brokers > 1 else ''} "
            f"({delay.describe()})")


def with_cost(run: Run, target: BrokerTarget, endpoints: Any = ()) -> Run:
    """`run` with what it cost the brokers measured (Results.broker_cost, measure/)."""
    from producer_core.measure.cost_run import measured

    return measured(run, target, endpoints)


@contextmanager
def run_targets(bootstrap: str | None, shape: dict[str, Any], endpoints: Any = (),
                shared: bool = False) -> Iterator[tuple[BrokerTarget, Callable[[Run], Run]]]:
    """The target to describe and a wrapper giving each run its broker.

    For Tansu started by kbatch no broker is started here (each run starts its own),
    unless ``shared`` (one run: `kbatch produce`); otherwise the one shared target is
    started. Either way each run's broker cost is measured (``endpoints``:
    --broker-metrics of an external cluster)."""
    if not shared and fresh_per_run(bootstrap, **shape):
        validate_broker_choice(shape.get("broker", "tansu"), bootstrap,
                               shape.get("brokers", 1), shape.get("kafka_home"))
        # as broker_target would, once per run: refused before the first run, not by each
        check_container_options(shape.get("broker", "tansu"), bootstrap,
                                shape.get("brokers", 1), shape.get("kafka_image"),
                                tuple(shape.get("faults") or ()))
        yield (BrokerTarget("", f"{tansu_shape(**shape)}, started afresh for each run",
                            embedded=True),
               lambda run: on_own_broker(run, shape))
        return
    with broker_target(bootstrap, **shape) as target:
        yield target, lambda run: with_cost(run, target, endpoints)
