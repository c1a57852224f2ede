"""Time blocked on buffer.memory is reported however the client counts it, and a Java-style
producer with room for few batches per partition is told why it sent one record a batch
(issue 42: the seed scenario's one-record trap, docs/findings/fidelity.md)."""

from __future__ import annotations

from cli.render.tables import blocked_row
from producer_core.engine.drivers.run_checks import batch_pool_advice, run_warnings
from producer_core.results.metrics import RunMetrics
from producer_core.workload.workload import Workload

MB32 = 32 * 1024 * 1024


def blocked_metrics(seconds: float, episodes: int = 0) -> RunMetrics:
    metrics = RunMetrics()
    metrics.blocked_s = seconds
    metrics.blocked_episodes = episodes
    metrics.blocked_max_s = seconds / max(episodes, 1)
    return metrics


def test_a_total_without_episodes_is_still_a_warning_and_a_row():
    # the Java producer reports only bufferpool-wait-time-ns-total: no episodes
    warnings = run_warnings(blocked_metrics(13.18), Workload(topic="t"), "a full buffer.memory")
    assert any(w.startswith("The generator was blocked on a full buffer.memory for 13180.0 ms "
                            "in total (the client's own count)") for w in warnings)
    assert blocked_row({"generator_blocked": {"total_ms": 13182.5, "max_ms": 0.0,
                                              "episodes": 0}}) == (
        "generator blocked on memory total ms (the client's count)", "13,182.50")
    engine = blocked_row({"generator_blocked": {"total_ms": 20.0, "max_ms": 5.0,
                                                "episodes": 4}})
    assert engine is not None and engine[1].endswith("(4)")
    assert blocked_row({"generator_blocked": {"total_ms": 0.0, "max_ms": 0.0,
                                              "episodes": 0}}) is None
    assert not any("blocked" in w for w in run_warnings(RunMetrics(), Workload(topic="t"),
                                                         "buffer.memory"))


def test_few_batches_per_partition_get_the_trap_explained_with_the_fix():
    seed = Workload(topic="t", partitions=1000)
    advice = batch_pool_advice(blocked_metrics(20.0, 300), seed, MB32, 16384)
    assert advice is not None
    assert "holds 2,048 batches of batch.size=16384, 2.0 per partition for 1,000" in advice
    assert "Raise buffer.memory or lower batch.size" in advice
    # the Java producer's own count (no episodes) counts as blocked too
    assert batch_pool_advice(blocked_metrics(13.0), seed, MB32, 16384) is not None
    # not blocked, or room for three batches a partition: nothing to explain
    assert batch_pool_advice(RunMetrics(), seed, MB32, 16384) is None
    assert batch_pool_advice(blocked_metrics(1.0, 3), Workload(topic="t", partitions=16),
                             MB32, 16384) is None
    assert batch_pool_advice(blocked_metrics(1.0, 3), seed, MB32, 4096) is None
