"""Skip Spark tests, with the reason, where PySpark or Java is missing."""

from __future__ import annotations

import importlib.util
import shutil

import pytest

HAVE_PYSPARK = importlib.util.find_spec("pyspark") is not None
HAVE_JAVA = shutil.which("java") is not None

needs_spark = [
    pytest.mark.spark,
    pytest.mark.skipif(not HAVE_PYSPARK, reason="PySpark is not installed: "
                                                "pip install -e '.[test,spark]'"),
    pytest.mark.skipif(not HAVE_JAVA, reason="Spark needs Java 17 or 21 (no java on PATH)"),
]


def assert_row_reproduces_run(row: dict, run: dict, log_path, accuracy: int = 10_000) -> None:
    """An analyze summary row of one run against that run's JSON and request log.

    Requests, records and bytes exactly; means to the JSON's rounding; round-trip
    percentiles within percentile_approx's rank error (1/accuracy of the requests) of the
    log's exact order statistics, and the JSON's HdrHistogram values within 0.1% of those.
    """
    import math

    import numpy as np
    import pyarrow.parquet as pq

    assert row["runs"] == 1
    assert row["requests"] == run["requests_sent"]
    assert row["records"] == run["records_sent"]
    assert row["bytes"] == run["bytes_sent"]
    assert row["retried_requests"] == run["retried_requests"]
    assert round(row["msgs_per_req"], 3) == pytest.approx(run["msgs_per_req"], abs=1e-3)
    assert round(row["partitions_per_req"], 3) == pytest.approx(
        run["partitions_per_request"]["mean"], abs=1e-3)
    assert row["partitions_max"] == run["partitions_per_request"]["max"]
    assert row["req_per_s"] == pytest.approx(run["send_rate_per_s"], abs=2e-3)
    rtts = np.sort(pq.read_table(log_path).column("rtt_ms").drop_null().to_numpy())
    n = len(rtts)
    assert row["rtt_count"] == n == run["rtt"]["count"]
    slack = n / accuracy + 1
    for name, fraction in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99), ("p999", 0.999)):
        lo = rtts[max(0, math.floor(fraction * n - slack) - 1)]
        hi = rtts[min(n - 1, math.ceil(fraction * n + slack))]
        value = row[f"rtt_{name}_ms"]
        assert lo <= value <= hi, (name, lo, value, hi)
        hdr = run["rtt"][f"{name}_ms"]
        assert lo * 0.999 - 0.002 <= hdr <= hi * 1.001 + 0.002, (name, lo, hdr, hi)
    assert row["rtt_max_ms"] == pytest.approx(rtts[-1])
    assert row["rtt_max_ms"] == pytest.approx(run["rtt"]["max_ms"], rel=2e-3, abs=2e-3)


def spark_test(func):
    """Decorate one test with the `needs_spark` marks."""
    for mark in needs_spark:
        func = mark(func)
    return func
