"""LatencyHistogram must be bit-for-bit what hdrh itself would have recorded."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hdrh.histogram import HdrHistogram

from producer_core.results.histogram import (
    HIGHEST_US,
    LOWEST_US,
    SIGNIFICANT_FIGURES,
    LatencyHistogram,
)

PERCENTILES = [0.0, 1.0, 25.0, 50.0, 90.0, 95.0, 99.0, 99.9, 99.99, 100.0]

# Edge values in µs: bucket boundaries of the 2048-sub-bucket layout, powers of two
# (where the bucket index changes) and the clamp limits.
EDGE_US = (
    [0, 1, 2, 3, 1023, 1024, 1025, 2047, 2048, 2049, 4095, 4096, 4097]
    + [2**k for k in range(32)]
    + [2**k - 1 for k in range(2, 32)]
    + [2**k + 1 for k in range(2, 32)]
    + [HIGHEST_US - 1, HIGHEST_US]
)


def counts_of(hdr: HdrHistogram) -> np.ndarray:
    """Copy of hdrh's counters, to compare whole histograms at once."""
    return np.ctypeslib.as_array(hdr.counts).copy()


def reference(values_us: list[int]) -> HdrHistogram:
    """Histogram built the slow, trusted way: hdrh's own record_value, one at a time."""
    hdr = HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_FIGURES)
    for value in values_us:
        assert hdr.record_value(value)
    return hdr


def to_us_scalar(seconds: float) -> int:
    """Independent per-value conversion: round to nearest µs, clamp to [0, HIGHEST_US]."""
    scaled = seconds * 1_000_000
    if scaled >= HIGHEST_US:  # also inf, which round() cannot take
        return HIGHEST_US
    return max(round(scaled), 0)


def sample_seconds(seed: int = 1234, n: int = 4000) -> np.ndarray:
    """Random latencies spanning 0 µs..10 s on a log scale, plus edges and clamp cases."""
    rng = np.random.default_rng(seed)
    log_uniform = np.exp(rng.uniform(np.log(1e-7), np.log(10.0), n))
    small = rng.integers(0, 5000, 500) / 1e6  # exact µs values near the first buckets
    edges = np.array(EDGE_US, dtype=np.float64) / 1e6
    clamped = np.array([-0.5, -1e-6, -3e-7, 4e-7, 5e-7, 3_600.0005, 7_200.0, 1e12, np.inf])
    values = np.concatenate([log_uniform, small, edges, clamped])
    rng.shuffle(values)
    return values


def assert_same_as_hdrh(hist: LatencyHistogram, ref: HdrHistogram) -> None:
    hdr = hist.hdr
    np.testing.assert_array_equal(counts_of(hdr), counts_of(ref))
    assert hdr.total_count == ref.total_count
    assert hist.count == ref.total_count
    assert hdr.min_value == ref.min_value
    assert hdr.max_value == ref.max_value
    assert hdr.get_min_value() == ref.get_min_value()
    assert hdr.get_max_value() == ref.get_max_value()
    for p in PERCENTILES:
        # hdrh's own (slow) percentile on the vectorized histogram, and our numpy one.
        assert hdr.get_value_at_percentile(p) == ref.get_value_at_percentile(p), p
        assert hist.percentile_us(p) == ref.get_value_at_percentile(p), p
        assert hist.percentile_ms(p) == ref.get_value_at_percentile(p) / 1000.0
    assert hist.mean_us() == pytest.approx(ref.get_mean_value(), rel=1e-12)
    assert hdr.encode() == ref.encode()


def test_counts_index_matches_hdrh_for_every_edge() -> None:
    hist = LatencyHistogram()
    values = np.array(EDGE_US, dtype=np.int64)
    expected = [hist.hdr._counts_index_for(int(v)) for v in values]
    assert hist._counts_index(values).tolist() == expected


def test_vectorized_record_equals_one_by_one_record_value() -> None:
    seconds = sample_seconds()
    hist = LatencyHistogram()
    hist.record_seconds(seconds)

    ref = reference([to_us_scalar(float(s)) for s in seconds])
    assert ref.total_count == seconds.size
    assert_same_as_hdrh(hist, ref)
    # The clamp cases really were exercised.
    assert ref.get_count_at_value(0) >= 4  # 0, negatives and 0.4 µs round to 0
    assert ref.max_value == HIGHEST_US


def test_vectorized_record_in_batches_with_empty_ones() -> None:
    seconds = sample_seconds(seed=99)
    hist = LatencyHistogram()
    hist.record_seconds(np.array([], dtype=np.float64))
    for chunk in np.array_split(seconds, 17):
        hist.record_seconds(chunk)
        hist.record_seconds(np.empty(0))
    assert_same_as_hdrh(hist, reference([to_us_scalar(float(s)) for s in seconds]))


def test_record_us_matches_hdrh_and_clamps() -> None:
    hist = LatencyHistogram()
    for value in [5, 0, -7, 2048, HIGHEST_US + 10**9]:
        hist.record_us(value)
    assert_same_as_hdrh(hist, reference([5, 0, 0, 2048, HIGHEST_US]))


def test_nan_is_dropped() -> None:
    hist = LatencyHistogram()
    hist.record_seconds(np.array([0.001, np.nan, 0.002]))
    assert_same_as_hdrh(hist, reference([1000, 2000]))


def test_merge_equals_histogram_of_union() -> None:
    a_values, b_values = sample_seconds(seed=1), sample_seconds(seed=2)
    a, b, union = LatencyHistogram(), LatencyHistogram(), LatencyHistogram()
    a.record_seconds(a_values)
    b.record_seconds(b_values)
    union.record_seconds(np.concatenate([a_values, b_values]))

    a.merge(b)
    np.testing.assert_array_equal(counts_of(a.hdr), counts_of(union.hdr))
    assert a.count == union.count == a_values.size + b_values.size
    assert a.encode() == union.encode()
    assert a.summary_ms() == union.summary_ms()
    assert b.count == b_values.size  # other is left untouched


def test_merge_into_empty_keeps_min() -> None:
    src = LatencyHistogram()
    src.record_seconds(np.array([0.005, 0.007]))
    dst = LatencyHistogram()
    dst.merge(src)
    dst.merge(LatencyHistogram())  # merging an empty one changes nothing
    assert dst.min_ms == pytest.approx(5.0, abs=0.005)
    assert dst.hdr.min_value == 5000
    assert dst.encode() == src.encode()


def test_merge_decoded_histograms() -> None:
    parts = [sample_seconds(seed=s, n=500) for s in range(4)]
    total = LatencyHistogram()
    for part in parts:
        h = LatencyHistogram()
        h.record_seconds(part)
        total.merge(LatencyHistogram.decode(h.encode()))
    union = LatencyHistogram()
    union.record_seconds(np.concatenate(parts))
    np.testing.assert_array_equal(counts_of(total.hdr), counts_of(union.hdr))
    assert total.encode() == union.encode()
    assert total.percentile_ms(99.9) == union.percentile_ms(99.9)


def test_encode_decode_round_trip() -> None:
    hist = LatencyHistogram()
    hist.record_seconds(sample_seconds(seed=7))
    text = hist.encode()
    assert isinstance(text, str)
    assert text.startswith("HISTF")

    back = LatencyHistogram.decode(text)
    np.testing.assert_array_equal(counts_of(back.hdr), counts_of(hist.hdr))
    assert back.count == hist.count
    for p in PERCENTILES:
        assert back.percentile_us(p) == hist.percentile_us(p)
        assert back.hdr.get_value_at_percentile(p) == hist.percentile_us(p)
    assert back.max_ms == hist.max_ms
    assert back.min_ms == hist.min_ms
    assert back.summary_ms() == hist.summary_ms()
    assert back.encode() == text

    # A decoded histogram keeps recording correctly.
    more = np.array([0.0001, 0.25])
    back.record_seconds(more)
    hist.record_seconds(more)
    np.testing.assert_array_equal(counts_of(back.hdr), counts_of(hist.hdr))


def test_summary_is_in_milliseconds() -> None:
    hist = LatencyHistogram()
    hist.record_seconds(np.full(100, 0.010))
    summary = hist.summary_ms()
    # 10 000 µs lies in a bucket of width 8 µs: within hdr's 0.1% precision.
    for key in ("p50_ms", "p95_ms", "p99_ms", "p999_ms", "max_ms", "mean_ms"):
        assert summary[key] == pytest.approx(10.0, rel=1e-3), key
    assert summary["count"] == 100
    assert isinstance(summary["count"], int)
    assert hist.min_ms == pytest.approx(10.0, rel=1e-3)
    assert hist.percentile_ms(50) == pytest.approx(10.0, rel=1e-3)


def test_summary_distinguishes_percentiles_and_prefix() -> None:
    hist = LatencyHistogram()
    hist.record_seconds(np.arange(1, 1001, dtype=np.float64) / 1000.0)  # 1..1000 ms
    summary = hist.summary_ms("ack_")
    assert set(summary) == {
        "ack_p50_ms",
        "ack_p95_ms",
        "ack_p99_ms",
        "ack_p999_ms",
        "ack_max_ms",
        "ack_mean_ms",
        "ack_count",
    }
    assert summary["ack_p50_ms"] == pytest.approx(500.0, rel=1e-3)
    assert summary["ack_p95_ms"] == pytest.approx(950.0, rel=1e-3)
    assert summary["ack_p99_ms"] == pytest.approx(990.0, rel=1e-3)
    assert summary["ack_p999_ms"] == pytest.approx(999.0, rel=1e-3)
    assert summary["ack_max_ms"] == pytest.approx(1000.0, rel=1e-3)
    assert summary["ack_mean_ms"] == pytest.approx(500.5, rel=1e-3)
    assert summary["ack_count"] == 1000


def test_percentile_out_of_range_rejected() -> None:
    hist = LatencyHistogram()
    with pytest.raises(ValueError):
        hist.percentile_ms(100.5)
    with pytest.raises(ValueError):
        hist.percentile_ms(-1)


def test_empty_summary_is_all_zeros() -> None:
    hist = LatencyHistogram()
    summary = hist.summary_ms()
    assert summary == {
        "p50_ms": 0.0,
        "p95_ms": 0.0,
        "p99_ms": 0.0,
        "p999_ms": 0.0,
        "max_ms": 0.0,
        "mean_ms": 0.0,
        "count": 0,
    }
    assert hist.count == 0
    assert hist.min_ms == hist.max_ms == hist.mean_ms == hist.percentile_ms(99) == 0.0
    assert LatencyHistogram.decode(hist.encode()).summary_ms() == summary


FOOTER = re.compile(
    r"#\[Mean    = +(?P<mean>[\d.]+), StdDeviation   = +(?P<std>[\d.]+)\]\n"
    r"#\[Max     = +(?P<max>[\d.]+), Total count    = +(?P<total>\d+)\]\n"
    r"#\[Buckets = +(?P<buckets>\d+), SubBuckets     = +(?P<sub>\d+)\]\n\Z"
)
HEADER = "       Value     Percentile TotalCount 1/(1-Percentile)\n\n"


def test_to_hgrm_format_in_ms() -> None:
    seconds = np.random.default_rng(5).uniform(0.001, 0.050, 3000)  # 1..50 ms
    hist = LatencyHistogram()
    hist.record_seconds(seconds)
    text = hist.to_hgrm()

    assert text.startswith(HEADER)
    footer = FOOTER.search(text)
    assert footer is not None, text[-400:]
    assert int(footer["total"]) == 3000
    assert int(footer["buckets"]) == hist.hdr.bucket_count
    assert int(footer["sub"]) == 2048
    assert float(footer["max"]) == pytest.approx(hist.max_ms, abs=0.001)
    assert float(footer["mean"]) == pytest.approx(hist.mean_ms, abs=0.001)
    # Scaled to ms like the mean (uniform 1..50 ms: std ~14.1 ms).
    assert float(footer["std"]) == pytest.approx(np.std(seconds) * 1000, rel=0.01)

    rows = text[len(HEADER) : footer.start()].splitlines()
    assert len(rows) > 10
    first, last = rows[0].split(), rows[-1].split()
    assert float(first[0]) == pytest.approx(hist.min_ms, abs=0.001)
    assert float(first[1]) == 0.0
    assert float(last[0]) == pytest.approx(hist.max_ms, abs=0.001)
    assert float(last[1]) == 1.0
    assert int(last[2]) == 3000
    for row in rows[:-1]:
        assert len(row.split()) == 4, row
        assert 1.0 <= float(row.split()[0]) <= 50.1, row


def test_to_hgrm_unscaled_is_in_microseconds() -> None:
    hist = LatencyHistogram()
    hist.record_seconds(np.full(10, 0.002))
    footer = FOOTER.search(hist.to_hgrm(scale_to_ms=False))
    assert footer is not None
    assert float(footer["max"]) == pytest.approx(2000.0, rel=1e-3)
    assert int(footer["total"]) == 10


def test_to_hgrm_empty() -> None:
    text = LatencyHistogram().to_hgrm()
    assert text.startswith(HEADER)
    footer = FOOTER.search(text)
    assert footer is not None
    assert int(footer["total"]) == 0


def test_buffered_small_recordings_equal_one_recording():
    rng = np.random.default_rng(4)
    values = rng.exponential(0.05, 20_000)
    many, once = LatencyHistogram(), LatencyHistogram()
    for chunk in np.array_split(values, 3_000):  # small arrays, as per-response acks are
        many.record_seconds(chunk)
    once.record_seconds(values)
    assert many.count == once.count == 20_000
    assert many.encode() == once.encode()
    assert many.percentile_ms(99.9) == once.percentile_ms(99.9)
