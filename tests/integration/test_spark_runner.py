"""`--runner spark` on local[2] against the embedded broker: the shares run as Spark tasks,
their figures add up, their histograms merge exactly, and every message lands once."""

from __future__ import annotations

import asyncio
import time
from collections import Counter

import numpy as np
import pytest

from producer_core.config import build_settings
from producer_core.distributed.merge import to_payload
from producer_core.distributed.plan import parse_master
from producer_core.errors import KbatchError, UsageError
from producer_core.results.histogram import LatencyHistogram
from producer_core.workload.message_source import SHARE_ID_SHIFT
from producer_core.workload.workload import Workload
from tests.readback import read_all
from tests.spark_support import needs_spark

pytestmark = [pytest.mark.broker, *needs_spark]


@pytest.fixture(scope="module")
def runner():
    """One Spark session (local[2]) for the module; its JVM ends with it."""
    from producer_core.distributed.spark_runner import SparkRunner

    with SparkRunner(parse_master("local[2]"), 2, start_lead_s=3.0) as spark_runner:
        yield spark_runner


def test_two_workers_add_up_merge_exactly_and_deliver_every_message_once(runner, tansu_broker):
    workload = Workload(topic="spark-shares", partitions=8, rate=4000, messages=8000,
                        duration_s=None, keys=0)
    snapshots = []
    began = time.time()
    run = runner.run_distributed(workload, build_settings([("linger.ms", "10")]),
                                 "partition", tansu_broker.bootstrap, snapshots.append)
    results, shares = run.results, run.shares
    assert len(shares) == 2

    # totals are the sums of the shares'
    m = results.metrics
    assert results.requests_sent == sum(s.requests_sent for s in shares) > 0
    for name in ("records_sent", "bytes_sent", "messages_generated", "messages_acked",
                 "messages_failed", "retried_requests"):
        assert getattr(m, name) == sum(getattr(s.metrics, name) for s in shares), name
    assert m.messages_acked == 8000 and m.messages_failed == 0
    assert [s.metrics.messages_acked for s in shares] == [4000, 4000]
    assert m.requests_by_broker == sum((s.metrics.requests_by_broker for s in shares),
                                       Counter())
    assert len(m.requests) == results.requests_sent
    # each share ran at half the rate, together: the run took ~2 s, not ~4 s
    assert results.duration_s < 3.5
    assert results.duration_s == max(s.duration_s for s in shares)

    # the merged latency histogram is the merge of the shares' encoded histograms
    expected = LatencyHistogram()
    for share in shares:
        expected.merge(LatencyHistogram.decode(to_payload(share)["histograms"]["latency"]))
    assert m.latency.count == expected.count == 8000
    assert np.array_equal(m.latency._counts, expected._counts)
    assert m.latency.encode() == expected.encode()

    # the JSON names the shares; they started together
    document = results.to_dict()
    runner_info = document["runner"]
    assert runner_info["workers"] == 2 and runner_info["master"] == "local[2]"
    assert [s["acknowledged"] for s in runner_info["shares"]] == [4000, 4000]
    assert sum(s["requests_sent"] for s in runner_info["shares"]) == document["requests_sent"]
    assert all(abs(s["start_offset_ms"]) < 1000 for s in runner_info["shares"])

    # progress: tasks finished and messages acknowledged so far reached the driver
    assert snapshots and snapshots[-1].tasks_total == 2
    assert max(s.acknowledged for s in snapshots) > 0
    assert time.time() - began < 30

    # every message is in the topic exactly once: share i's ids are i << 56 | 0..3999
    found = asyncio.run(read_all(tansu_broker.bootstrap, workload.topic, 8, expected=8000))
    stored = Counter(mid for records in found.values() for _, mid, _ in records)
    assert max(stored.values()) == 1, "a message is stored more than once"
    assert set(stored) == {(i << SHARE_ID_SHIFT) | k for i in range(2) for k in range(4000)}


def test_a_failing_share_fails_the_run_with_its_own_error(runner, tansu_broker):
    # each share's engine refuses a message larger than max.request.size; the driver does not
    workload = Workload(topic="spark-fails", partitions=2, rate=1000, messages=10,
                        duration_s=None, message_size=2000)
    settings = build_settings([("max.request.size", "1024"), ("batch.size", "1000")])
    with pytest.raises(UsageError) as error:
        runner.run_distributed(workload, settings, "partition", tansu_broker.bootstrap)
    text = str(error.value)
    assert text.startswith("Share 0 of 2 failed on ")
    assert "UsageError: A message of 2000 bytes" in text and "max.request.size=1024" in text
    assert "(1 more shares failed too)" in text
    assert "Traceback" not in text and "java" not in text.lower()


def test_an_unreachable_broker_is_one_line_not_a_stack_trace(runner):
    workload = Workload(topic="spark-nobroker", partitions=1, rate=100, messages=5,
                        duration_s=None)
    with pytest.raises(KbatchError) as error:  # the driver's topic creation finds no broker
        runner.run_distributed(workload, build_settings(), "partition", "127.0.0.1:1")
    assert "Could not reach any bootstrap server" in str(error.value)
