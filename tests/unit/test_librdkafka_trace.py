"""librdkafka's debug log read as a trace (issue 42): pure parsing and arithmetic, with
synthetic log lines written in librdkafka 2.x's formats (rdkafka_msgset_writer.c,
rdkafka_broker.c) and synthetic times."""

from __future__ import annotations

import logging

from producer_core.engine.drivers.librdkafka_trace import (
    ENQUEUE_NS,
    LogTap,
    add_requests,
    client_in_flight,
    replay_order,
    trace_settings,
)
from producer_core.results.client_trace import ClientTrace

MS = 1_000_000
BROKER = "[thrd:127.0.0.1:9092/1]: 127.0.0.1:9092/1: "


def built(ns: int, partition: int, count: int, msgid: int = 0) -> tuple[int, str, str]:
    return (ns, "PRODUCE", BROKER + f"t [{partition}]: Produce MessageSet with {count} "
            f"message(s) ({100 * count} bytes, ApiVersion 10, MsgVersion 2, MsgId {msgid}, "
            "BaseSeq -1, PID{Invalid}, uncompressed)")


def sent(ns: int, corr: int) -> tuple[int, str, str]:
    return (ns, "SEND", BROKER + f"Sent ProduceRequest (v10, 212 bytes @ 0, CorrId {corr})")


def answered(ns: int, corr: int, rtt_ms: float) -> tuple[int, str, str]:
    return (ns, "RECV", BROKER + f"Received ProduceResponse (v10, 45 bytes, CorrId {corr}, "
            f"rtt {rtt_ms:.2f}ms)")


def messages(trace: ClientTrace, at_ms: list[float], slots: list[int]) -> None:
    times = [round(t * MS) for t in at_ms]
    trace.add_messages(slots, [None] * len(slots), [bytes(100)] * len(slots), times, None)
    trace.add_appends(0, times, [10_000] * len(slots))


def test_requests_are_read_with_their_messages_pass_times_and_responses() -> None:
    trace = ClientTrace("librdkafka", "2", ["t"], [4], clock_ms=0, clock_ns=0)
    # partition 0 at 0 and 1 ms, partition 1 at 2 ms, partition 0 again at 9 ms
    messages(trace, [0.0, 1.0, 2.0, 9.0], [0, 0, 1, 0])
    lines = [
        # the log callbacks ran late (in the thread that polls), at 9.5 ms and after
        built(int(9.5 * MS), 0, 2), sent(int(9.5 * MS), 5),
        built(int(9.6 * MS), 1, 1), sent(int(9.6 * MS), 6),
        answered(int(9.7 * MS), 5, 0.5), answered(int(9.7 * MS), 6, 0.75),
        built(int(15 * MS), 0, 1), sent(int(15 * MS), 7), answered(16 * MS, 7, 0.2),
    ]
    add_requests(trace, lines, linger_ms=5, batch_messages=10_000, in_flight=5)
    first, second, third = trace.requests
    assert [(r.parts[0].slot, r.parts[0].records) for r in trace.requests] == \
        [(0, 2), (1, 1), (0, 1)]
    # the pass times come from librdkafka's rule: partition 0 was sendable at 5 ms (its
    # first message + linger.ms), partition 1 at 7 ms, a pass of its own
    assert first.ready_ns == 5 * MS + ENQUEUE_NS and second.ready_ns == 7 * MS + ENQUEUE_NS
    assert first.sender_pass != second.sender_pass
    # the message of 9 ms was not carried at 5 ms: sendable again at 14 ms
    assert third.ready_ns == 14 * MS + ENQUEUE_NS
    # responses: when it left plus librdkafka's own round trip
    assert trace.responses[first.correlation] == first.sent_ns + MS // 2 == first.ready_ns + MS // 2
    assert trace.responses[second.correlation] == second.ready_ns + 750_000
    assert trace.timing["log_callback_after_pass_max_ms"] == (4.5 * MS - ENQUEUE_NS) / 1e6
    assert trace.timing["built_before_rule"] == 0


def test_a_request_built_before_the_rule_allowed_is_counted() -> None:
    # librdkafka logged partition 0's request at 4 ms, before 5 ms linger had passed: the
    # rule the trace assumes is not the client's (here: it ran with a shorter linger)
    trace = ClientTrace("librdkafka", "2", ["t"], [1], clock_ms=0, clock_ns=0)
    messages(trace, [0.0], [0])
    add_requests(trace, [built(4 * MS, 0, 1), sent(4 * MS, 1)], linger_ms=5,
                 batch_messages=10_000, in_flight=5)
    assert trace.timing["built_before_rule"] == 1
    assert trace.requests[0].ready_ns == 4 * MS  # no later than the log says


def test_a_partition_sendable_when_the_pass_looked_joins_it_and_in_flight_holds_back() -> None:
    trace = ClientTrace("librdkafka", "2", ["t"], [3], clock_ms=0, clock_ns=0)
    messages(trace, [0.0, 0.5, 0.8], [0, 1, 2])
    # the thread woke late (at 6 ms) and built partitions 2, 0, 1 in its round robin; one
    # request in flight at most: each leaves when the previous one is answered
    lines = [built(9 * MS, 2, 1), built(9 * MS, 0, 1), built(9 * MS, 1, 1),
             sent(9 * MS, 1), sent(9 * MS, 2), sent(9 * MS, 3),
             answered(9 * MS, 1, 1.0), answered(9 * MS, 2, 1.0), answered(9 * MS, 3, 1.0)]
    add_requests(trace, lines, linger_ms=5, batch_messages=10_000, in_flight=1)
    first, second, third = trace.requests
    assert first.ready_ns == round(5.8 * MS) + ENQUEUE_NS  # partition 2's message + linger
    # partition 0 was sendable then: the same pass, but it left once request 1 was answered
    assert second.sender_pass == first.sender_pass
    assert second.sent_ns == first.sent_ns + MS
    # partition 1 could be built only once request 2 had left (one unsent request at most)
    assert third.ready_ns == second.sent_ns and third.sent_ns == second.sent_ns + MS
    replay_order(trace)
    assert [r.index for r in trace.requests] == [0, 1, 2]


def test_an_idempotent_resend_is_marked_a_retry_and_the_flush_sends_at_once() -> None:
    trace = ClientTrace("librdkafka", "2", ["t"], [1], clock_ms=0, clock_ns=0)
    messages(trace, [0.0, 1.0], [0, 0])
    trace.flush_ns = 2 * MS
    lines = [built(3 * MS, 0, 2, msgid=1), sent(3 * MS, 1),
             built(9 * MS, 0, 2, msgid=1), sent(9 * MS, 2)]
    add_requests(trace, lines, linger_ms=100, batch_messages=10_000, in_flight=5)
    first, again = trace.requests
    assert first.ready_ns == 2 * MS  # flushing: no linger
    assert not first.retry and again.retry and again.parts[0].records == 2


def test_the_tap_keeps_request_lines_and_forwards_warnings(caplog) -> None:
    forward = logging.getLogger("test.librdkafka.tap")
    tap = LogTap(forward)
    tap.log(logging.DEBUG, "%s [%s] %s", "PRODUCE", "rdkafka#producer-1", "x")
    tap.log(logging.DEBUG, "%s [%s] %s", "METADATA", "rdkafka#producer-1", "y")
    with caplog.at_level(logging.WARNING, logger="test.librdkafka.tap"):
        tap.log(logging.WARNING, "%s [%s] %s", "FAIL", "rdkafka#producer-1", "down")
    assert [(f, t) for _, f, t in tap.lines] == [("PRODUCE", "x")]
    assert "down" in caplog.text


def test_the_replay_settings_are_what_librdkafka_ran_with() -> None:
    idempotent = {"enable.idempotence": "true", "acks": "all"}
    assert client_in_flight(idempotent) == 5
    settings = trace_settings(idempotent, 5.0)
    # librdkafka's defaults, and one request more than it keeps in flight (its output queue)
    assert settings["batch.size"] == "1000000"
    assert settings["max.in.flight.requests.per.connection"] == "6"
    assert client_in_flight({"enable.idempotence": "false"}) == 1_000_000
    assert trace_settings({}, 100.0)["linger.ms"] == "100"


def test_a_partition_past_its_cap_is_built_no_earlier_than_the_answer_that_frees_it() -> None:
    # idempotence: partition 0's first request carries 6 messages, answered at 20 ms; its
    # next message (8 ms) was sendable by linger at 13 ms, but librdkafka builds it only
    # once fewer than 5 of the partition's messages are in flight
    trace = ClientTrace("librdkafka", "2", ["t"], [1], clock_ms=0, clock_ns=0)
    messages(trace, [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 8.0], [0] * 7)
    lines = [built(6 * MS, 0, 6), sent(6 * MS, 1), answered(21 * MS, 1, 15.0),
             built(21 * MS, 0, 1), sent(21 * MS, 2), answered(22 * MS, 2, 0.5)]
    add_requests(trace, lines, linger_ms=5, batch_messages=10_000, in_flight=5,
                 partition_cap=5)
    first, second = trace.requests
    freed = trace.responses[first.correlation]
    assert freed == first.sent_ns + 15 * MS == 20 * MS + ENQUEUE_NS
    assert second.ready_ns == freed and second.sender_pass != first.sender_pass
    # without idempotence it is timed by linger alone
    trace.requests, trace.responses = [], {}
    add_requests(trace, lines, linger_ms=5, batch_messages=10_000, in_flight=5)
    assert trace.requests[1].ready_ns == 13 * MS + ENQUEUE_NS
