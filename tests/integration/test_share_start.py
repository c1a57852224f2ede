"""A share of a distributed run starts at the common start instant, not at its setup, even
unthrottled (whose every message is due at once), in both engines. No Spark needed."""

from __future__ import annotations

import time

import pytest

from producer_core.config import build_settings
from producer_core.engine.drivers.engine import run
from producer_core.workload.workload import Workload

pytestmark = pytest.mark.broker


@pytest.mark.parametrize("mode", ["partition", "librdkafka"])
def test_an_unthrottled_share_waits_for_the_common_start(tansu_broker, mode):
    workload = Workload(topic=f"share-start-{mode}", partitions=4, rate=None, messages=4000,
                        duration_s=None)
    start_at = time.time() + 1.0
    share = workload.share(1, 2, start_at)
    results = run(share, build_settings(mode=mode), mode, tansu_broker.bootstrap)
    assert time.time() >= start_at
    assert results.metrics.messages_acked == 2000
    # measured from the start instant: had it produced during the wait, the run would
    # have been over (or nearly) by then
    assert results.duration_s > 0.001
    assert all(r.send_time_s >= 0 for r in results.metrics.requests)
