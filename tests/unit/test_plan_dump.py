"""The golden plan dump: every engine mode, run on a virtual clock against a fake cluster,
plans exactly the requests it planned before (fixtures/plan_dump.txt, written from main
before the producer core was split out of engine.py).

A refactoring of the engine, the accumulator, the sender or a policy that changes which
batches go when, in which request, or how a message ends shows up here as a diff.
Regenerate the fixture only for an intended change of behaviour:
    KBATCH_WRITE_PLAN_DUMP=1 python -m pytest tests/unit/test_plan_dump.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from producer_core.config import build_settings
from producer_core.engine.drivers.engine import Engine
from producer_core.engine.drivers.run_types import RunCall
from producer_core.engine.modes import REGISTRY
from producer_core.errors import BrokerError
from producer_core.workload.workload import Workload
from tests.virtual_run import FakeCluster, run_virtual

FIXTURE = Path(__file__).parent / "fixtures" / "plan_dump.txt"
ENGINE_MODES = tuple(spec.name for spec in REGISTRY if spec.policy is not None)


def _scenarios() -> list[tuple[str, str, dict[str, str], dict[str, Any], dict[str, Any]]]:
    """(name, mode, settings, workload fields, fake cluster fields)."""
    base = {"rate": 4000.0, "duration_s": 0.25, "partitions": 12, "message_size": 60}
    scenarios = []
    for mode in ENGINE_MODES:
        settings = {"linger.ms": "5"} if mode in ("partition", "java") else {}
        if mode == "bruce":
            settings = {"bruce.combined.max.delay.ms": "4"}
        if mode == "broker":
            settings = {"broker.linger.ms": "3"}
        scenarios.append((mode, mode, settings, dict(base), {}))
        scenarios.append((f"{mode}-keyed", mode, settings, dict(base, keys=50, seed=7), {}))
    scenarios += [
        ("partition-acks0", "partition", {"acks": "0", "enable.idempotence": "false"},
         dict(base), {}),
        ("partition-errors", "partition", {"linger.ms": "2"}, dict(base),
         {"errors": {3: 6, 9: 45}, "lost": {14}, "refuse_send": {20}}),
        ("partition-epoch-bump", "partition", {"linger.ms": "2"},
         dict(base, rate=300.0, duration_s=0.5), {"errors": {5: 59, 40: 45}}),
        ("partition-timeouts", "partition",
         {"linger.ms": "1", "request.timeout.ms": "10", "delivery.timeout.ms": "30",
          "retry.backoff.ms": "5"}, dict(base), {"hang": {6, 7, 30}}),
        ("partition-fenced", "partition", {"linger.ms": "2"}, dict(base), {"errors": {12: 90}}),
        ("partition-transactions-fenced", "partition",
         {"linger.ms": "3", "transactional.id": "golden", "transaction.duration.ms": "60"},
         dict(base), {"fence_end": True}),
        ("java-small-batches", "java", {"linger.ms": "1", "batch.size": "300"}, dict(base),
         {}),
        ("partition-transactions", "partition",
         {"linger.ms": "3", "transactional.id": "golden", "transaction.duration.ms": "60"},
         dict(base), {}),
        ("broker-transactions-abort", "broker",
         {"broker.linger.ms": "2", "transactional.id": "golden",
          "transaction.duration.ms": "50", "transaction.abort.every": "2"}, dict(base), {}),
    ]
    return scenarios


def _run(mode: str, settings: dict[str, str], workload: dict[str, Any],
         cluster_fields: dict[str, Any]) -> tuple[Any, FakeCluster]:
    cluster = FakeCluster(**cluster_fields)

    async def go() -> Any:
        call = RunCall(Workload(**workload), build_settings(settings, mode=mode), mode,
                       cluster.bootstrap)
        engine = Engine(call, cluster)  # type: ignore[arg-type]  # a fake cluster
        try:
            return await engine.run()
        except BrokerError as exc:
            return f"{type(exc).__name__}: {exc}"

    return run_virtual(go), cluster


def _dump_one(name: str, results: Any, cluster: FakeCluster) -> list[str]:
    lines = [f"== {name}"]
    if isinstance(results, str):  # the run ended with an error
        return [*lines, "error " + results, "cluster " + json.dumps(cluster.log)]
    m = results.metrics
    for r in m.requests:
        lines.append(f"t={r.send_time_s:.6f} broker={r.broker} partitions={r.partitions} "
                     f"records={r.records} bytes={r.bytes} reason={r.reason} "
                     f"linger_ms={r.linger_ms:.3f} attempt={r.attempt} rtt_ms={r.rtt_ms:.3f}")
    lines.append(
        f"generated={m.messages_generated} acked={m.messages_acked} "
        f"failed={m.messages_failed} {dict(sorted(m.failed_reasons.items()))} "
        f"unknown={m.messages_unknown} {dict(sorted(m.unknown_reasons.items()))} "
        f"unacknowledged={m.messages_sent_unacknowledged} aborted={m.messages_aborted} "
        f"discarded={m.messages_discarded} retried_requests={m.retried_requests} "
        f"records_sent={m.records_sent} bytes_sent={m.bytes_sent}")
    lines.append(f"latency_count={m.latency.count} p50_ms={m.latency.percentile_ms(50):.3f} "
                 f"p99_ms={m.latency.percentile_ms(99):.3f} "
                 f"max_ms={m.latency.percentile_ms(100):.3f}")
    for topic, t in sorted(m.topics.items()):
        lines.append(f"topic {topic}: requests={t.requests} records_sent={t.records_sent} "
                     f"bytes_sent={t.bytes_sent} acknowledged={t.acknowledged} "
                     f"failed={t.failed} unknown={t.unknown} aborted={t.aborted}")
    lines.append("idempotence " + json.dumps(m.idempotence, sort_keys=True))
    if results.policy is not None:
        lines.append(f"policy {results.policy.key} "
                     + json.dumps(results.policy.values, sort_keys=True, default=str))
    if results.transactions is not None:
        lines.append("transactions " + json.dumps(results.transactions, sort_keys=True,
                                                  default=str))
    lines.append("cluster " + json.dumps(cluster.log))
    return lines


def plan_dump() -> str:
    lines: list[str] = []
    for name, mode, settings, workload, cluster_fields in _scenarios():
        results, cluster = _run(mode, settings, workload, cluster_fields)
        lines.extend(_dump_one(name, results, cluster))
    return "\n".join(lines) + "\n"


def test_every_engine_mode_has_a_scenario() -> None:
    names = {mode for _, mode, *_ in _scenarios()}
    assert names == set(ENGINE_MODES)
    assert {"partition", "java", "broker", "adaptive", "aimd", "bruce"} <= names


def test_plan_dump_is_unchanged() -> None:
    dump = plan_dump()
    if os.environ.get("KBATCH_WRITE_PLAN_DUMP"):
        FIXTURE.write_text(dump)
    assert dump == FIXTURE.read_text()
