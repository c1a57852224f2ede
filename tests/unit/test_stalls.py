"""Stall detection on synthetic request logs and interval rows (issue 47), and the
priming record's shape."""

from __future__ import annotations

from types import SimpleNamespace

from producer_core.engine.core.record_batch import HEADER
from producer_core.engine.transport.priming import (
    PRIME_KEY,
    Priming,
    by_leader,
    prime_batch,
    priming_section,
)
from producer_core.results.stalls import (
    Stall,
    find_stalls,
    stall_warning,
    stalls_from_intervals,
    stalls_from_requests,
)


def steady(start: float, end: float, every: float = 0.01, rtt_ms: float = 5.0
           ) -> list[tuple[float, float]]:
    """A request every `every` s from `start` to `end`, each answered after `rtt_ms`."""
    count = int(round((end - start) / every))
    return [(start + i * every, rtt_ms) for i in range(count)]


def test_a_steady_run_has_no_stall() -> None:
    assert stalls_from_requests(steady(0.0, 10.0), end_s=10.0) == []


def test_requests_waiting_through_a_gap_are_a_stall_with_its_span() -> None:
    # steady until 6 s; five requests sent 6.0-6.04 s are answered at 20 s; steady again
    stuck = [(6.0 + i * 0.01, (20.0 - (6.0 + i * 0.01)) * 1000) for i in range(5)]
    log = steady(0.0, 6.0) + stuck + steady(20.0, 22.0)
    stalls = stalls_from_requests(log, end_s=22.0)
    assert len(stalls) == 1
    stall = stalls[0]
    assert abs(stall.start_s - 6.0) < 1e-9 and abs(stall.end_s - 20.0) < 1e-9
    assert stall.waiting == 5
    assert stall.as_dict() == {"start_s": 6.0, "end_s": 20.0, "seconds": 14.0,
                               "requests_waiting": 5}


def test_an_idle_gap_without_requests_in_flight_is_not_a_stall() -> None:
    # nothing sent from 2 s to 8 s (a schedule's pause): no acknowledgement was owed
    log = steady(0.0, 2.0) + steady(8.0, 10.0)
    assert stalls_from_requests(log, end_s=10.0) == []


def test_the_stall_starts_when_the_waiting_request_was_sent() -> None:
    # the last answer before the gap comes at 2.005 s; the stuck request leaves at 3.5 s
    log = steady(0.0, 2.0) + [(3.5, 4000.0)]
    (stall,) = stalls_from_requests(log, end_s=8.0)
    assert (stall.start_s, stall.end_s, stall.waiting) == (3.5, 7.5, 1)


def test_a_request_never_answered_waits_until_the_run_ends() -> None:
    log = steady(0.0, 1.0) + [(1.0, -1.0)]
    (stall,) = stalls_from_requests(log, end_s=9.0)
    assert (stall.start_s, stall.end_s) == (1.0, 9.0)


def test_gaps_shorter_than_the_threshold_are_not_stalls() -> None:
    log = steady(0.0, 1.0) + [(1.0, 900.0)] + steady(2.0, 3.0)
    assert stalls_from_requests(log, end_s=3.0) == []
    assert len(stalls_from_requests(log, end_s=3.0, min_s=0.5)) == 1


def _row(start: float, end: float, generated: int, acknowledged: int) -> dict:
    return {"start_s": start, "end_s": end, "generated": generated,
            "acknowledged": acknowledged, "failed": 0}


def test_intervals_with_nothing_acknowledged_while_messages_wait_are_a_stall() -> None:
    rows = [_row(0, 1, 5000, 4900), _row(1, 2, 5000, 5000), _row(2, 3, 5000, 0),
            _row(3, 4, 5000, 0), _row(4, 5, 0, 0), _row(5, 6, 0, 15100)]
    (stall,) = stalls_from_intervals(rows)
    assert (stall.start_s, stall.end_s, stall.waiting, stall.unit) == (2, 5, 100, "messages")


def test_quiet_intervals_with_nothing_outstanding_are_not_a_stall() -> None:
    rows = [_row(0, 1, 100, 100), _row(1, 2, 0, 0), _row(2, 3, 0, 0), _row(3, 4, 10, 10)]
    assert stalls_from_intervals(rows) == []


def test_find_stalls_prefers_the_request_log_and_skips_acks_0() -> None:
    requests = [SimpleNamespace(send_time_s=s, rtt_ms=r)
                for s, r in steady(0.0, 1.0) + [(1.0, 5000.0)]]
    rows = [_row(0, 1, 20, 10), _row(1, 3, 0, 0), _row(3, 6, 0, 10)]
    assert [s.unit for s in find_stalls(requests, rows, 6.0)] == ["requests"]
    assert find_stalls(requests, rows, 6.0, answered=False) == []
    java_log = [SimpleNamespace(send_time_s=s, rtt_ms=-1.0) for s, _ in steady(0.0, 1.0)]
    assert [s.unit for s in find_stalls(java_log, rows, 6.0)] == ["messages"]


def test_the_warning_names_the_longest_stall_and_counts_the_rest() -> None:
    text = stall_warning([Stall(1.0, 2.5, 3), Stall(6.0, 20.0, 5)])
    assert text is not None
    assert text.startswith("stall: no acknowledgement from 6.0 s to 20.0 s (14.0 s) while "
                           "5 requests were waiting, and 1 shorter stall.")
    assert stall_warning([]) is None


def test_a_priming_record_has_the_prime_key_no_value_and_no_producer_id() -> None:
    batch = prime_batch(1_700_000_000_000)
    header = HEADER.unpack_from(batch)
    # baseOffset, length, leader epoch, magic, crc, attributes, last offset delta,
    # first ts, max ts, producer id, epoch, base sequence, record count
    assert header[3] == 2 and header[9] == -1 and header[10] == -1 and header[11] == -1
    assert header[12] == 1
    assert PRIME_KEY in batch


def test_priming_groups_partitions_by_leader_and_sums_topics() -> None:
    assert by_leader([0, 1, 2, 3], [1, 2, 1, 2]) == {1: [0, 2], 2: [1, 3]}
    section = priming_section([Priming("a", 1000, 0, 0.4, {1: 6, 2: 4}),
                               Priming("b", 2, 8, 0.01, {2: 2})])
    assert section == {"partitions": 1002, "seconds": 0.41, "requests": 12,
                       "requests_by_broker": {"1": 6, "2": 6},
                       "topics": {"a": {"primed": 1000, "already_written": 0, "seconds": 0.4,
                                        "requests": 10},
                                  "b": {"primed": 2, "already_written": 8, "seconds": 0.01,
                                        "requests": 2}}}


def test_an_interval_without_acknowledgements_says_no_acks() -> None:
    from cli.options.output_mode import interval_line

    row = {"start_s": 6.0, "end_s": 7.0, "msgs_per_s": 0.0, "mb_per_s": 0.0,
           "requests_per_s": 0.4, "msgs_per_req": 5388.0, "p50_ms": 0.0, "p99_ms": 0.0,
           "failed": 0, "latency_count": 0, "acknowledged": 0}
    line = interval_line("[partition]", row)
    assert "no acks" in line and "0.0 ms" not in line
    # acknowledged figures first, then the sent ones, each named
    assert line.index("acked/s") < line.index("no acks") < line.index("sent req/s")
    busy = interval_line("[partition]", {**row, "latency_count": 5, "p50_ms": 4.2,
                                         "p99_ms": 9.9, "msgs_per_s": 5000.0,
                                         "acknowledged": 5000})
    assert "ack p50 4.2 ms  p99 9.9 ms" in busy
    warming = interval_line("[partition]", {**row, "acknowledged": 500, "msgs_per_s": 500.0})
    assert "no acks" not in warming and "ack latency: warm-up" in warming


def test_warm_topics_leave_no_priming_section() -> None:
    assert priming_section([Priming("a", 0, 300, 0.01)]) is None
    assert priming_section([]) is None


def test_the_first_priming_record_is_padded_past_the_index_interval() -> None:
    from producer_core.engine.transport.priming import INDEX_INTERVAL_BYTES, pad_bytes

    assert pad_bytes() > INDEX_INTERVAL_BYTES
    assert pad_bytes([("index.interval.bytes", "16384")]) > 16384
    padded = prime_batch(1_700_000_000_000, pad_bytes())
    assert len(padded) > INDEX_INTERVAL_BYTES and PRIME_KEY in padded
    assert HEADER.unpack_from(padded)[12] == 1  # still one record, value null
