"""The trace replay (issue 42): an emulation judged request by request against a client's
trace, in synthetic time, so the verdict does not depend on how fast a machine ran.

The synthetic client below is written from the Java producer's rules, not from mode java's
code: time in whole milliseconds, a partition's batch sendable once `now_ms - created_ms >=
linger.ms`, a ready node drained of every partition with data. A real trace of the Java
producer (recorded once, tests/unit/fixtures) is replayed too.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from producer_core.analysis.compare import parse_mode_configs
from producer_core.analysis.trace_replay import ReplayReport, clock_shift_ns, free_run, replay
from producer_core.engine.core.accumulator import BATCH_FILLED, Accumulator, TopicPartition
from producer_core.results.client_trace import ClientTrace, TracedPart, TracedRequest
from producer_core.workload.workload import Workload

FIXTURE = Path(__file__).parent / "fixtures" / "kafka_java_trace.json.gz"
MS = 1_000_000


def java_settings(linger_ms: int) -> object:
    return parse_mode_configs(["java"], [("acks", "all")], [], linger_ms=linger_ms)[0].settings


def synthetic_trace(partitions: int = 8, rate: int = 1000, messages: int = 600,
                    linger_ms: int = 5, wake_delay_ns: int = 200_000,
                    rtt_ns: int = 400_000, clock_ms: int = 0) -> ClientTrace:
    """A Java-like client on one node: appends at `rate`, round robin; its Sender wakes
    `wake_delay_ns` after the first deadline and drains every partition with data. Its
    millisecond clock reads `clock_ms` at nanosecond 0."""
    trace = ClientTrace("synthetic", "1", ["t"], [partitions], clock_ms=clock_ms, clock_ns=0)
    every_ns = 1_000_000_000 // rate
    times = [10 * MS + i * every_ns + 137_000 for i in range(messages)]
    trace.add_messages([i % partitions for i in range(messages)], [None] * messages,
                       [bytes(100)] * messages, times, None)
    trace.add_appends(0, times, [20_000] * messages)
    queued: dict[int, list[int]] = {}  # slot -> append times of its open batch
    requests: list[TracedRequest] = []
    pending = 0
    sender_pass = 0
    while pending < messages or queued:
        deadlines = [times_[0] // MS * MS + linger_ms * MS for times_ in queued.values()]
        wake = min(deadlines) + wake_delay_ns if deadlines else None
        if pending < messages and (wake is None or times[pending] + 20_000 < wake):
            queued.setdefault(pending % partitions, []).append(times[pending])
            pending += 1
            continue
        assert wake is not None
        now_ms = wake // MS
        assert any(now_ms - t[0] // MS >= linger_ms for t in queued.values())
        parts = tuple(TracedPart(slot, len(queued[slot])) for slot in sorted(queued))
        requests.append(TracedRequest(len(requests), wake + 30_000, 1, len(requests),
                                      clock_ms + now_ms, wake, sender_pass, parts))
        trace.responses[len(requests) - 1] = wake + 30_000 + rtt_ns
        sender_pass += 1
        queued = {}
    trace.requests = requests
    trace.flush_ns = times[-1] + 50_000  # the flush came after the last request's pass
    return trace


def librdkafka_trace(partitions: int = 8, rate: int = 1000, messages: int = 600,
                     linger_ms: int = 5, wake_delay_ns: int = 150_000) -> ClientTrace:
    """A librdkafka-like client on one node: a partition's queue is sendable once its first
    message has waited linger.ms (microseconds, no millisecond clock); its broker thread
    wakes `wake_delay_ns` after the first deadline and writes one request per sendable
    partition, walking them from a rotating start."""
    trace = ClientTrace("synthetic-librdkafka", "1", ["t"], [partitions], clock_ms=0,
                        clock_ns=0)
    every_ns = 1_000_000_000 // rate
    times = [10 * MS + i * every_ns + 137_000 for i in range(messages)]
    trace.add_messages([i % partitions for i in range(messages)], [None] * messages,
                       [bytes(100)] * messages, times, None)
    trace.add_appends(0, times, [20_000] * messages)
    queued: dict[int, list[int]] = {}
    pending = sender_pass = start = 0
    linger_ns = linger_ms * MS
    while pending < messages or queued:
        wake = min(t[0] for t in queued.values()) + linger_ns + wake_delay_ns \
            if queued else None
        if pending < messages and (wake is None or times[pending] + 20_000 < wake):
            queued.setdefault(pending % partitions, []).append(times[pending])
            pending += 1
            continue
        assert wake is not None
        ready = [s for s in queued if queued[s][0] + linger_ns <= wake]
        ready.sort(key=lambda s: (s - start) % partitions)
        start = (start + 1) % partitions
        for slot in ready:
            index = len(trace.requests)
            trace.requests.append(TracedRequest(index, wake + 10_000 * (1 + len(ready)), 1,
                                                index, -1, wake, sender_pass,
                                                (TracedPart(slot, len(queued[slot])),)))
            trace.responses[index] = wake + 500_000
            del queued[slot]
        sender_pass += 1
    trace.flush_ns = times[-1] + 50_000
    return trace


@pytest.mark.parametrize("wake_delay_ns", [150_000, 2_500_000])
def test_mode_partition_with_one_partition_a_request_makes_librdkafkas_decisions(
        wake_delay_ns: int) -> None:
    # a late broker thread finds several partitions sendable and writes them in its order
    trace = librdkafka_trace(wake_delay_ns=wake_delay_ns)
    passes = Counter(r.sender_pass for r in trace.requests)
    assert (max(passes.values()) > 1) == (wake_delay_ns > 1_000_000)
    settings = parse_mode_configs(["partition"], [("acks", "all"),
                                                  ("produce.request.max.partitions", "1")],
                                  [], linger_ms=5)[0].settings
    report = replay(trace, "partition", settings)
    assert report.compared == len(trace.requests) > 300
    assert report.share_identical == 1.0, "\n".join(report.lines())
    # a per-broker drain (mode java) takes every partition with data instead
    java = replay(trace, "java", java_settings(5))
    assert java.share_identical < 0.5


def test_a_client_that_drains_like_java_is_matched_request_by_request() -> None:
    trace = synthetic_trace()
    report = replay(trace, "java", java_settings(5))
    assert report.compared == len(trace.requests) > 50
    assert report.identical == report.compared and report.share_identical == 1.0
    assert report.emulated_requests == len(trace.requests)
    assert report.divergences == [] and report.rebuilds == 0
    # the client sent each request its Sender's wake-up after the emulation's ready time
    delay = report.delay_percentiles()
    assert delay is not None and delay["p1_ms"] == pytest.approx(0.2, abs=0.01)


def test_a_trace_whose_millisecond_clock_crosses_the_replays_wrap_is_read_alike() -> None:
    # 99,999,700 ms: the replay's seconds (the clock modulo 100,000 ms) pass 100 s mid-trace
    trace = synthetic_trace(clock_ms=99_999_700)
    report = replay(trace, "java", java_settings(5))
    assert report.share_identical == 1.0 and report.compared > 50


def test_a_divergence_names_both_requests_and_does_not_cascade() -> None:
    trace = synthetic_trace()
    k = 20
    first, second = trace.requests[k], trace.requests[k + 1]
    moved = first.parts[0]  # the client kept one partition back for the next request
    trace.requests[k] = dataclasses.replace(first, parts=first.parts[1:])
    merged = {p.slot: p.records for p in second.parts}
    merged[moved.slot] = merged.get(moved.slot, 0) + moved.records
    trace.requests[k + 1] = dataclasses.replace(
        second, parts=tuple(TracedPart(s, n) for s, n in sorted(merged.items())))
    report = replay(trace, "java", java_settings(5))
    assert report.compared - report.identical == 1
    divergence = report.first_divergence
    assert divergence is not None
    assert (divergence.request, divergence.kind) == (k, "partitions")
    assert divergence.real is not None and divergence.emulated is not None
    assert moved.slot in {s for s, _ in divergence.emulated.parts}
    assert moved.slot not in {s for s, _ in divergence.real.parts}
    text = "\n".join(report.lines())
    assert f"first divergence: request {k}" in text and "t[" in text


def test_a_stricter_linger_does_not_send_and_a_looser_one_sends_early() -> None:
    trace = synthetic_trace()
    stricter = replay(trace, "java", java_settings(6))
    assert stricter.identical < stricter.compared / 2
    assert stricter.by_kind["not_sent"] > 0
    looser = replay(trace, "java", java_settings(4))
    # the same requests, but each one a whole millisecond after the looser rule's ready time
    assert looser.share_identical == 1.0
    delay = looser.delay_percentiles()
    assert delay is not None and delay["p1_ms"] >= 1.0


def test_a_request_with_a_retried_batch_is_left_out() -> None:
    trace = synthetic_trace()
    k = 10
    request = trace.requests[k]
    retried = TracedPart(trace.requests[k - 1].parts[0].slot,
                         trace.requests[k - 1].parts[0].records, retry=True)
    trace.requests[k] = dataclasses.replace(request, parts=(*request.parts, retried))
    report = replay(trace, "java", java_settings(5))
    assert report.retried == 1
    assert report.compared == len(trace.requests) - 1 == report.identical


def test_a_client_out_of_memory_sends_before_linger_and_the_replay_knows_why() -> None:
    # one partition, linger 50 ms: the client's Sender drains at 20 ms because its send()
    # of message 20 waited for buffer.memory from 19.5 to 20.5 ms (the pool was empty)
    trace = ClientTrace("synthetic", "1", ["t"], [1], clock_ms=0, clock_ns=0)
    times = [i * MS for i in range(21)]
    trace.add_messages([0] * 21, [None] * 21, [bytes(100)] * 21, times, None)
    took = [10_000] * 21
    took[20] = MS // 2
    trace.add_appends(0, [*times[:20], times[20]], took, [0] * 20 + [MS // 2])
    trace.start_ns[20] = 20 * MS  # (its send() began at 20 ms and ended at 20.5 ms)
    trace.requests = [TracedRequest(0, 20 * MS + 300_000, 1, 0, 20, 20 * MS + 200_000, 0,
                                    (TracedPart(0, 20),))]
    trace.responses[0] = 21 * MS
    report = replay(trace, "java", java_settings(50))
    assert report.share_identical == 1.0, "\n".join(report.lines())
    # without the client's own wait times, a send() of 0.5 ms still reads as a wait
    trace.waited_ns = []
    assert replay(trace, "java", java_settings(50)).share_identical == 1.0
    # and one that did not wait leaves the emulation nothing to send
    trace.took_ns[20] = 10_000
    stricter = replay(trace, "java", java_settings(50))
    assert stricter.by_kind["not_sent"] == 1


def test_a_late_sender_batches_more_and_the_free_run_shows_it() -> None:
    # the same decisions whatever the Sender's delay; only the timing moves the totals
    prompt = synthetic_trace(wake_delay_ns=100_000)
    late = synthetic_trace(wake_delay_ns=3_000_000)
    assert len(late.requests) < len(prompt.requests)
    assert replay(late, "java", java_settings(5)).share_identical == 1.0
    on_time = free_run(prompt, "java", java_settings(5))
    from_late = free_run(late, "java", java_settings(5))
    # with its own timing the emulation sends the same from either trace (same appends):
    # the whole-run difference is the client's Sender delay, not a decision
    assert on_time.requests == from_late.requests and on_time.records == 600
    assert from_late.difference > on_time.difference + 0.2
    assert "+" in from_late.line()


def test_an_incomplete_trace_is_refused() -> None:
    trace = synthetic_trace(messages=50)
    trace.start_ns = trace.start_ns[:40]
    trace.took_ns = trace.took_ns[:40]
    with pytest.raises(ValueError, match="50 messages .* 40 send"):
        replay(trace, "java", java_settings(5))


def test_a_trace_survives_json(tmp_path: Path) -> None:
    trace = synthetic_trace(messages=50)
    trace.headers = [[("h", 3)]]
    trace.header_index = [0] * 50
    path = tmp_path / "trace.json"
    trace.write(path)
    again = ClientTrace.read(path)
    assert again == trace
    with pytest.raises(ValueError, match="not a kbatch client trace"):
        ClientTrace.from_dict({**json.loads(path.read_text()), "format": 99})


def test_the_java_emulation_makes_the_real_java_producers_decisions() -> None:
    """A trace of kafka-clients 4.3.1 on the embedded broker (64 partitions, 2,000 msg/s,
    linger.ms=5, 6 s; recorded with benchmarks/fidelity.py --save-trace)."""
    with gzip.open(FIXTURE, "rt") as f:
        trace = ClientTrace.from_dict(json.load(f))
    workload = Workload(topic=trace.topics[0], partitions=trace.partitions[0], rate=2000,
                        duration_s=6, message_size=100)
    report = replay(trace, "java", java_settings(5), workload.topic_specs())
    assert report.compared > 500
    assert report.share_identical >= 0.99, "\n".join(report.lines())
    delay = report.delay_percentiles()
    assert delay is not None and 0.0 <= delay["p1_ms"] < 1.0
    # a rule one millisecond looser makes the same requests, each a millisecond too early
    looser = replay(trace, "java", java_settings(4), workload.topic_specs()).delay_percentiles()
    assert looser is not None and looser["p1_ms"] >= 1.0


LIBRDKAFKA_FIXTURE = Path(__file__).parent / "fixtures" / "librdkafka_trace.json.gz"


def partition_replay(trace: ClientTrace, **settings: str) -> ReplayReport:
    from producer_core.analysis.trace_replay import settings_from_trace

    extra = [("produce.request.max.partitions", "1"),
             *((k.replace("_", "."), v) for k, v in settings.items())]
    return replay(trace, "partition", settings_from_trace(trace, "partition", extra))


def test_the_partition_emulation_makes_the_real_librdkafkas_decisions() -> None:
    """A trace of librdkafka 2.16.0 (confluent-kafka 2.16.1) on the embedded broker (16
    partitions, 2,000 msg/s, linger.ms=5, 2 s, kbatch's defaults: idempotence, so 5
    requests in flight; recorded on a loaded machine with benchmarks/fidelity.py --pairs
    partition --replay-only --save-trace), replayed with what librdkafka ran with
    (trace.settings: its batch.size of 1 MB, its in-flight limit)."""
    with gzip.open(LIBRDKAFKA_FIXTURE, "rt") as f:
        trace = ClientTrace.from_dict(json.load(f))
    assert trace.client == "librdkafka" and trace.settings["linger.ms"] == "5"
    assert sum(r.records for r in trace.requests) == len(trace.slots) == 4000
    # librdkafka built no request before its rule allowed (as its log bounds it)
    assert trace.timing["built_before_rule"] == 0
    report = partition_replay(trace)
    assert report.compared == len(trace.requests) > 2500
    # every request one the emulation made, or held ready with the same records
    assert report.share_same_rule == 1.0, "\n".join(report.lines())
    # its slots were often full, and librdkafka's round robin chose among the ready
    # partitions: the emulation's round robin makes 93.1% of its choices (2,456 of 2,638;
    # oldest first made 84.6%). Where the rest go depends on the loops of librdkafka's
    # broker thread that built nothing (each moves its start): timing, not in the log
    assert report.share_identical >= 0.93
    assert report.by_kind["choice"] < 200
    assert report.extra_requests < 0.25 * report.compared
    # a linger a millisecond stricter sends nothing where librdkafka did; one a millisecond
    # looser sends partitions a pass before librdkafka did
    stricter = partition_replay(trace, linger_ms="6")
    assert stricter.share_same_rule < 0.3 and stricter.by_kind["not_sent"] > 1500
    looser = partition_replay(trace, linger_ms="4")
    assert looser.extra_requests > 0.6 * looser.compared
    # and mode java, which drains every partition with data at once, does not decide alike
    assert replay(trace, "java", java_settings(5)).share_identical < 0.01


def test_a_ready_partition_sent_in_another_order_is_a_choice_not_another_rule() -> None:
    # two partitions sendable at 5 and 5.5 ms; librdkafka, one request slot free, sent the
    # younger first (its round robin stood there), the older once the slot was free
    trace = ClientTrace("librdkafka", "2", ["t"], [2], clock_ms=0, clock_ns=0)
    trace.add_messages([0, 1], [None, None], [bytes(100)] * 2, [0, MS // 2], None)
    trace.add_appends(0, [0, MS // 2], [10_000, 10_000])
    trace.requests = [TracedRequest(0, 6 * MS, 1, 0, -1, 6 * MS, 0, (TracedPart(1, 1),)),
                      TracedRequest(1, 8 * MS, 1, 1, -1, 8 * MS, 1, (TracedPart(0, 1),))]
    trace.responses = {0: 8 * MS, 1: 9 * MS}
    settings = parse_mode_configs(["partition"], [
        ("acks", "all"), ("produce.request.max.partitions", "1"),
        ("max.in.flight.requests.per.connection", "1")], [], linger_ms=5)[0].settings
    report = replay(trace, "partition", settings)
    assert (report.identical, report.by_kind["choice"], report.share_same_rule) == (1, 1, 1.0)
    assert "held ready alike" in "\n".join(report.lines())
    # with a linger of 7 ms neither was sendable: not a choice
    stricter = parse_mode_configs(["partition"], [
        ("acks", "all"), ("produce.request.max.partitions", "1"),
        ("max.in.flight.requests.per.connection", "1")], [], linger_ms=7)[0].settings
    assert replay(trace, "partition", stricter).by_kind["not_sent"] == 1


def held_partition_trace() -> ClientTrace:
    """librdkafka with idempotence, one node: partition 0's first request carries 6
    messages, so partition 0 builds nothing more until that request is answered (30 ms),
    while partition 1 goes; partition 1's first message was ready at 5.9 ms but the client
    wrote it in a pass of its own, after partition 0's (a divergence: the replay rebuilds
    while partition 0's request is in flight)."""
    trace = ClientTrace("librdkafka", "2", ["t"], [2], clock_ms=0, clock_ns=0)
    times = [i * MS // 10 for i in range(6)] + [9 * MS // 10, 7 * MS, 72 * MS // 10]
    slots = [0] * 6 + [1, 0, 1]
    trace.add_messages(slots, [None] * 9, [bytes(100)] * 9, times, None)
    trace.add_appends(0, times, [10_000] * 9)

    def request(index: int, at_ns: int, slot: int, records: int) -> TracedRequest:
        return TracedRequest(index, at_ns, 1, index, -1, at_ns, index,
                             (TracedPart(slot, records),))

    trace.requests = [request(0, 6 * MS, 0, 6), request(1, 62 * MS // 10, 1, 1),
                      request(2, 123 * MS // 10, 1, 1), request(3, 30 * MS, 0, 1)]
    # one connection answers in order
    trace.responses = {0: 30 * MS, 1: 30 * MS + 1, 2: 30 * MS + 2, 3: 31 * MS}
    return trace


@pytest.mark.parametrize(("cap", "extra"), [("-1", 1), ("0", 2)])
def test_a_partition_held_by_its_messages_in_flight_is_librdkafkas_rule(
        cap: str, extra: int) -> None:
    trace = held_partition_trace()
    settings = parse_mode_configs(["partition"], [
        ("acks", "all"), ("produce.request.max.partitions", "1"),
        ("partition.max.inflight.messages", cap)], [], linger_ms=5)[0].settings
    report = replay(trace, "partition", settings)
    assert report.share_identical == 1.0
    # the cap (kbatch's default with idempotence, as librdkafka) leaves only the first
    # pass's early request of partition 1; without it, at 12.3 ms the emulation also
    # sends partition 0, whose 6 messages the rebuild must know to be still in flight
    assert report.extra_requests == extra, "\n".join(report.lines())
    assert report.rebuilds >= 1


def test_the_free_run_holds_a_partition_until_its_messages_are_answered() -> None:
    # one partition, a message a millisecond for 100 ms, 20 ms round trips: with
    # idempotence librdkafka's partition waits for each answer and batches 20 messages
    trace = ClientTrace("librdkafka", "2", ["t"], [1], clock_ms=0, clock_ns=0)
    times = [i * MS for i in range(100)]
    trace.add_messages([0] * 100, [None] * 100, [bytes(100)] * 100, times, None)
    trace.add_appends(0, times, [10_000] * 100)
    trace.requests = [TracedRequest(i, (20 * i + 5) * MS, 1, i, -1, (20 * i + 5) * MS, i,
                                    (TracedPart(0, 20),)) for i in range(5)]
    trace.responses = {i: (20 * i + 25) * MS for i in range(5)}
    requests = {}
    for cap in ("-1", "0"):
        settings = parse_mode_configs(["partition"], [
            ("acks", "all"), ("produce.request.max.partitions", "1"),
            ("partition.max.inflight.messages", cap)], [], linger_ms=5)[0].settings
        requests[cap] = free_run(trace, "partition", settings).requests
    # without the cap a request every linger (5 ms), in flight 4 at a time
    assert requests["0"] >= 15
    assert requests["-1"] <= 6


@pytest.mark.parametrize(("client", "requests"), [("librdkafka", 2), ("kafka-java", 3)])
def test_the_free_run_wakes_librdkafkas_thread_on_whole_milliseconds(
        client: str, requests: int) -> None:
    # partition 0's message at 0 is due at 5 ms; partition 1's first message at 2.5 ms
    # wakes librdkafka's thread, which then sleeps ceil(2.5) = 3 ms: it looks at 5.5 ms,
    # and partition 0's second message (5.3 ms) rides along. A thread that wakes at the
    # deadline sends partition 0 alone at 5 ms, and its second message later
    trace = ClientTrace(client, "2", ["t"], [2], clock_ms=0, clock_ns=0)
    times = [0, 25 * MS // 10, 53 * MS // 10]
    trace.add_messages([0, 1, 0], [None] * 3, [bytes(100)] * 3, times, None)
    trace.add_appends(0, times, [1_000] * 3)
    trace.flush_ns = 20 * MS
    settings = parse_mode_configs(["partition"], [
        ("acks", "all"), ("produce.request.max.partitions", "1")], [], linger_ms=5)[0].settings
    run = free_run(trace, "partition", settings)
    assert (run.requests, run.records) == (requests, 3)


def test_a_late_broker_thread_batches_more_in_the_free_run() -> None:
    # librdkafka's thread looks only when woken; a thread that runs its lateness behind
    # each wake-up carries that much more of each partition's messages per request
    trace = dataclasses.replace(librdkafka_trace(rate=20_000, messages=6000),
                                client="librdkafka")
    settings = parse_mode_configs(["partition"], [
        ("acks", "all"), ("produce.request.max.partitions", "1")], [], linger_ms=5)[0].settings
    prompt = free_run(trace, "partition", settings)
    late = free_run(trace, "partition", settings, thread_delay_s=0.001)
    assert prompt.records == late.records == 6000
    assert late.requests < prompt.requests * 0.95, (late, prompt)


def records_per_batch(batch_size: int) -> int:
    """How many 100-byte keyless records kbatch's accumulator puts in a batch (the recorded
    traces show the Java producer's batches hold as many)."""
    accumulator = Accumulator([TopicPartition("t", 0)], batch_size)
    for index in range(batch_size):
        if accumulator.append(0, index, None, bytes(100), 0.0, 0.0, 0) == BATCH_FILLED:
            return index
    raise AssertionError("the batch never filled")


def test_a_node_whose_batch_closed_after_the_sender_pass_began_is_ready_in_the_next() -> None:
    # two nodes, a partition each, linger 500 ms: only a full batch makes a node ready.
    # Slot 0's batch is closed by a send() that returned before the Sender's pass began
    # (its poll returned), slot 1's by one that returned after that but before the Sender
    # asked node 1 whether it was ready: Java's ready check saw only node 1 ready.
    held = records_per_batch(1024)
    count = 2 * (held + 1)
    trace = ClientTrace("synthetic", "1", ["t"], [2], clock_ms=0, clock_ns=0)
    times = [10 * MS + i * 20_000 for i in range(count)]
    trace.add_messages([i % 2 for i in range(count)], [None] * count, [bytes(100)] * count,
                       times, None)
    trace.add_appends(0, times, [5_000] * count)
    began, asked = times[-2] + 8_000, times[-1] + 8_000  # the closing send()s took 5 us
    trace.requests = [
        TracedRequest(0, asked + 20_000, 1, 0, 10, asked, 0, (TracedPart(0, held),), began),
        TracedRequest(1, asked + 300_000, 2, 1, 10, asked + 280_000, 1,
                      (TracedPart(1, held),), asked + 250_000)]
    trace.responses = {0: asked + 900_000, 1: asked + 1_200_000}
    settings = parse_mode_configs(["java"], [("acks", "all"), ("batch.size", "1024")], [],
                                  linger_ms=500)[0].settings
    report = replay(trace, "java", settings)
    assert (report.compared, report.identical) == (2, 2), "\n".join(report.lines())
    # without the pass's start the replay cannot tell: node 2 looks ready in the first pass
    trace.requests = [dataclasses.replace(r, pass_ns=-1) for r in trace.requests]
    untimed = replay(trace, "java", settings)
    assert untimed.extra_requests == 1, "\n".join(untimed.lines())


def test_a_send_under_way_that_began_a_new_batch_had_closed_the_full_one() -> None:
    # one partition, linger 500 ms: the record after a full batch's last one began its
    # send() before the Sender's pass (Java closed the full batch then) and ended after it
    # (it waited for the lock the drain held): the batch was ready in that pass
    held = records_per_batch(1024)
    count = held + 1
    trace = ClientTrace("synthetic", "1", ["t"], [1], clock_ms=0, clock_ns=0)
    times = [10 * MS + i * 20_000 for i in range(count)]
    trace.add_messages([0] * count, [None] * count, [bytes(100)] * count, times, None)
    took = [5_000] * held + [3 * MS]  # the last send() is under way for 3 ms
    trace.add_appends(0, times, took)
    began = times[-1] + 10_000
    trace.requests = [
        TracedRequest(0, began + 60_000, 1, 0, 10, began + 40_000, 0, (TracedPart(0, held),),
                      began),
        TracedRequest(1, 700 * MS, 1, 1, 700, 700 * MS - 10_000, 1, (TracedPart(0, 1),),
                      700 * MS - 20_000)]
    trace.responses = {0: began + 900_000, 1: 701 * MS}
    settings = parse_mode_configs(["java"], [("acks", "all"), ("batch.size", "1024")], [],
                                  linger_ms=500)[0].settings
    report = replay(trace, "java", settings)
    assert (report.compared, report.identical) == (2, 2), "\n".join(report.lines())
    # a send() that began after the pass closed nothing the pass could see
    trace.start_ns[-1] = began + 50_000
    assert replay(trace, "java", settings).by_kind["not_sent"] == 1


def test_a_clock_line_read_late_is_moved_back_by_what_the_passes_prove() -> None:
    trace = synthetic_trace()
    assert clock_shift_ns(trace) == 0  # every pass asked after its millisecond began
    late = dataclasses.replace(trace, clock_ns=trace.clock_ns + 870_000)  # read 0.87 ms late
    assert clock_shift_ns(late) == pytest.approx(-870_000 + 200_000, abs=1)
    # (the earliest pass asked 0.2 ms into its millisecond: the line is moved back just
    # enough that no pass asked before its millisecond began)
    assert replay(late, "java", java_settings(5)).share_identical == 1.0


def test_a_batch_is_created_on_the_millisecond_the_client_read() -> None:
    # the client's send() of the first message read millisecond 11 though the clock line
    # puts its start at 10.137 ms: its batch's linger (5 ms) runs out at 16, not 15
    trace = synthetic_trace(messages=1, linger_ms=5)
    trace.flush_ns = None  # (a flush would make it ready at once)
    trace.requests = [dataclasses.replace(trace.requests[0], created_ms=15)]
    assert replay(trace, "java", java_settings(5)).share_identical == 1.0
    trace.start_ms = [11]
    assert replay(trace, "java", java_settings(5)).by_kind["not_sent"] == 1
