"""perf-test's output lines (Apache Kafka 4.3.1's printf formats) written and read back,
and its multi-value flags rewritten for click."""

from __future__ import annotations

from cli.options.perf_test import expand_multi_values
from producer_core.results.perf_test_format import parse_line, parse_output, total_line, window_line

# lines as Kafka 4.3.1's ProducerPerformance printed them in this project's test run
KAFKA_OUTPUT = """\
Option --producer-props has been deprecated and will be removed in a future version. Use --command-property instead.
1 records sent, 0.2 records/sec (0.00 MB/sec), 4768.0 ms avg latency, 4768.0 ms max latency.
3027 records sent, 2795.0 records/sec (0.27 MB/sec), 235.9 ms avg latency, 656.0 ms max latency.
6000 records sent, 795.123244 records/sec (0.08 MB/sec), 504.27 ms avg latency, 4768.00 ms max latency, 464 ms 50th, 897 ms 95th, 928 ms 99th, 928 ms 99.9th.
"""  # noqa: E501


def test_kafkas_own_lines_parse():
    lines = parse_output(KAFKA_OUTPUT)
    assert [line.kind for line in lines] == ["window", "window", "total"]
    total = lines[-1]
    assert total.records == 6000 and total.records_per_s == 795.123244
    assert total.percentiles_ms == (464, 897, 928, 928) and not total.steady_state


def test_our_lines_are_the_same_format_and_read_back():
    window = window_line(4005, 2.003, 4005 * 100, 3.94, 10.1)
    assert window == ("4005 records sent, 1999.5 records/sec (0.19 MB/sec), 3.9 ms avg "
                      "latency, 10.1 ms max latency.")
    total = total_line(20000, 10.0005, 20000 * 100, 5.571, 69.123, 4.9, 12.2, 33.99, 62.0)
    assert total == ("20000 records sent, 1999.900005 records/sec (0.19 MB/sec), 5.57 ms avg "
                     "latency, 69.12 ms max latency, 4 ms 50th, 12 ms 95th, 33 ms 99th, "
                     "62 ms 99.9th.")
    parsed = parse_line(total)
    assert parsed is not None and parsed.percentiles_ms == (4, 12, 33, 62)
    steady = parse_line(total_line(100, 1.0, 100.0, 1, 2, 1, 1, 2, 2, steady_state=True))
    assert steady is not None and steady.steady_state and steady.records == 100
    assert parse_line("Warmup first 10 records.") is None


def test_multi_value_flags_become_one_flag_per_value():
    args = ["--topic", "t", "--producer-props", "acks=all", "linger.ms=5", "--throughput",
            "-1", "--command-property", "a=1"]
    assert expand_multi_values(args) == [
        "--topic", "t", "--producer-props", "acks=all", "--producer-props", "linger.ms=5",
        "--throughput", "-1", "--command-property", "a=1"]
    # a flag without a value stays, so click reports it
    assert expand_multi_values(["--producer-props", "--topic", "t"]) == [
        "--producer-props", "--topic", "t"]
    assert expand_multi_values(["--producer-props"]) == ["--producer-props"]
