"""The patched librdkafka's broker-level collector, as its statistics tell it (mode
librdkafka-broker): each broker's ``"batch_collector"`` object of the statistics JSON
(clients/librdkafka/README.md), read at every emit, turned into the same ``collector``
section of the results that kbatch's own collector modes write (`CollectorPolicy.stats`):
``sends``, ``sends_by_reason`` under mode broker's reason names, ``partitions_per_send``
and ``collecting_for``, so that one gate rule or one table row reads both.

The library's counters are totals since the producer started, so the last emit of each
broker holds its run; a broker's averages are weighted by its sends when brokers are
combined. A library without the object (stock librdkafka) leaves the section out.
"""

from __future__ import annotations

from typing import Any

REASONS = {
    "flush": ("trigger_flush",),
    "max_partitions": ("trigger_partitions", "trigger_max_partitions"),
    "max_bytes": ("trigger_bytes", "trigger_max_bytes"),
    "broker_linger": ("trigger_linger", "trigger_broker_linger"),
}
"""Mode broker's send reasons (`core.linger.broker.REASONS`) and the library's counters."""
PARTITIONS_AVG = ("partitions_avg",)
WAIT_AVG_MS = ("wait_avg_ms", "wait_ms_avg")
WAIT_AVG_US = ("wait_avg_us", "wait_us_avg", "wait_avg")
"""The library's average collection wait; microseconds unless named in ms."""


def _first(values: dict[str, Any], names: tuple[str, ...]) -> float | None:
    for name in names:
        value = values.get(name)
        if isinstance(value, int | float):
            return float(value)
    return None


class CollectorStats:
    """The last ``batch_collector`` object of each broker seen in the statistics."""

    def __init__(self) -> None:
        self._last: dict[int, dict[str, Any]] = {}

    @property
    def seen(self) -> bool:
        return bool(self._last)

    def update(self, node: int, values: Any) -> None:
        """One emit's object for broker `node` (None or absent: nothing to record)."""
        if isinstance(values, dict):
            self._last[node] = values

    def by_broker(self) -> dict[str, dict[str, Any]]:
        """What the library said, per broker node id, as it said it."""
        return {str(node): dict(values) for node, values in sorted(self._last.items())}

    def section(self) -> dict[str, Any] | None:
        """The results' ``collector`` section (None: no collector statistics)."""
        if not self._last:
            return None
        sends = 0
        by_reason = dict.fromkeys(REASONS, 0)
        partitions = wait_ms = weight_p = weight_w = 0.0
        for values in self._last.values():
            count = int(values.get("sends", 0) or 0)
            sends += count
            for reason, names in REASONS.items():
                by_reason[reason] += int(_first(values, names) or 0)
            average = _first(values, PARTITIONS_AVG)
            if average is not None and count:
                partitions += average * count
                weight_p += count
            wait = _first(values, WAIT_AVG_MS)
            if wait is None:
                micros = _first(values, WAIT_AVG_US)
                wait = None if micros is None else micros / 1000.0
            if wait is not None and count:
                wait_ms += wait * count
                weight_w += count
        section: dict[str, Any] = {"sends": sends, "sends_by_reason": by_reason,
                                   "source": "librdkafka statistics (batch_collector)"}
        if weight_p:
            section["partitions_per_send"] = {"mean": round(partitions / weight_p, 3)}
        if weight_w:
            section["collecting_for"] = {"mean_ms": round(wait_ms / weight_w, 3)}
        return section
