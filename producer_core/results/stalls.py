"""Stalls: spans of a run with no acknowledgement while requests were in flight.

A tail of seconds in a run's latency is either a slow broker all along or one stall (a new
Kafka topic's first writes stopped a run's acknowledgements for 14 s, issue 47); the
percentiles cannot tell which. The request log can: between two acknowledgements, a request
sent before the first and answered after the second was waiting the whole time. A client
driver without a request log (librdkafka, kafka-java) has only its intervals: rows with
nothing acknowledged while messages were sent and not settled.

Pure functions of the results' own data, so a test gives them synthetic times.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

STALL_MIN_S = 1.0
"""The shortest span without an acknowledgement that is called a stall."""


@dataclass(frozen=True)
class Stall:
    """No acknowledgement from `start_s` to `end_s` (seconds from the run's time zero)
    while `waiting` requests (`unit` "requests") or messages were outstanding."""

    start_s: float
    end_s: float
    waiting: int
    unit: str = "requests"

    @property
    def seconds(self) -> float:
        return self.end_s - self.start_s

    def as_dict(self) -> dict[str, Any]:
        return {"start_s": round(self.start_s, 3), "end_s": round(self.end_s, 3),
                "seconds": round(self.seconds, 3), f"{self.unit}_waiting": self.waiting}

    def describe(self) -> str:
        return (f"no acknowledgement from {self.start_s:,.1f} s to {self.end_s:,.1f} s "
                f"({self.seconds:,.1f} s) while {self.waiting:,} {self.unit} were waiting")


def stalls_from_requests(requests: Iterable[tuple[float, float]], end_s: float,
                         min_s: float = STALL_MIN_S) -> list[Stall]:
    """Stalls in a request log: (send time s, round trip ms; < 0 never answered) per
    request. A request never answered counts as waiting until `end_s` (the run's end)."""
    spans = sorted((send, send + rtt / 1000.0 if rtt >= 0 else end_s)
                   for send, rtt in requests)
    if not spans:
        return []
    answers = sorted({answered for _, answered in spans})
    stalls: list[Stall] = []
    previous = spans[0][0]  # the first send: nothing could be acknowledged before it
    for answered in answers:
        if answered - previous < min_s:  # too short a gap to hold a stall: skip the scan
            previous = answered
            continue
        # the requests sent before `answered` and still unanswered just after `previous`
        waiting = [send for send, done in spans if done > previous and send < answered]
        if waiting:
            start = max(previous, min(waiting))
            if answered - start >= min_s:
                stalls.append(Stall(start, answered, len(waiting)))
        previous = answered
    return stalls


def stalls_from_intervals(rows: Sequence[dict[str, Any]], min_s: float = STALL_MIN_S
                          ) -> list[Stall]:
    """Stalls in interval rows (`intervals.row`): consecutive rows with nothing
    acknowledged or failed while messages generated before them were still unsettled."""
    stalls: list[Stall] = []
    outstanding = 0
    open_at: float | None = None
    waiting = 0
    last_end = 0.0
    for row in rows:
        settled = row.get("acknowledged", 0) + row.get("failed", 0)
        if settled == 0 and outstanding > 0:
            if open_at is None:
                open_at, waiting = row["start_s"], outstanding
            last_end = row["end_s"]
        else:
            if open_at is not None and last_end - open_at >= min_s:
                stalls.append(Stall(open_at, last_end, waiting, "messages"))
            open_at = None
        outstanding += row.get("generated", 0) - settled
    if open_at is not None and last_end - open_at >= min_s:
        stalls.append(Stall(open_at, last_end, waiting, "messages"))
    return stalls


def find_stalls(requests: Sequence[Any], interval_rows: Sequence[dict[str, Any]],
                end_s: float, answered: bool = True) -> list[Stall]:
    """A run's stalls: from its request log when it has round trips (the Java client's
    log has none), else from its intervals; none when requests get no answer (acks=0)."""
    if not answered:
        return []
    if any(r.rtt_ms >= 0 for r in requests):
        return stalls_from_requests(((r.send_time_s, r.rtt_ms) for r in requests), end_s)
    return stalls_from_intervals(interval_rows)


def stall_warning(stalls: Sequence[Stall]) -> str | None:
    """The summary's words for a run's stalls (the longest named first)."""
    if not stalls:
        return None
    longest = max(stalls, key=lambda s: s.seconds)
    more = len(stalls) - 1
    return (f"stall: {longest.describe()}"
            + (f", and {more} shorter stall{'s' if more > 1 else ''}" if more else "")
            + ". The latency tail is this stall, not the broker's usual pace: on a new Kafka "
            "topic a partition's first writes do this (kbatch primes the topics it runs on "
            "unless --no-prime); otherwise a broker that paused (a leader change, a full "
            "disk, a garbage collection) or a starved machine.")
