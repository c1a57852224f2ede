"""Rates named for what they are, over the window the schedule measured.

`achieved_msgs_per_s` is acknowledgements over the run's whole wall time, up to the last
acknowledgement: a run whose 8 s schedule took 33 s to drain read as a producer of 1,960
msg/s (issue 47). A claim about load needs the rate offered (what the schedule intended),
the rate sent (what the generator produced) and the rate acknowledged, each over the same
window: the schedule's, after its warm-up. The run's overrun is the wall time past the
schedule's end. Pure: the inputs are the results' own figures and interval rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def schedule_s(workload: Mapping[str, Any], intended: int, target_rate: float | None
               ) -> float | None:
    """How long the schedule lasts: its duration, or the messages at the target rate
    (the shorter when both bound it); None for an unthrottled count (no schedule)."""
    duration = workload.get("duration_s")
    by_count = intended / target_rate if intended and target_rate else None
    candidates = [float(x) for x in (duration, by_count) if x]
    return min(candidates) if candidates else None


def _in_window(rows: Sequence[Mapping[str, Any]], field: str, start: float, end: float,
               whole_last: bool = False) -> float:
    """A counter of interval rows over [start, end], a row crossing an edge pro rata; with
    `whole_last` a row crossing the end counts whole (messages generated in it were due in
    the window: only lag put them past its end)."""
    total = 0.0
    for row in rows:
        lo, hi = float(row["start_s"]), float(row["end_s"])
        overlap = min(hi, end) - max(lo, start)
        if overlap > 0 and hi > lo:
            share = overlap / (hi - lo)
            if whole_last and lo < end < hi:
                share = (hi - max(lo, start)) / (hi - lo)
            total += row.get(field, 0) * share
    return total


def window_rates(workload: Mapping[str, Any], intended: int, target_rate: float | None,
                 generated: int, acknowledged: int, duration_s: float,
                 rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The `rate` fields: `window_s`, `offered_msgs_per_s`, `sent_msgs_per_s`,
    `acked_msgs_per_s` and `overrun_s`. Without a schedule (an unthrottled count) the
    window is the run's wall time and nothing was offered at a rate (None). Without
    interval rows every message counts as sent and acknowledged in the window when the
    run kept to its schedule, else over the wall time."""
    length = schedule_s(workload, intended, target_rate)
    warmup = min(float(workload.get("warmup_s") or 0.0), length or 0.0)
    if length is None:
        window = max(duration_s, 1e-9)
        return {"window_s": round(window, 3), "offered_msgs_per_s": None,
                "sent_msgs_per_s": round(generated / window, 1),
                "acked_msgs_per_s": round(acknowledged / window, 1), "overrun_s": 0.0}
    window = max(length - warmup, 1e-9)
    if rows:
        sent = _in_window(rows, "generated", warmup, length, whole_last=True)
        acked = _in_window(rows, "acknowledged", warmup, length) - _in_window(
            rows, "aborted", warmup, length)
    else:
        share = window / max(duration_s, length)
        sent, acked = generated * share, acknowledged * share
    return {"window_s": round(window, 3),
            "offered_msgs_per_s": round(intended / length, 1),
            "sent_msgs_per_s": round(sent / window, 1),
            "acked_msgs_per_s": round(acked / window, 1),
            "overrun_s": round(max(0.0, duration_s - length), 3)}
