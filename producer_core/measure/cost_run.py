"""Wraps a run so that its Results carry ``broker_cost``: what it cost the brokers.

``measured(run, target)`` watches the target's broker processes (Tansu, Kafka nodes, lab
backends) and metrics endpoints (the JMX exporter on Kafka nodes kbatch starts, or
``--broker-metrics`` URLs) while ``run`` runs, then writes the section and adds each
interval's figures to the run's interval rows. It also says when the broker, not kbatch,
is why messages are late (round trips long, generator on time).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from producer_core.brokers import BrokerProcesses, BrokerTarget
from producer_core.measure.broker_cost import (
    BACKWARDS,
    RunWindow,
    Snapshot,
    Watched,
    WindowCounts,
    interval_figures,
    section,
)
from producer_core.measure.cost_monitor import DEFAULT_SAMPLE_S, CostMonitor
from producer_core.measure.metrics_endpoint import Endpoint
from producer_core.measure.process_cost import measurable
from producer_core.results.metrics import Results

CLIENT_COVERS = ("kbatch's process (engine, librdkafka's threads) and its child processes "
                 "that are not brokers (the kafka-java JVM)")
#: Round trips make messages late when their p99 is at least this share of latency p99...
RTT_SHARE = 0.5
#: ...and at least this long (below it a round trip is not what a user waits for)...
RTT_FLOOR_MS = 100.0
#: ...while the generator is on time: its lag p99 under this share of the round trip's.
LAG_SHARE = 0.1
SATURATED_PCT = 80.0


def measured(run: Callable[..., Results], target: BrokerTarget,
             endpoints: Sequence[Endpoint] = (), sample_s: float = DEFAULT_SAMPLE_S
             ) -> Callable[..., Results]:
    """``run`` with its broker cost measured (a no-op where /proc is not readable)."""
    if not measurable():
        return run

    def run_measured(*args: Any, **kwargs: Any) -> Results:
        """The run, called as it was (its arguments untouched), and measured."""
        processes = target.processes() if target.processes is not None else BrokerProcesses()
        urls = [Endpoint.of(node, url) for node, url in processes.metrics_urls.items()]
        urls += list(endpoints)

        def pids() -> dict[str, int]:
            now = target.processes() if target.processes is not None else processes
            return dict(now.pids)

        def others() -> tuple[int, ...]:
            now = target.processes() if target.processes is not None else processes
            return tuple(now.other_pids)

        monitor = CostMonitor(pids, urls, others, sample_s, stop=kwargs.get("stop"))
        with monitor:
            results = run(*args, **kwargs)
        returned = time.monotonic()
        if not isinstance(results, Results):  # a stand-in run (tests): nothing to attach
            return results
        watched = Watched(
            target.implementation, dict(monitor.pids),
            {e.node: e.shown for e in urls}, CLIENT_COVERS, monitor.broker_memory,
            monitor.client_memory, note=processes.warning)
        attach(results, monitor.snapshots, watched, returned)
        if monitor.failed:
            results.warnings.append(unread_warning(monitor.failed))
        return results

    return run_measured


def unread_warning(failed: dict[str, str]) -> str:
    """One line naming every endpoint that could not be read, and why (redacted)."""
    what = "; ".join(f"node {node}: {error}" for node, error in sorted(failed.items()))
    return (f"broker metrics could not be read from {len(failed)} endpoint"
            f"{'s' if len(failed) > 1 else ''} ({what}); broker_cost says what is missing, "
            "the run went on.")


def attach(results: Results, snaps: list[Snapshot], watched: Watched,
           returned: float) -> None:
    """Write ``results.broker_cost``, the interval rows' figures and a bottleneck warning."""
    if len(snaps) < 2:
        return
    start, end = results.clock_span or (returned - results.duration_s, returned)
    window = RunWindow(start, end, float(results.workload.get("warmup_s") or 0.0))
    intervals = results.metrics.intervals
    rows = intervals.to_dict().get("run", []) if intervals is not None else []
    m = results.metrics
    totals = WindowCounts(results.duration_s, results.requests_sent, m.messages_acked,
                          m.bytes_sent)
    results.broker_cost = section(snaps, watched, window, rows, totals, results.requests_sent,
                                  (results.priming or {}).get("requests", 0))
    interval_figures(snaps, watched, window, rows)
    fell = [m for m in results.broker_cost["missing"] if BACKWARDS in m]
    if fell:
        results.warnings.append("broker metrics: " + "; ".join(fell) + ".")
    more = more_endpoints_than_brokers(results, watched)
    if more:
        results.warnings.append(more)
    warning = bottleneck_warning(results)
    if warning:
        results.warnings.append(warning)


def more_endpoints_than_brokers(results: Results, watched: Watched) -> str | None:
    """More --broker-metrics URLs than brokers the run wrote to: if the cluster has fewer
    brokers than URLs, its figures are summed more than once; said, never silently."""
    brokers = {b for b, count in results.metrics.requests_by_broker.items() if count}
    if watched.implementation != "external" or not brokers or \
            len(watched.endpoints) <= len(brokers):
        return None
    return (f"--broker-metrics gave {len(watched.endpoints)} endpoints, but the run's "
            f"requests went to {len(brokers)} broker{'s' if len(brokers) > 1 else ''}: "
            "the cluster figures add every endpoint, so if it has fewer brokers than URLs "
            "(two URLs reaching one broker) they count a broker more than once. Give one URL "
            "per broker.")


def bottleneck_warning(results: Results) -> str | None:
    """When round trips, not the generator, make messages late: say the broker is the
    likely bottleneck, with its CPU when measured."""
    m = results.metrics
    rtt_p99 = measured_rtt_p99_ms(results)
    if not m.latency.count or rtt_p99 is None or results.stalls:
        return None  # a stall is named by its own warning (`results.stalls`)
    latency_p99 = m.latency.percentile_ms(99)
    lag_p99 = m.generator_lag.percentile_ms(99) if m.generator_lag.count else 0.0
    if rtt_p99 < RTT_FLOOR_MS or rtt_p99 < RTT_SHARE * latency_p99 or \
            lag_p99 > LAG_SHARE * rtt_p99:
        return None
    text = (f"round trips, not the generator, made messages late: broker round trip p99 "
            f"{rtt_p99:,.1f} ms beside latency p99 {latency_p99:,.1f} ms (generator lag p99 "
            f"{lag_p99:,.1f} ms). The broker is the likely bottleneck")
    cost = results.broker_cost or {}
    broker = cost.get("broker") or {}
    cpu = broker.get("cpu_s")
    if cpu is not None:
        seconds = cost["window"]["seconds"]
        busiest = max((n for n in broker.get("nodes", {}).items()
                       if n[1].get("cpu_pct_of_core") is not None),
                      key=lambda n: n[1]["cpu_pct_of_core"], default=None)
        text += (f": {watched_name(cost)} used {cpu:,.1f} s of CPU in the {seconds:,.1f} s "
                 "measured")
        if busiest is not None:
            pct = busiest[1]["cpu_pct_of_core"]
            text += (f", node {busiest[0]} at {pct:,.0f}% of a core"
                     + (" (a saturated core)" if pct >= SATURATED_PCT else
                        "; no broker core was saturated, so the round trips waited "
                        "elsewhere too (a loaded machine, the network, the broker's queues)"))
    return text + "."


def measured_rtt_p99_ms(results: Results) -> float | None:
    """The round trip p99 of the time the latency figures cover: with a warm-up, of the
    requests sent after it only. A new topic's first requests can stall for seconds on
    Kafka inside the warm-up; the latency leaves their messages out, so the round trips
    beside it must too, or a run that kept its bound is called broker-bound."""
    m = results.metrics
    warmup_s = float(results.workload.get("warmup_s") or 0.0)
    if warmup_s > 0 and m.requests:
        rtts = sorted(r.rtt_ms for r in m.requests
                      if r.send_time_s >= warmup_s and r.rtt_ms >= 0)
        return rtts[max(0, math.ceil(0.99 * len(rtts)) - 1)] if rtts else None
    return m.rtt.percentile_ms(99) if m.rtt.count else None


def watched_name(cost: dict[str, Any]) -> str:
    return {"tansu": "Tansu", "kafka": "Kafka"}.get(cost.get("implementation", ""),
                                                   "the broker")
