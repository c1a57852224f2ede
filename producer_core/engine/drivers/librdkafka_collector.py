"""The patched librdkafka's broker-level collector, as its statistics tell it (mode
librdkafka-broker): each broker's ``"batch_collector"`` object of the statistics JSON
(STATISTICS.md of the patched tree, ``brokers.batch_collector``), read at every emit, turned
into the same ``collector`` section of the results that kbatch's own collector modes write
(`CollectorPolicy.stats`): ``sends``, ``sends_by_reason`` under mode broker's reason names,
``partitions_per_send``, ``requests_per_send`` and ``collecting_for``, so that one gate
rule or one table row reads both.

The library's counters are totals since the producer started (``sends``, ``requests``,
``partitions``, ``wait_us``: the collection's age when sent, summed, and ``trigger_*``), so
the last emit of each broker holds its run and the means are exact: totals over sends,
across brokers. A library without the object (stock librdkafka), or whose collector is
off (``enabled`` false), leaves the section out.
"""

from __future__ import annotations

from typing import Any

REASONS = {
    "flush": "trigger_flush",
    "max_partitions": "trigger_partitions",
    "max_bytes": "trigger_bytes",
    "broker_linger": "trigger_linger",
}
"""Mode broker's send reasons (`core.linger.broker_policy.REASONS`) -> the library's counters."""


def _count(values: dict[str, Any], name: str) -> int:
    value = values.get(name, 0)
    return int(value) if isinstance(value, int | float) else 0


class CollectorStats:
    """The last ``batch_collector`` object of each broker seen in the statistics."""

    def __init__(self) -> None:
        self._last: dict[int, dict[str, Any]] = {}

    @property
    def seen(self) -> bool:
        """Whether the library has a collector in use."""
        return any(values.get("enabled", True) for values in self._last.values())

    def update(self, node: int, values: Any) -> None:
        """One emit's object for broker `node` (None or absent: nothing to record)."""
        if isinstance(values, dict):
            self._last[node] = values

    def by_broker(self) -> dict[str, dict[str, Any]]:
        """What the library said, per broker node id, as it said it."""
        return {str(node): dict(values) for node, values in sorted(self._last.items())}

    def section(self) -> dict[str, Any] | None:
        """The results' ``collector`` section (None: no collector in use)."""
        if not self.seen:
            return None
        brokers = list(self._last.values())
        sends = sum(_count(v, "sends") for v in brokers)
        section: dict[str, Any] = {
            "sends": sends,
            "sends_by_reason": {reason: sum(_count(v, name) for v in brokers)
                                for reason, name in REASONS.items()},
            "source": "librdkafka statistics (brokers.batch_collector)",
        }
        if sends:
            def mean(name: str, scale: float = 1.0) -> float:
                return round(sum(_count(v, name) for v in brokers) / sends / scale, 3)

            section["partitions_per_send"] = {"mean": mean("partitions")}
            section["requests_per_send"] = {"mean": mean("requests")}
            section["collecting_for"] = {"mean_ms": mean("wait_us", 1000.0)}
        return section
