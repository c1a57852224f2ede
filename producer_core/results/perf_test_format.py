"""kafka-producer-perf-test's output lines: written by `kbatch perf-test`, read by anyone.

The formats are ProducerPerformance's own printf strings (Apache Kafka 4.3.1,
tools/src/main/java/org/apache/kafka/tools/ProducerPerformance.java, `Stats.printWindow`
and `Stats.printTotal`), so scripts that parse perf-test's output read kbatch's too:

    %d records sent, %.1f records/sec (%.2f MB/sec), %.1f ms avg latency, %.1f ms max latency.
    %d%s records sent, %f records/sec (%.2f MB/sec), %.2f ms avg latency, %.2f ms max
    latency, %d ms 50th, %d ms 95th, %d ms 99th, %d ms 99.9th.

(the second on one line; `%s` is " steady state" for the figures after --warmup-records).
MB is 1024 * 1024 bytes there, and percentiles are whole milliseconds, truncated (Java
records latencies as int ms).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

MIB = 1024.0 * 1024.0

WINDOW = re.compile(
    r"^(?P<records>\d+) records sent, (?P<rate>[\d.]+) records/sec \((?P<mb>[\d.]+) MB/sec\), "
    r"(?P<avg>[\d.]+|NaN) ms avg latency, (?P<max>[\d.]+) ms max latency\.$")
TOTAL = re.compile(
    r"^(?P<records>\d+)(?P<steady> steady state)? records sent, (?P<rate>[\d.]+) records/sec "
    r"\((?P<mb>[\d.]+) MB/sec\), (?P<avg>[\d.]+|NaN) ms avg latency, (?P<max>[\d.]+) ms max "
    r"latency, (?P<p50>\d+) ms 50th, (?P<p95>\d+) ms 95th, (?P<p99>\d+) ms 99th, "
    r"(?P<p999>\d+) ms 99\.9th\.$")


@dataclass(frozen=True)
class PerfLine:
    """One parsed line: a 5-second window, or the total (with percentiles)."""

    kind: str  # "window" | "total"
    records: int
    records_per_s: float
    mb_per_s: float
    avg_ms: float
    max_ms: float
    percentiles_ms: tuple[int, int, int, int] | None = None  # p50, p95, p99, p99.9
    steady_state: bool = False


def window_line(records: int, seconds: float, value_bytes: float, avg_ms: float,
                max_ms: float) -> str:
    """`Stats.printWindow`'s line for `records` acknowledged in `seconds`."""
    seconds = max(seconds, 1e-9)
    return (f"{records} records sent, {records / seconds:.1f} records/sec "
            f"({value_bytes / seconds / MIB:.2f} MB/sec), {avg_ms:.1f} ms avg latency, "
            f"{max_ms:.1f} ms max latency.")


def total_line(records: int, seconds: float, value_bytes: float, avg_ms: float,
               max_ms: float, p50: float, p95: float, p99: float, p999: float,
               steady_state: bool = False) -> str:
    """`Stats.printTotal`'s line; percentiles truncated to whole ms as Java's ints are."""
    seconds = max(seconds, 1e-9)
    ints = [int(math.floor(v)) for v in (p50, p95, p99, p999)]
    return (f"{records}{' steady state' if steady_state else ''} records sent, "
            f"{records / seconds:f} records/sec ({value_bytes / seconds / MIB:.2f} MB/sec), "
            f"{avg_ms:.2f} ms avg latency, {max_ms:.2f} ms max latency, {ints[0]} ms 50th, "
            f"{ints[1]} ms 95th, {ints[2]} ms 99th, {ints[3]} ms 99.9th.")


def parse_line(line: str) -> PerfLine | None:
    """A perf-test result line as figures; None for any other line (notices, metrics)."""
    line = line.strip()
    match = TOTAL.match(line)
    if match:
        return PerfLine("total", int(match["records"]), float(match["rate"]),
                        float(match["mb"]), float(match["avg"]), float(match["max"]),
                        (int(match["p50"]), int(match["p95"]), int(match["p99"]),
                         int(match["p999"])), bool(match["steady"]))
    match = WINDOW.match(line)
    if match:
        return PerfLine("window", int(match["records"]), float(match["rate"]),
                        float(match["mb"]), float(match["avg"]), float(match["max"]))
    return None


def parse_output(text: str) -> list[PerfLine]:
    """Every result line of a perf-test (or `kbatch perf-test`) output, in order."""
    return [parsed for parsed in map(parse_line, text.splitlines()) if parsed is not None]
