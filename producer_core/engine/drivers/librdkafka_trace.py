"""librdkafka's own account of its Produce requests, as a `ClientTrace` (issue 42), for a
trace replay of mode `partition`.

librdkafka does not report its requests to the application, but its debug log does
(`debug=msg,protocol`; read in librdkafka 2.15's sources, run by confluent-kafka 2.16.1's
librdkafka 2.16.0):

- `PRODUCE` "<topic> [<partition>]: Produce MessageSet with N message(s) (... MsgId M,
  BaseSeq S ...)": the broker thread built a ProduceRequest for that partition
  (`rd_kafka_msgset_writer_finish`). librdkafka writes one partition per request. `MsgId`
  is the partition's sequence number of its first message (1, 2, ... in produce() order)
  with idempotence, 0 without: then the request's messages are the partition's next N.
- `SEND` "Sent ProduceRequest (..., CorrId C)": the request left, in the order the broker
  thread built them (its output queue is FIFO).
- `RECV` "Received ProduceResponse (..., CorrId C, rtt R ms)": the answer, R after it left.

**When**, the log does not say exactly. With a `logger` confluent-kafka puts librdkafka's
log on its main queue, and the callback runs in the thread that calls `poll()` (kbatch's
reports thread), once that thread wakes and holds the GIL: on a busy machine milliseconds
after the broker thread logged (`timing` of the trace holds the measured spread). So the
callback's time is only an upper bound of the broker thread's decision. The time the
replay uses for a request is the broker thread's own `now`, recovered from what is exact:
librdkafka's rule (`rd_kafka_msgq_allow_wakeup_at`: a partition's queue is sendable once
its first message has waited `linger.ms` since its produce(), on a microsecond clock, or
holds `batch.num.messages` / `batch.size`, or at once while flushing) gives the earliest
instant the request could be built; the partition's last carried message must have been
produced before it; and it was built before the callback ran and before the partition's
next message (not carried) was produced. Requests the broker thread built back to back
(its output queue holds one unsent request at a time, `queue.buffering.backpressure.
threshold=1`, so each wake-up builds partition after partition) form one pass.

Pure parsing and arithmetic: no clock read here (the tap reads one, `time.monotonic_ns`,
the driver's clock for the appends).
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from typing import Any

from producer_core.engine.modes.partition import IDEMPOTENT_MAX_INFLIGHT_MESSAGES
from producer_core.results.client_trace import ClientTrace, TracedPart, TracedRequest

DEBUG_CONTEXTS = "msg,protocol"
"""librdkafka's debug contexts that log each request built, sent and answered."""
ENQUEUE_NS = 1_000
LIBRDKAFKA_LINGER_MS = 5.0
LIBRDKAFKA_BATCH_MESSAGES = 10_000
LIBRDKAFKA_BATCH_BYTES = 1_000_000
LIBRDKAFKA_IN_FLIGHT = 1_000_000
IDEMPOTENT_IN_FLIGHT = 5
KBATCH_MAX_IN_FLIGHT = 1000
"""librdkafka's defaults (CONFIGURATION.md); with idempotence it caps in-flight at 5."""


def _idempotent(config: dict[str, Any]) -> bool:
    return str(config.get("enable.idempotence", "false")).lower() == "true"


def client_in_flight(config: dict[str, Any]) -> int:
    """librdkafka's limit of requests in flight per connection for this configuration."""
    in_flight = int(config.get("max.in.flight.requests.per.connection", LIBRDKAFKA_IN_FLIGHT))
    if _idempotent(config):
        in_flight = min(in_flight, IDEMPOTENT_IN_FLIGHT)
    return in_flight


def partition_cap(config: dict[str, Any]) -> int | None:
    """librdkafka's cap of a partition's messages in flight (with idempotence), or None."""
    return IDEMPOTENT_MAX_INFLIGHT_MESSAGES if _idempotent(config) else None


def trace_settings(config: dict[str, Any], linger_ms: float) -> dict[str, str]:
    """What librdkafka ran with, under kbatch's names: the settings a replay of mode
    partition takes (`trace_replay.settings_from_trace`), librdkafka's defaults filled in
    where kbatch passed nothing (kbatch's defaults are Java's)."""
    # its limit holds requests back at sending, not at building: with its output queue
    # one request deep (queue.buffering.backpressure.threshold=1) it builds one more
    in_flight = min(client_in_flight(config) + 1, KBATCH_MAX_IN_FLIGHT)
    settings = {"linger.ms": f"{linger_ms:g}",
                "batch.size": str(config.get("batch.size", LIBRDKAFKA_BATCH_BYTES)),
                "max.in.flight.requests.per.connection": str(in_flight),
                # kbatch caps an idempotent producer's requests in flight at 5, so the
                # connection's limit above goes without idempotence; what idempotence
                # changes in librdkafka's decisions is each partition's cap of messages
                # in flight (`rd_kafka_toppar_producer_serve`), which mode partition takes
                "enable.idempotence": "false",
                "partition.max.inflight.messages": str(partition_cap(config) or 0)}
    if "acks" in config:
        settings["acks"] = str(config["acks"])
    return settings

def replay_settings(settings: dict[str, str]) -> dict[str, str]:
    """A trace's settings for a replay; traces recorded before they named the partition
    cap get it from the connection's limit: 6 (idempotence's 5, plus the request built
    ahead) was an idempotent client's, kbatch's default."""
    if "partition.max.inflight.messages" in settings:
        return settings
    in_flight = settings.get("max.in.flight.requests.per.connection")
    idempotent = in_flight == str(IDEMPOTENT_IN_FLIGHT + 1)
    return {**settings, "partition.max.inflight.messages":
            str(IDEMPOTENT_MAX_INFLIGHT_MESSAGES if idempotent else 0)}


_BROKER = r"(?P<name>\S+)/(?P<node>-?\d+): "
_PRODUCE = re.compile(
    _BROKER + r"(?P<topic>\S+) \[(?P<partition>\d+)\]: Produce MessageSet with "
    r"(?P<count>\d+) message\(s\) \((?P<bytes>\d+) bytes, ApiVersion \d+, MsgVersion \d+, "
    r"MsgId (?P<msgid>\d+)")
_SENT = re.compile(_BROKER + r"Sent ProduceRequest \(.*CorrId (?P<corr>\d+)\)")
_RECEIVED = re.compile(_BROKER + r"Received ProduceResponse \(.*CorrId (?P<corr>\d+), "
                       r"rtt (?P<rtt>[\d.]+)ms\)")


class LogTap:
    """confluent-kafka's `logger`: keeps librdkafka's request lines with the time the
    callback ran (monotonic ns); passes everything above debug level on to `forward`."""

    FACILITIES = frozenset({"PRODUCE", "SEND", "RECV"})

    def __init__(self, forward: logging.Logger) -> None:
        self.forward = forward
        self.lines: list[tuple[int, str, str]] = []

    def log(self, level: int, fmt: str, *args: Any) -> None:
        if level > logging.DEBUG:
            self.forward.log(level, fmt, *args)
            return
        facility = str(args[0]) if args else ""
        if facility in self.FACILITIES:
            self.lines.append((time.monotonic_ns(), facility, str(args[-1])))


@dataclass
class _Built:
    """One request as parsed from its PRODUCE line."""

    log_ns: int
    node: int
    slot: int
    count: int
    msgid: int
    corr: int = -1
    rtt_ns: int = -1
    sent_ns: int = -1
    """When it left, as the trace reconstructs it (`add_requests`)."""


def _parse(lines: list[tuple[int, str, str]], slot_of: dict[tuple[str, int], int]
           ) -> list[_Built]:
    built: list[_Built] = []
    unsent: dict[int, list[_Built]] = {}  # node -> built, not yet seen sent (FIFO)
    by_corr: dict[tuple[int, int], _Built] = {}
    for ns, facility, text in lines:
        if facility == "PRODUCE":
            match = _PRODUCE.search(text)
            if match is None:
                continue
            slot = slot_of.get((match["topic"], int(match["partition"])))
            if slot is None:
                continue
            request = _Built(ns, int(match["node"]), slot, int(match["count"]),
                             int(match["msgid"]))
            built.append(request)
            unsent.setdefault(request.node, []).append(request)
        elif facility == "SEND":
            match = _SENT.search(text)
            queue = unsent.get(int(match["node"])) if match else None
            if match and queue:
                request = queue.pop(0)
                request.corr = int(match["corr"])
                by_corr[(request.node, request.corr)] = request
        elif facility == "RECV":
            match = _RECEIVED.search(text)
            if match:
                answered = by_corr.get((int(match["node"]), int(match["corr"])))
                if answered is not None:
                    answered.rtt_ns = round(float(match["rtt"]) * 1e6)
    return built


@dataclass
class _Bounds:
    """When a request can have been built: not before librdkafka's rule made its partition
    sendable (`rule`), nor before its carried messages were produced (`low`, at least
    `rule`); not after its log callback ran, nor after the partition's next message (not
    carried) was produced (`high`)."""

    request: _Built
    slot: int
    records: int
    retry: bool
    rule: int
    low: int
    high: int


def _bounds(trace: ClientTrace, built: list[_Built], linger_ms: float,
            batch_messages: int) -> list[_Bounds]:
    per_slot: dict[int, list[int]] = {}
    for index, slot in enumerate(trace.slots):
        per_slot.setdefault(slot, []).append(index)
    taken = dict.fromkeys(per_slot, 0)
    end_ns = [s + t for s, t in zip(trace.start_ns, trace.took_ns, strict=True)]
    linger_ns = round(linger_ms * 1e6)
    flush_ns = trace.flush_ns
    out: list[_Bounds] = []
    for request in built:
        messages = per_slot.get(request.slot, [])
        first = taken.get(request.slot, 0)
        retry = False
        if request.msgid > 0 and request.msgid - 1 < first:  # idempotent: a resend
            retry, first = True, request.msgid - 1
        carried = messages[first:first + request.count]
        if not retry:
            taken[request.slot] = first + len(carried)
        rule = low = request.log_ns
        if carried:
            last = trace.start_ns[carried[-1]]
            # (its produce() time is inside the call: a microsecond after the call began
            # keeps the replay's float seconds from reading the deadline a hair early)
            rule = trace.start_ns[carried[0]] + linger_ns + ENQUEUE_NS
            if len(carried) >= batch_messages:
                rule = last
            if flush_ns is not None:
                rule = min(rule, max(flush_ns, last))
            low = max(rule, last)
        after = first + len(carried)
        high = request.log_ns
        if not retry and after < len(messages):
            high = min(high, end_ns[messages[after]] - 1)
        out.append(_Bounds(request, request.slot, len(carried), retry, rule, low, high))
    return out


def add_requests(trace: ClientTrace, lines: list[tuple[int, str, str]], linger_ms: float,
                 batch_messages: int, in_flight: int, partition_cap: int | None = None
                 ) -> None:
    """Fill `trace.requests` and `trace.responses` from the tap's lines (see the module
    docstring); the trace's messages and appends are already recorded, and `flush_ns`.
    `in_flight`: librdkafka's limit of requests sent and not answered, per connection.

    A broker thread's requests, in the order it built them, form passes: a request joins
    the pass before it if its partition was sendable by the rule when that pass looked
    and the previous request left at once (it was not held for an in-flight slot). The
    pass's time is the latest instant its requests' bounds allow (`_Bounds`: a thread that
    woke late built them all after their last carried message). `partition_cap`: with
    idempotence, a partition builds only while fewer of its messages than this are in
    flight, so a request is not built before the answer that brought its partition under
    it (`rd_kafka_toppar_producer_serve`)."""
    firsts = trace.first_slots()
    slot_of = {(topic, p): firsts[t] + p for t, (topic, count) in
               enumerate(zip(trace.topics, trace.partitions, strict=True))
               for p in range(count)}
    bounds = _bounds(trace, _parse(lines, slot_of), linger_ms, batch_messages)
    nodes: dict[int, _Node] = {}
    passes: list[list[int]] = []  # request indexes
    times: list[int] = []
    history: dict[int, list[_Built]] = {}  # slot -> its requests so far
    for index, bound in enumerate(bounds):
        node = nodes.setdefault(bound.request.node, _Node())
        current = node.current
        earlier = history.setdefault(bound.slot, [])
        base_low = bound.low
        cap_messages = 0 if partition_cap is None or bound.retry else partition_cap
        if cap_messages:
            bound.low = max(base_low, _released(earlier, cap_messages))
        earlier.append(bound.request)
        if current >= 0:
            time_ns, cap = times[current], node.cap
            joins = (not node.held and bound.rule <= time_ns
                     and max(time_ns, bound.low) <= min(cap, bound.high))
            if joins:
                passes[current].append(index)
                times[current] = max(time_ns, bound.low)
                node.cap = min(cap, bound.high)
                node.held = _held(node, times[current], in_flight)
                node.answered.append(1 << 62)  # (until the pass is timed)
                continue
            _close(node, passes[current], times[current], bounds, in_flight)
            if cap_messages:  # the closed pass's answers are known now
                bound.low = max(base_low, _released(earlier[:-1], cap_messages))
        # a new pass: not before the last one, nor before the last request left
        at = max(bound.low, node.left_ns, times[current] if current >= 0 else 0)
        at = max(min(at, bound.high), times[current] if current >= 0 else 0)
        node.current, node.cap = len(passes), bound.high
        passes.append([index])
        times.append(at)
        node.held = _held(node, at, in_flight)
        node.answered.append(1 << 62)
    for node in nodes.values():
        if node.current >= 0:
            _close(node, passes[node.current], times[node.current], bounds, in_flight)
    delays: list[int] = []
    for sender_pass, (members, at) in enumerate(zip(passes, times, strict=True)):
        for index in members:
            bound = bounds[index]
            delays.append(bound.request.log_ns - at)
            # (librdkafka numbers requests per connection: the trace keys them by build
            # order)
            trace.requests.append(TracedRequest(
                index, bound.request.sent_ns, bound.request.node, index, -1, at, sender_pass,
                (TracedPart(bound.slot, bound.records, bound.retry),)))
            if bound.request.rtt_ns >= 0:
                trace.responses[index] = bound.request.sent_ns + bound.request.rtt_ns
    trace.requests.sort(key=lambda r: r.index)
    # the rule checked against what librdkafka did: a request it provably built before the
    # rule allowed (its callback, or the partition's next message, came first)
    early = sum(1 for bound in bounds if bound.high < bound.rule and not bound.retry)
    if delays:
        delays.sort()
        trace.timing = {
            "built_before_rule": early,
            "log_callback_after_pass_p50_ms": delays[len(delays) // 2] / 1e6,
            "log_callback_after_pass_p99_ms":
                delays[min(len(delays) - 1, int(0.99 * len(delays)))] / 1e6,
            "log_callback_after_pass_max_ms": delays[-1] / 1e6}


UNKNOWN = 1 << 62
"""A time not known yet (a request of the open pass has not been timed)."""


def _released(earlier: list[_Built], cap: int) -> int:
    """The earliest time the partition of `earlier` (its requests so far, oldest first)
    had fewer than `cap` messages in flight: the answer that brought it under the cap
    (UNKNOWN while that request's pass is open; 0: under the cap from the start)."""
    recent = earlier[-(cap + 1):]  # each request carries at least one message
    answers = sorted((r.sent_ns + r.rtt_ns if r.sent_ns >= 0 and r.rtt_ns >= 0 else UNKNOWN,
                      r.count) for r in recent)
    in_flight = sum(count for _, count in answers)
    at = 0
    for answer, count in answers:
        if in_flight < cap:
            break
        in_flight -= count
        at = answer
    return at


def _held(node: _Node, at: int, in_flight: int) -> bool:
    """Would a request built at `at` wait for an in-flight slot?"""
    answered = node.answered
    return len(answered) >= in_flight and answered[-in_flight] > at


def _close(node: _Node, members: list[int], at: int, bounds: list[_Bounds],
           in_flight: int) -> None:
    """Time the requests of a finished pass: each left at `at`, or when a response brought
    the requests in flight under the limit (responses come in order on a connection)."""
    answered = node.answered
    del answered[len(answered) - len(members):]
    for index in members:
        request = bounds[index].request
        sent = at if len(answered) < in_flight else max(at, answered[-in_flight])
        request.sent_ns = sent
        node.left_ns = sent
        answered.append(sent + request.rtt_ns if request.rtt_ns >= 0 else 1 << 62)
    node.current = -1


@dataclass
class _Node:
    """A broker thread's state while its requests are timed."""

    current: int = -1
    """Its open pass (-1: none)."""
    cap: int = 0
    """The latest time its open pass can have looked."""
    held: bool = False
    """The open pass's last request waited for an in-flight slot."""
    left_ns: int = 0
    """When its last request left the output queue."""
    answered: list[int] = field(default_factory=list)
    """When each request sent so far was answered, in send order."""


def replay_order(trace: ClientTrace) -> None:
    """Requests in the order of their passes (the log interleaves the brokers' threads)."""
    order = sorted(trace.requests, key=lambda r: (r.ready_ns, r.index))
    trace.requests = [TracedRequest(i, r.sent_ns, r.broker, r.correlation, r.created_ms,
                                    r.ready_ns, r.sender_pass, r.parts)
                      for i, r in enumerate(order)]

