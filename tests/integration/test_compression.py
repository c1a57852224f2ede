"""Every compression codec in kbatch's engine and in mode librdkafka, read back.

Values are 90% text-like (`compressibility 0.9`), so every codec must shrink them; the
records read back carry every message id exactly once."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from producer_core.config import build_settings
from producer_core.engine.drivers.engine import run
from producer_core.workload.payload import PayloadSpec
from producer_core.workload.workload import Workload
from tests.readback import read_all

pytestmark = pytest.mark.broker

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


@pytest.mark.parametrize("mode", ["partition", "librdkafka"])
@pytest.mark.parametrize("codec", CODECS)
def test_codec_round_trip(tansu_broker, mode: str, codec: str) -> None:
    workload = Workload(topic=f"codec-{mode}-{codec}", partitions=3, rate=4000,
                        messages=1200, duration_s=None, message_size=400,
                        payload=PayloadSpec(compressibility=0.9))
    settings = build_settings({"compression.type": codec, "linger.ms": "20"}.items(),
                              mode=mode)
    results = run(workload, settings, mode, tansu_broker.bootstrap)
    doc = results.to_dict()
    assert doc["messages"]["acknowledged"] == 1200 and doc["messages"]["failed"] == 0
    compression = doc["compression"]
    assert compression["type"] == codec
    assert compression["payload_bytes"] == 1200 * 400
    assert compression["wire_bytes"] == doc["bytes_sent"]
    if codec == "none":  # record and batch headers: a little more on the wire
        assert 0.8 < compression["ratio"] < 1.0
    else:
        assert compression["ratio"] > 1.5
    assert compression["wire_bytes_per_request"] == pytest.approx(
        doc["bytes_sent"] / doc["requests_sent"], rel=1e-3)
    found = asyncio.run(read_all(tansu_broker.bootstrap, workload.topic, 3, expected=1200))
    ids = Counter(mid for records in found.values() for _, mid, _ in records)
    assert set(ids) == set(range(1200)) and max(ids.values()) == 1
