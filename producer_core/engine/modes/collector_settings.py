"""The settings the broker-level collector modes (broker, librdkafka-broker, adaptive,
aimd) share: when a broker's collection is sent early. Not a mode: each collector mode
lists these."""

from __future__ import annotations

from producer_core.engine.modes.spec import SettingSpec

COLLECTOR_MODE_NAMES = ("broker", "librdkafka-broker", "adaptive", "aimd")

MAX_PARTITIONS = SettingSpec(
    "broker.batch.max.partitions", -1, "int", "send a broker's collection early once this "
    "many partitions are collected (-1: off)", -1, 1_000_000, modes=COLLECTOR_MODE_NAMES)
MAX_BYTES = SettingSpec(
    "broker.batch.max.bytes", -1, "int", "send a broker's collection early once its "
    "partitions hold this many record bytes (-1: off; in mode adaptive, a collection that "
    "fills one max.request.size request is that request)", -1, 1 << 40,
    modes=COLLECTOR_MODE_NAMES)

COLLECTOR_SETTINGS = (MAX_PARTITIONS, MAX_BYTES)
COLLECTOR_READS = tuple(spec.name for spec in COLLECTOR_SETTINGS)
