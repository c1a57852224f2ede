"""Does an emulation make the real client's decisions? A trace replay answers it request by
request, whatever the machine's speed.

Comparing two whole runs mixes two questions: does mode `java` decide as the Java producer
does, and did the two runs see the same timing (how late the Sender thread woke on a busy
machine, which appends fell before a drain)? A replay separates them. It takes a real
client's trace (`ClientTrace`: each message's append, each Produce request with its
partitions and records, each response) and runs the emulation's policy in synthetic time,
lock-step with the real client: at each of the real client's Sender passes it gives the
policy exactly the state the real client had -- the same records appended, with their
batches created at the same instants of the client's millisecond clock, the same requests
in flight, the same flush -- tells it the Sender looks now, and compares the requests the
policy asks for with the ones the client wrote: same node, same partitions, same records
per partition.

Which appends the client's drain saw is decided by the trace itself: a message is in the
state of a pass if its `send()` had returned before the Sender asked whether the node was
ready (it was surely in its batch before the drain), or if the client put it in a request
of this pass or an earlier one. A message appended while the drain ran, that the drain did
not take, counts as appended after it: the race is timing, not a decision. Which nodes are
ready is decided earlier in the pass: the Java producer's accumulator check runs after
its Sender's poll returns (`TracedRequest.pass_ns`) and before it asks the node. A node
ready when the pass began must be sent to; one whose batch closed between the two was
seen ready or not as the check fell, which the trace does not time: there the client's
choice stands (`ReadyScan`).

Where the policy decides otherwise, the divergence is recorded (the first ones with both
requests) and the policy is rebuilt from the real client's state (for a policy that walks
its partitions from a moving start, `DrainCursor`, that start too), so one divergence does
not cascade and every request is judged on its own. Retried batches (a fault, not a policy
decision) are left out of the comparison and counted.

Pure: no clock, no I/O; the trace's nanoseconds are turned into seconds on the client's
millisecond clock, so a mode that models the Java producer's whole-millisecond time reads
each time as the producer did.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from producer_core.analysis.librdkafka_threads import BrokerThreads
from producer_core.config import build_settings
from producer_core.engine.core.accumulator import BATCH_FILLED, Accumulator, TopicPartition
from producer_core.engine.core.linger.base import LingerPolicy, PollContext
from producer_core.engine.modes import make_policy
from producer_core.engine.modes import mode as mode_spec
from producer_core.results.client_trace import ClientTrace, TracedRequest
from producer_core.settings import ProducerSettings
from producer_core.workload.workload import TopicSpec

BLOCKED_SEND_NS = 500_000
"""For a trace without the client's own wait times: a send() that took this long was
waiting for buffer.memory (an unblocked one takes a few microseconds). While a send()
waits, the Java producer's accumulator counts as exhausted (every partition with data is
sendable)."""
DIVERGENCES_KEPT = 20
CLOCK_WRAP_MS = 100_000
"""Trace times become seconds on the client's millisecond clock, from its reading modulo
this at the trace's clock line (keeps float seconds exact to well under a microsecond)."""


@runtime_checkable
class SenderModel(Protocol):
    """A policy that models when the client's sender thread looks (mode java): a replay,
    knowing that the real one looked, wakes it before each pass."""

    def wake(self) -> None: ...


@runtime_checkable
class ReadinessProbe(Protocol):
    """A policy that can tell since when a node has been ready by its rule (mode java):
    the replay measures how long after that the real client sent."""

    def ready_since(self, broker: int, now: float) -> float | None: ...


@runtime_checkable
class ReadyScan(Protocol):
    """A policy that decides which nodes are ready before it drains them (mode java: the
    accumulator's ready check, then the drain): the replay asks it at the pass's start
    and when the client asked the node, to tell a node it must send to from one the
    client's untimed check may have seen either way."""

    def ready_brokers(self, now: float, context: PollContext) -> set[int]: ...


@runtime_checkable
class SendableProbe(Protocol):
    """A policy that decides partition by partition (mode partition) and can tell which
    partitions it holds ready, with how many records, whether or not a request slot is
    free: the replay then tells a different rule from a different choice among partitions
    ready alike (kind `choice`, see `ReplayReport.same_rule`)."""

    def sendable(self, now: float) -> dict[int, int]: ...


@runtime_checkable
class InFlightLimit(Protocol):
    """A policy that limits a partition's work in flight (mode partition with
    librdkafka's idempotent cap): a rebuild after a divergence tells it which of the
    client's requests are still unanswered, so the partitions they hold stay held."""

    def set_in_flight(self, broker: int, parts: tuple[tuple[int, int], ...]) -> None: ...


@runtime_checkable
class DrainCursor(Protocol):
    """A policy that walks a node's partitions from a moving start (mode java's drain
    index): a rebuild after a divergence puts it where the client's walk left it, so the
    next requests are not judged from another starting point."""

    def drain_cursor(self) -> dict[int, int]: ...

    def set_drain_cursor(self, cursor: dict[int, int]) -> None: ...

    def drain_cursor_after(self, broker: int, taken: set[int]) -> int | None: ...


@dataclass(frozen=True)
class Decision:
    """One request: the node and (slot, records) per partition, in slot order."""

    broker: int
    parts: tuple[tuple[int, int], ...]

    def describe(self, slots: Sequence[TopicPartition]) -> str:
        shown = ", ".join(f"{slots[s].topic}[{slots[s].partition}]x{n}"
                          for s, n in self.parts[:12])
        more = f", ... ({len(self.parts)} partitions)" if len(self.parts) > 12 else ""
        return f"node {self.broker}: {shown}{more}"


@dataclass(frozen=True)
class Divergence:
    """A pass where the emulation asked for something else than the client wrote."""

    request: int
    """The real request's index (-1: an extra request of the emulation's)."""
    time_ms: float
    """Since the trace's first message."""
    kind: str
    """not_sent (the emulation sent nothing to that node), extra (it sent a request the
    client did not), partitions (another set of partitions), records (the same partitions,
    other record counts), choice (a `SendableProbe` policy held the client's partition
    ready with the client's records, but sent another ready partition, or none, in its
    request slots), early (an extra request of one partition that is the client's next
    request of that partition, records and all: the client sent it in a later pass)."""
    real: Decision | None
    emulated: Decision | None


@dataclass
class ReplayReport:
    mode: str
    client: str
    client_version: str
    real_requests: int = 0
    compared: int = 0
    identical: int = 0
    retried: int = 0
    """Real requests left out: they carried a retried batch."""
    emulated_requests: int = 0
    passes: int = 0
    rebuilds: int = 0
    by_kind: Counter[str] = field(default_factory=Counter)
    divergences: list[Divergence] = field(default_factory=list)
    slots: list[TopicPartition] = field(default_factory=list)
    sender_delay_ms: list[float] = field(default_factory=list)
    """Per identical request of a policy that can tell (`ReadinessProbe`): how long after
    the node was ready by the emulation's rule the client sent it. A rule that agrees with
    the client's leaves only the Sender thread's own wake-up delay here (a fraction of a
    millisecond on a quiet machine, more on a busy one); a rule stricter than the client's
    shows up as `not_sent`, one looser than the client's as a delay that never falls
    below the difference."""

    @property
    def share_identical(self) -> float:
        return self.identical / self.compared if self.compared else 1.0

    @property
    def same_rule(self) -> int:
        """Requests identical, or that the emulation held ready alike (kind `choice`): with
        librdkafka, which of several ready partitions goes first depends on where its broker
        thread's round robin stands and when a response frees a request slot -- timing, not
        its rule."""
        return self.identical + self.by_kind["choice"]

    @property
    def extra_requests(self) -> int:
        """Requests the emulation asked for that the client did not write in that pass
        (`early`: it wrote them in a later one)."""
        return self.by_kind["extra"] + self.by_kind["early"]

    @property
    def share_same_rule(self) -> float:
        return self.same_rule / self.compared if self.compared else 1.0

    @property
    def first_divergence(self) -> Divergence | None:
        return self.divergences[0] if self.divergences else None

    def delay_percentiles(self) -> dict[str, float] | None:
        """p1 / p50 / p99 / max and mean of `sender_delay_ms` (None: not measured). The
        mean is what a whole run feels: at linger L, a Sender that sends D ms late on
        average makes each request carry about L + D ms of records."""
        delays = sorted(self.sender_delay_ms)
        if not delays:
            return None

        def at(q: float) -> float:
            return round(delays[min(len(delays) - 1, int(q * len(delays)))], 3)

        return {"p1_ms": at(0.01), "p50_ms": at(0.5), "p99_ms": at(0.99),
                "max_ms": round(delays[-1], 3), "mean_ms": round(sum(delays) / len(delays), 3)}

    def to_dict(self) -> dict[str, Any]:
        first = self.first_divergence
        return {
            "mode": self.mode, "client": self.client, "client_version": self.client_version,
            "real_requests": self.real_requests, "compared": self.compared,
            "identical": self.identical, "share_identical": round(self.share_identical, 5),
            "same_rule": self.same_rule, "share_same_rule": round(self.share_same_rule, 5),
            "extra_requests": self.extra_requests,
            "retried": self.retried, "emulated_requests": self.emulated_requests,
            "passes": self.passes, "rebuilds": self.rebuilds,
            "divergences_by_kind": dict(self.by_kind),
            "sender_delay": self.delay_percentiles(),
            "first_divergence": None if first is None else {
                "request": first.request, "time_ms": round(first.time_ms, 3),
                "kind": first.kind,
                "real": None if first.real is None else first.real.describe(self.slots),
                "emulated": (None if first.emulated is None
                             else first.emulated.describe(self.slots))},
        }

    def lines(self) -> list[str]:
        """The report as a reader sees it."""
        out = [f"trace replay of mode {self.mode} against {self.client} "
               f"{self.client_version}: {self.identical:,} of {self.compared:,} requests "
               f"identical ({self.share_identical:.2%}); the client wrote "
               f"{self.real_requests:,}, the emulation asked for {self.emulated_requests:,} "
               f"in the same {self.passes:,} sender passes"
               + (f"; {self.retried:,} with a retried batch left out" if self.retried else "")]
        if self.by_kind["choice"]:
            out.append(f"identical or held ready alike (another choice among ready "
                       f"partitions): {self.same_rule:,} of {self.compared:,} "
                       f"({self.share_same_rule:.2%})")
        delay = self.delay_percentiles()
        if delay is not None:
            out.append("client's send after the emulation's ready time: p1 {p1_ms} ms, p50 "
                       "{p50_ms} ms, p99 {p99_ms} ms, max {max_ms} ms, mean {mean_ms} ms"
                       .format(**delay))
        if self.by_kind:
            out.append("divergences: " + ", ".join(f"{k} {n:,}"
                                                    for k, n in sorted(self.by_kind.items())))
        first = self.first_divergence
        if first is not None:
            out.append(f"first divergence: request {first.request} at {first.time_ms:.3f} ms "
                       f"({first.kind})")
            out.append("  client:    " + (first.real.describe(self.slots)
                                          if first.real else "nothing"))
            out.append("  emulation: " + (first.emulated.describe(self.slots)
                                          if first.emulated else "nothing"))
        return out


class _Clock:
    """Trace nanoseconds as seconds on the client's millisecond clock."""

    def __init__(self, trace: ClientTrace) -> None:
        self.base_ms = trace.clock_ms
        self.base_s = (trace.clock_ms % CLOCK_WRAP_MS) / 1000.0
        self.base_ns = trace.clock_ns + clock_shift_ns(trace)

    def at(self, ns: int) -> float:
        return self.base_s + (ns - self.base_ns) / 1e9

    def ns(self, seconds: float) -> int:
        """The nanosecond time of `seconds` on this clock (the inverse of `at`)."""
        return self.base_ns + round((seconds - self.base_s) * 1e9)

    def tick(self, ms: int) -> float:
        """Where the client's clock read `ms` begins."""
        return self.base_s + (ms - self.base_ms) / 1000.0


def clock_shift_ns(trace: ClientTrace) -> int:
    """How much earlier the client's millisecond clock really ticks than its clock line
    says. The line is the first nanosecond the driver saw after a tick, so the tick is at
    or before it; a driver descheduled while it watched reads it late (0.87 ms in one
    Kafka run, which moved a batch's linger by a millisecond). Each Sender pass read its
    millisecond (`created_ms`) before it asked a node (`ready_ns`): a pass that asked
    before the line's tick of that millisecond proves the line late, by at least that
    much. The shift is the least the passes require (0: none does)."""
    if trace.client == "librdkafka":
        return 0
    shift = 0.0
    for request in trace.requests:
        if request.created_ms >= 0 and request.ready_ns >= 0:
            asked = (request.ready_ns - trace.clock_ns) / 1e9
            tick = (request.created_ms - trace.clock_ms) / 1000.0
            shift = min(shift, asked - tick)
    return round(shift * 1e9)


class _Replay:
    """The policy under test, fed from the trace."""

    def __init__(self, trace: ClientTrace, mode: str, settings: ProducerSettings,
                 topics: Sequence[TopicSpec]) -> None:
        self.trace = trace
        self.mode = mode
        self.settings = settings
        self.topics = topics
        self.clock = _Clock(trace)
        self.slots = [TopicPartition(name, p) for name, count in
                      zip(trace.topics, trace.partitions, strict=True) for p in range(count)]
        self.leaders = self._leaders()
        self.end_ns = [s + t for s, t in zip(trace.start_ns, trace.took_ns, strict=True)]
        self.start_ms = trace.start_ms if len(trace.start_ms) == len(trace.start_ns) else []
        if len(trace.waited_ns) == len(trace.start_ns):  # the client said which waited
            # the whole send(): where in it the wait began is not timed (a few
            # microseconds of work come before and after it)
            self.blocked = [(s, e) for s, e, waited in zip(trace.start_ns, self.end_ns,
                                                           trace.waited_ns, strict=True)
                            if waited > 0]
        else:
            self.blocked = [(s, e) for s, e, took in zip(trace.start_ns, self.end_ns,
                                                         trace.took_ns, strict=True)
                            if took >= BLOCKED_SEND_NS]
        """When the client's send() waited for memory, (start, end), in order."""
        self.appended = [False] * len(trace.slots)
        self.prefix = 0  # every message before this one is appended
        self.first_of_batch: set[int] = set()
        """Messages that began a batch of the client's (its requests show where)."""
        self.carried = self._attribute()
        self.unsent: set[int] = set()
        """Messages appended that the client has not put in a request yet."""
        self.build()

    # ------------------------------------------------------------------ set-up
    def _leaders(self) -> list[int]:
        """Each slot's node, as the client's requests show it (the first request wins)."""
        leaders = [-1] * len(self.slots)
        for request in self.trace.requests:
            for part in request.parts:
                if leaders[part.slot] < 0:
                    leaders[part.slot] = request.broker
        known = [b for b in leaders if b >= 0]
        fallback = known[0] if known else 0
        return [b if b >= 0 else fallback for b in leaders]

    def _attribute(self) -> list[list[int]]:
        """Real request -> the messages it carried for the first time, FIFO per slot."""
        queues: dict[int, deque[int]] = {}
        for index, slot in enumerate(self.trace.slots):
            queues.setdefault(slot, deque()).append(index)
        carried: list[list[int]] = []
        for request in self.trace.requests:
            messages: list[int] = []
            for part in request.parts:
                queue = queues.get(part.slot)
                if part.retry or queue is None:
                    continue
                taken = [queue.popleft() for _ in range(min(part.records, len(queue)))]
                self.first_of_batch.update(taken[:1])
                messages.extend(taken)
            carried.append(messages)
        return carried

    def build(self) -> None:
        """A fresh accumulator and policy holding every appended message not yet sent."""
        spec = mode_spec(self.mode)
        self.accumulator = Accumulator(self.slots, spec.accumulator_batch_size(self.settings),
                                       self.settings["compression.type"])
        self.policy: LingerPolicy = make_policy(self.mode, self.accumulator,
                                                list(self.leaders), self.settings,
                                                self.topics)
        for message in sorted(self.unsent):
            self._append(message)

    def _append(self, message: int) -> None:
        trace = self.trace
        now = self.clock.at(trace.start_ns[message])
        if self.start_ms:  # the millisecond the client read: a new batch's created time
            tick = self.clock.tick(self.start_ms[message])
            now = min(max(now, tick), tick + 0.000_999)
        key_size = trace.key_sizes[message]
        key = None if key_size < 0 else bytes(key_size)
        header_index = trace.header_index[message]
        headers = ([] if header_index < 0 else
                   [(name, bytes(size)) for name, size in trace.headers[header_index]])
        intended = self.clock.at(trace.intended_ns[message])
        slot = trace.slots[message]
        timestamp_ms = (trace.timestamps_ms[message] if trace.timestamps_ms
                        else int(now * 1000))
        events = self.accumulator.append_each(
            [slot], range(message, message + 1), None if key is None else [key],
            [bytes(trace.value_sizes[message])], [intended], now, timestamp_ms, headers)
        for event_slot, event in events:
            self.policy.on_append(event_slot, event, now)

    # ------------------------------------------------------------------ passes
    def see(self, ready_ns: int, group: Sequence[TracedRequest]) -> None:
        """Append what the client's drain saw in a pass: every send() that returned
        before `ready_ns`, and every message the pass's requests carried."""
        appended = self.appended
        stop = max(self.prefix, bisect.bisect_left(self.end_ns, ready_ns, lo=self.prefix))
        late = sorted(m for request in group for m in self.carried[request.index]
                      if m >= stop and not appended[m])
        for message in [*range(self.prefix, stop), *late]:
            if not appended[message]:
                appended[message] = True
                self.unsent.add(message)
                self._append(message)
        self.prefix = stop
        for request in group:
            self.unsent.difference_update(self.carried[request.index])
        self._closing(stop, ready_ns)

    def _closing(self, message: int, at_ns: int) -> None:
        """A `send()` under way at `at_ns` whose record began a new batch of the client's
        closed the slot's open batch when it began (Java closes a full batch as soon as a
        record does not fit, then finds that record a new batch: that can take
        milliseconds, waiting for the lock the Sender's drain holds)."""
        trace = self.trace
        if (message < len(trace.slots) and not self.appended[message]
                and trace.start_ns[message] < at_ns and message in self.first_of_batch):
            slot = trace.slots[message]
            if self.accumulator.close_open(slot):
                self.policy.on_append(slot, BATCH_FILLED, self.clock.at(trace.start_ns[message]))

    def memory_exhausted(self, begin_ns: int, end_ns: int) -> bool:
        """Was a send() of the client's waiting for buffer.memory at some time of a pass
        that began at `begin_ns` and asked for ready nodes at `end_ns`? (Java reads it at
        the start of its ready check, which the trace does not time more closely.)"""
        index = bisect.bisect_left(self.blocked, (end_ns, end_ns))
        return index > 0 and self.blocked[index - 1][1] > begin_ns

    def backlog(self, at_ns: int) -> float | None:
        """The intended time of the oldest message not handed to the client yet."""
        index = bisect.bisect_right(self.trace.start_ns, at_ns)
        if index >= len(self.trace.intended_ns):
            return None
        return self.clock.at(self.trace.intended_ns[index])


class _NextRequests:
    """Each slot's requests of one partition in the client's trace, to ask whether an
    extra request of the emulation's is one the client sent later (kind `early`)."""

    def __init__(self, requests: Sequence[TracedRequest]) -> None:
        self.by_slot: dict[int, list[tuple[int, int]]] = {}
        for request in requests:
            if len(request.parts) == 1 and not request.retry:
                part = request.parts[0]
                self.by_slot.setdefault(part.slot, []).append((request.index, part.records))

    def same_later(self, decision: Decision, after: int) -> bool:
        """Is `decision` (one partition) the client's next request of that partition
        after request `after`, with the same records?"""
        if len(decision.parts) != 1:
            return False
        slot, records = decision.parts[0]
        requests = self.by_slot.get(slot, [])
        index = bisect.bisect_right(requests, (after, 1 << 62))
        return index < len(requests) and requests[index][1] == records


def _passes(requests: Sequence[TracedRequest]) -> list[list[TracedRequest]]:
    """The client's requests grouped by the Sender pass that wrote them, in order."""
    passes: list[list[TracedRequest]] = []
    for request in requests:
        if passes and request.sender_pass >= 0 and passes[-1][0].sender_pass == \
                request.sender_pass:
            passes[-1].append(request)
        else:
            passes.append([request])
    return passes


def _decision(request: TracedRequest) -> Decision:
    return Decision(request.broker, tuple(sorted((p.slot, p.records) for p in request.parts)))


def replay(trace: ClientTrace, mode: str, settings: ProducerSettings,
           topics: Sequence[TopicSpec] = ()) -> ReplayReport:
    """Replay `trace` through mode `mode`'s policy with `settings` (see the module
    docstring); `topics`: the workload's topic specs, for modes with per-topic options."""
    if not len(trace.slots) == len(trace.start_ns) == len(trace.took_ns):
        raise ValueError(
            f"The trace is incomplete: {len(trace.slots):,} messages were handed to the client "
            f"and {len(trace.start_ns):,} send() calls were timed (a run that was stopped, "
            "or a driver that does not trace); it cannot be replayed.")
    state = _Replay(trace, mode, settings, topics)
    coming = _NextRequests(trace.requests)
    report = ReplayReport(mode, trace.client, trace.client_version,
                          real_requests=len(trace.requests), slots=state.slots)
    clock = state.clock
    first_ns = trace.start_ns[0] if trace.start_ns else 0
    max_in_flight = settings.max_in_flight
    in_flight: list[tuple[int, int, int]] = []  # (response ns, broker, request index)
    responses = trace.responses
    for group in _passes(trace.requests):
        report.passes += 1
        ready_ns = min((r.ready_ns if r.ready_ns >= 0 else r.sent_ns) for r in group)
        created_ms = group[0].created_ms
        now = clock.at(ready_ns)
        began_ns = ready_ns
        if created_ms >= 0:  # the pass decided on this millisecond of the client's clock
            tick = clock.tick(created_ms)
            began_ns = min(ready_ns, clock.ns(tick))
            if not tick <= now < tick + 0.001:
                now = tick + 0.0005
        # responses read before the pass
        still: list[tuple[int, int, int]] = []
        for answered_ns, broker, index in in_flight:
            if answered_ns <= ready_ns:
                sent = trace.requests[index].sent_ns
                state.policy.on_response(broker, (answered_ns - sent) / 1e9,
                                         clock.at(answered_ns), 0, False)
            else:
                still.append((answered_ns, broker, index))
        in_flight = still
        busy = Counter(broker for _, broker, _ in in_flight)
        free = {b: max(0, max_in_flight - busy[b]) for b in set(state.leaders)}
        for node in trace.busy.get(group[0].sender_pass, ()):  # the client could not send
            free[node] = 0
        flushing = trace.flush_ns is not None and ready_ns >= trace.flush_ns
        policy = state.policy
        if isinstance(policy, SenderModel):
            policy.wake()
        context = PollContext(free, state.backlog(ready_ns),
                              state.memory_exhausted(began_ns, ready_ns), flushing)
        pass_ns = group[0].pass_ns
        began_ready: set[int] | None = None
        if 0 <= pass_ns < ready_ns and isinstance(policy, ReadyScan):
            state.see(pass_ns, ())
            began_ready = policy.ready_brokers(now, dataclasses.replace(
                context, memory_exhausted=state.memory_exhausted(pass_ns, pass_ns)))
        state.see(ready_ns, group)
        if began_ready is not None and isinstance(policy, ReadyScan):
            # ready when the pass began: it must send; ready only by the time it asked
            # the node (a batch closed meanwhile): when the check ran is not timed, so
            # the client's choice stands; not ready by then: it must not
            written = {request.broker for request in group}
            for node in policy.ready_brokers(now, context) - began_ready - written:
                free[node] = 0
        since: dict[int, float | None] = {}
        if isinstance(policy, ReadinessProbe):
            policy.context = context
            since = {r.broker: policy.ready_since(r.broker, now) for r in group}
        cursor: dict[int, int] = {}
        if isinstance(policy, DrainCursor):  # where the client's walks leave each node
            cursor = policy.drain_cursor()
            for request in group:
                after = policy.drain_cursor_after(
                    request.broker, {p.slot for p in request.parts if not p.retry})
                if after is not None:
                    cursor[request.broker] = after
        ready_alike: dict[int, int] = {}
        if isinstance(policy, SendableProbe):
            policy.context = context  # (a flush makes every partition ready)
            ready_alike = policy.sendable(now)
        plans = policy.poll(now, context)
        emulated: dict[int, list[Decision]] = {}
        for plan in plans:
            report.emulated_requests += 1
            parts = tuple(sorted((b.slot, b.record_count) for b in plan.batches))
            emulated.setdefault(plan.broker, []).append(Decision(plan.broker, parts))
        diverged = False
        time_ms = (ready_ns - first_ns) / 1e6
        for request in group:
            answered = responses.get(request.correlation)
            in_flight.append((answered if answered is not None else 1 << 62, request.broker,
                              request.index))
            # the requests of one pass, matched whatever their order (a client may walk
            # its partitions from another starting point)
            candidates = emulated.get(request.broker, [])
            real = _decision(request)
            mine = (real if real in candidates else candidates[0]) if candidates else None
            if mine is not None:
                candidates.remove(mine)
            if request.retry:
                report.retried += 1
                diverged = True  # the policy never saw the retried batch: rebuild
                continue
            report.compared += 1
            if mine == real:
                report.identical += 1
                ready = since.get(request.broker)
                if ready is not None:
                    report.sender_delay_ms.append((now - ready) * 1000)
                continue
            diverged = True
            kind = ("choice" if real.parts and all(ready_alike.get(s) == n
                                                   for s, n in real.parts)
                    else "not_sent" if mine is None else
                    "records" if [s for s, _ in mine.parts] == [s for s, _ in real.parts]
                    else "partitions")
            _note(report, Divergence(request.index, time_ms, kind, real, mine))
        for left in emulated.values():
            for decision in left:
                diverged = True
                kind = "early" if coming.same_later(decision, group[-1].index) else "extra"
                _note(report, Divergence(-1, time_ms, kind, None, decision))
        if diverged:  # start again from the client's own state
            state.build()
            report.rebuilds += 1
            if isinstance(state.policy, InFlightLimit):
                for _, broker, index in in_flight:  # oldest first per node
                    state.policy.set_in_flight(broker, tuple(
                        (p.slot, p.records) for p in trace.requests[index].parts))
            if cursor and isinstance(state.policy, DrainCursor):
                state.policy.set_drain_cursor(cursor)
    return report


@dataclass(frozen=True)
class FreeRun:
    """The emulation on the client's appends and round trips, with its own timing."""

    requests: int
    records: int
    client_requests: int
    client_records: int

    @property
    def difference(self) -> float:
        """The emulation's requests over the client's, less one."""
        return self.requests / self.client_requests - 1 if self.client_requests else 0.0

    def line(self) -> str:
        return (f"with its own timing (the client's appends, its round trips in order) the "
                f"emulation sends {self.requests:,} requests, the client sent "
                f"{self.client_requests:,} ({self.difference:+.1%})")


class _RoundTrips:
    """Requests the free run sends, answered with the client's round trips, node by node
    in order; a connection answers in order: not before the request ahead of it."""

    def __init__(self, trace: ClientTrace, max_in_flight: int, brokers: set[int]) -> None:
        self.rtts: dict[int, list[int]] = {}  # node -> its round trips, in order
        for request in trace.requests:
            answered_ns = trace.responses.get(request.correlation)
            if answered_ns is not None:
                self.rtts.setdefault(request.broker, []).append(answered_ns - request.sent_ns)
        self.everyone = [rtt for node in self.rtts.values() for rtt in node] or [0]
        self.sent_to: Counter[int] = Counter()
        self.free = dict.fromkeys(brokers, max_in_flight)
        self.in_flight: list[tuple[float, int]] = []  # (answered at, broker)
        self.last_answer: dict[int, float] = {}
        self.requests = self.records = 0

    def next_answer(self) -> float | None:
        return min(self.in_flight)[0] if self.in_flight else None

    def answered(self, now: float) -> list[int]:
        """The brokers whose oldest request is answered by `now`, one entry each."""
        done = [x for x in self.in_flight if x[0] <= now]
        for answer in done:
            self.in_flight.remove(answer)
            self.free[answer[1]] += 1
        return [broker for _, broker in done]

    def send(self, plans: Sequence[Any], now: float) -> None:
        for plan in plans:
            self.free[plan.broker] -= 1
            node_rtts = self.rtts.get(plan.broker, self.everyone)
            rtt = node_rtts[min(self.sent_to[plan.broker], len(node_rtts) - 1)] / 1e9
            self.sent_to[plan.broker] += 1
            answered = max(now + rtt, self.last_answer.get(plan.broker, now))
            self.last_answer[plan.broker] = answered
            self.in_flight.append((answered, plan.broker))
            self.count(plans=[plan])

    def count(self, plans: Sequence[Any]) -> None:
        self.requests += len(plans)
        self.records += sum(b.record_count for plan in plans for b in plan.batches)


def free_run(trace: ClientTrace, mode: str, settings: ProducerSettings,
             topics: Sequence[TopicSpec] = (), thread_delay_s: float = 0.0) -> FreeRun:
    """The other half of a whole-run comparison: the same appends (at the client's
    `send()` times) and round trips (the client's, request by request in order), but the
    emulation decides *when* to send by its own timing model. Against the client's count
    this shows what timing alone does: a client whose Sender wakes late batches more.
    Memory is not modelled here.

    The Sender is one that looks at each append, response and deadline; for a librdkafka
    trace, librdkafka's broker threads, which look only when woken
    (`librdkafka_threads`), `thread_delay_s` late."""
    state = _Replay(trace, mode, settings, topics)
    trips = _RoundTrips(trace, settings.max_in_flight, set(state.leaders))
    if trace.client == "librdkafka":
        _threaded(state, trips, settings.linger_s, thread_delay_s)
    else:
        _prompt(state, trips)
    return FreeRun(trips.requests, trips.records, len(trace.requests),
                   sum(r.records for r in trace.requests))


def _prompt(state: _Replay, trips: _RoundTrips) -> None:
    """A Sender that looks at every append, every response and every deadline."""
    trace, policy, clock = state.trace, state.policy, state.clock
    flush_s = clock.at(trace.flush_ns) if trace.flush_ns is not None else None
    times = [clock.at(ns) for ns in state.end_ns]
    next_message, total = 0, len(trace.slots)
    while True:
        wake = policy.next_wakeup()
        candidates = [t for t in (times[next_message] if next_message < total else None,
                                  wake, trips.next_answer()) if t is not None]
        flushing = next_message >= total
        if not candidates and not (flushing and state.accumulator.queued_records):
            break
        now = min(candidates) if candidates else times[-1]
        while next_message < total and times[next_message] <= now:
            state._append(next_message)
            next_message += 1
        for broker in trips.answered(now):
            policy.on_response(broker, 0.0, now, 0, False)
        flushing = next_message >= total and (flush_s is None or now >= flush_s)
        plans = policy.poll(now, PollContext(dict(trips.free), None, False, flushing))
        trips.send(plans, now)
        if not plans and not trips.in_flight and next_message >= total:
            if not state.accumulator.queued_records:
                break
            if wake is None or wake <= now:  # nothing will come: flush what is left
                plans = policy.poll(now, PollContext(dict(trips.free), None, False, True))
                if not plans:
                    break
                trips.count(plans)


class _Heads:
    """The accumulator as `librdkafka_threads.Queues` reads it."""

    def __init__(self, accumulator: Accumulator) -> None:
        self.accumulator = accumulator

    def head_created(self, slot: int) -> float | None:
        head = self.accumulator.head(slot)
        return None if head is None else head.created

    def head_is_full(self, slot: int) -> bool:
        return self.accumulator.head_is_full(slot)


def _threaded(state: _Replay, trips: _RoundTrips, linger_s: float, delay_s: float) -> None:
    """librdkafka's broker threads: each serves its partitions only when it loops."""
    trace, policy, clock = state.trace, state.policy, state.clock
    threads = BrokerThreads(state.leaders, linger_s, delay_s)
    heads = _Heads(state.accumulator)
    flush_s = clock.at(trace.flush_ns) if trace.flush_ns is not None else None
    times = [clock.at(ns) for ns in state.end_ns]
    next_message, total = 0, len(trace.slots)
    now = times[0] if times else 0.0
    while True:
        candidates = [t for t in (times[next_message] if next_message < total else None,
                                  trips.next_answer(), threads.next_loop())
                      if t is not None]
        if not candidates:  # nothing will come: flush what is left
            trips.count(policy.poll(now, PollContext(dict(trips.free), None, False, True)))
            break
        now = min(candidates)
        while next_message < total and times[next_message] <= now:
            slot = trace.slots[next_message]
            state._append(next_message)
            next_message += 1
            threads.appended(slot, now, state.accumulator.head_is_full(slot))
        for broker in trips.answered(now):
            policy.on_response(broker, 0.0, now, 0, False)
            threads.answered(broker, now)
        flushing = next_message >= total and (flush_s is None or now >= flush_s)
        due = threads.due(now)
        for broker in (sorted(trips.free) if flushing else due):  # flushing: every thread
            only = {b: (free if b == broker else 0) for b, free in trips.free.items()}
            trips.send(policy.poll(now, PollContext(only, None, False, flushing)), now)
            threads.looped(broker, now, heads, trips.free[broker] > 0)
        if flushing and not trips.in_flight and threads.next_loop() is None:
            trips.count(policy.poll(now, PollContext(dict(trips.free), None, False, True)))
            break


def settings_from_trace(trace: ClientTrace, mode: str,
                        extra: Sequence[tuple[str, str]] = ()) -> ProducerSettings:
    """Mode `mode`'s settings for replaying `trace`: the client's own properties (its
    driver records what it ran with), plus `extra` (e.g. the emulation's own knobs)."""
    settings = trace.settings
    if trace.client == "librdkafka" and mode == "partition":
        from producer_core.engine.drivers.librdkafka_trace import replay_settings
        settings = replay_settings(settings)
    return build_settings([*settings.items(), *extra], mode=mode)


def _note(report: ReplayReport, divergence: Divergence) -> None:
    report.by_kind[divergence.kind] += 1
    if len(report.divergences) < DIVERGENCES_KEPT:
        report.divergences.append(divergence)
