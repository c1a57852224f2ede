"""What a real client did, message by message and request by request: the input of a trace
replay (`producer_core.analysis.trace_replay`), which asks an emulation to make the same
decisions from the same appends and responses.

A driver that can trace (the Java driver, `kbatch.trace=true`) records, on the client's own
clock (nanoseconds):

- each message's slot, key, value and header sizes, intended time, and the start and
  length of the client's `send()` call (the record is in its batch by the end; the batch's
  creation time is read at the start);
- each Produce request: when it was written, to which node, the Sender pass it came from,
  the client's millisecond clock reading for that pass, when the Sender asked whether the
  node was ready, and per partition the records it carried (and whether they were a retry);
- each response's time, and when the final flush began;
- one reading of where the client's millisecond clock ticks (`clock_ms` at `clock_ns`), and
  the order in which its drain walks each node's partitions.

librdkafka's driver (`drivers.librdkafka.run_traced`) records the same shape from kbatch's
own `produce()` calls and librdkafka's debug log (`drivers.librdkafka_trace`): one partition
per request, no millisecond clock (`created_ms` -1), each request's pass time recovered from
librdkafka's rule and bounded by the log (`timing` says how closely), the settings it ran
with under kbatch's names.

Pure data: JSON in and out, no clock read here.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

TRACE_FORMAT = 1


@dataclass(frozen=True)
class TracedPart:
    """One partition's records in a traced request."""

    slot: int
    records: int
    retry: bool = False


@dataclass(frozen=True)
class TracedRequest:
    """One Produce request as the client wrote it."""

    index: int
    sent_ns: int
    broker: int
    correlation: int
    created_ms: int
    """The client's millisecond clock of the Sender pass (Java: the `now` of ready/drain)."""
    ready_ns: int
    """When the Sender asked whether `broker` was ready in this pass (-1: not seen)."""
    sender_pass: int
    parts: tuple[TracedPart, ...]
    pass_ns: int = -1
    """When the Sender's pass began (Java: its client.poll returned; -1: not traced). Its
    ready check comes after it and before `ready_ns`: the batches it saw closed lie
    between the two."""

    @property
    def records(self) -> int:
        return sum(p.records for p in self.parts)

    @property
    def retry(self) -> bool:
        return any(p.retry for p in self.parts)


@dataclass
class ClientTrace:
    """One real client's run, traced (see the module docstring)."""

    client: str
    client_version: str
    topics: list[str]
    partitions: list[int]
    """Partitions per topic; slot = the topic's first slot + partition, in topic order."""
    clock_ms: int
    clock_ns: int
    slots: list[int] = field(default_factory=list)
    key_sizes: list[int] = field(default_factory=list)
    """-1: no key."""
    value_sizes: list[int] = field(default_factory=list)
    headers: list[list[tuple[str, int]]] = field(default_factory=list)
    """Distinct header sets, (name, value length) each; `header_index` points in here."""
    header_index: list[int] = field(default_factory=list)
    """Per message, its header set (-1: none)."""
    intended_ns: list[int] = field(default_factory=list)
    timestamps_ms: list[int] = field(default_factory=list)
    """Each record's timestamp (its size in a batch depends on the deltas)."""
    start_ns: list[int] = field(default_factory=list)
    took_ns: list[int] = field(default_factory=list)
    waited_ns: list[int] = field(default_factory=list)
    """Of each send(), the time it waited for buffer.memory (the client's own metric;
    empty: not reported)."""
    start_ms: list[int] = field(default_factory=list)
    """Of each send(), the client's millisecond clock when it began: what a new batch's
    created time reads (empty: not reported)."""
    requests: list[TracedRequest] = field(default_factory=list)
    responses: dict[int, int] = field(default_factory=dict)
    """Correlation id -> when its response was read (ns)."""
    flush_ns: int | None = None
    busy: dict[int, list[int]] = field(default_factory=dict)
    """Sender pass -> the nodes it found ready but could not send to (Java: the client's
    `ready(node)` said no: no connection yet, in-flight requests, a request still being
    written)."""
    drain_order: dict[int, list[int]] = field(default_factory=dict)
    """Node -> its slots in the order the client's drain walks them (as it reported)."""
    settings: dict[str, str] = field(default_factory=dict)
    timing: dict[str, float] = field(default_factory=dict)
    """How the trace's times were taken, where that is not exact (librdkafka: how long
    after the pass time its log callback ran, `drivers.librdkafka_trace`)."""

    # ------------------------------------------------------------- recording
    def add_messages(self, slots: list[int], keys: list[bytes | None], values: list[bytes],
                     intended_ns: list[int], headers: list[tuple[str, bytes]] | None,
                     timestamp_ms: int = 0) -> None:
        """Messages in the order they were handed to the client."""
        index = -1
        if headers:
            shape = [(name, len(value)) for name, value in headers]
            if shape not in self.headers:
                self.headers.append(shape)
            index = self.headers.index(shape)
        self.slots.extend(slots)
        self.key_sizes.extend(-1 if k is None else len(k) for k in keys)
        self.value_sizes.extend(len(v) for v in values)
        self.header_index.extend([index] * len(slots))
        self.intended_ns.extend(intended_ns)
        self.timestamps_ms.extend([timestamp_ms] * len(slots))

    def add_appends(self, first: int, start_ns: list[int], took_ns: list[int],
                    waited_ns: list[int] | None = None,
                    start_ms: list[int] | None = None) -> None:
        """The client's send() timings of messages `first`, `first + 1`, ... (in order)."""
        if first != len(self.start_ns):
            raise ValueError(f"trace appends out of order: {first} after {len(self.start_ns)}")
        self.start_ns.extend(start_ns)
        self.took_ns.extend(took_ns)
        if waited_ns is not None:
            self.waited_ns.extend(waited_ns)
        if start_ms is not None:
            self.start_ms.extend(start_ms)

    def first_slots(self) -> list[int]:
        firsts, total = [], 0
        for count in self.partitions:
            firsts.append(total)
            total += count
        return firsts

    def add_drain_order(self, nodes: dict[str, list[list[int]]]) -> None:
        """A driver's `drain_order` line: per node, [topic index, partition] pairs."""
        firsts = self.first_slots()
        self.drain_order = {int(node): [firsts[t] + p for t, p in pairs]
                            for node, pairs in nodes.items()}

    def add_request(self, line: dict[str, Any]) -> None:
        """A driver's `request` line (with the trace's fields)."""
        firsts = self.first_slots()
        parts = tuple(TracedPart(firsts[topic] + partition, records, bool(retry))
                      for topic, partition, records, retry in line.get("parts", ())
                      if topic >= 0)
        self.requests.append(TracedRequest(
            len(self.requests), int(line["ns"]), int(line["broker"]), int(line.get("corr", -1)),
            int(line.get("created_ms", -1)), int(line.get("ready_ns", -1)),
            int(line.get("pass", -1)), parts, int(line.get("pass_ns", -1))))

    # ------------------------------------------------------------------- I/O
    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["format"] = TRACE_FORMAT
        data["responses"] = {str(k): v for k, v in self.responses.items()}
        data["drain_order"] = {str(k): v for k, v in self.drain_order.items()}
        data["busy"] = {str(k): v for k, v in self.busy.items()}
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ClientTrace:
        if data.get("format") != TRACE_FORMAT:
            raise ValueError(f"not a kbatch client trace of format {TRACE_FORMAT}")
        fields = {k: v for k, v in data.items() if k != "format"}
        fields["requests"] = [
            TracedRequest(**{**r, "parts": tuple(TracedPart(**p) for p in r["parts"])})
            for r in data["requests"]]
        fields["responses"] = {int(k): v for k, v in data["responses"].items()}
        fields["headers"] = [[tuple(h) for h in shape] for shape in data["headers"]]
        fields["drain_order"] = {int(k): v for k, v in data.get("drain_order", {}).items()}
        fields["busy"] = {int(k): v for k, v in data.get("busy", {}).items()}
        return cls(**fields)

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_dict()))

    @classmethod
    def read(cls, path: Path) -> ClientTrace:
        return cls.from_dict(json.loads(path.read_text()))
