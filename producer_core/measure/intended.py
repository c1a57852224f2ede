"""When each consumed message was intended to be sent, from its id alone.

A message id is `share << 56 | topic index << 40 | sequence` (`message_source`), and a
topic's schedule is rebuilt from the workload exactly as the generator built it (same
horizon, same seed), so the intended offset of sequence k is the schedule's k-th offset.
This is what makes end-to-end latency free of coordinated omission: it is measured from
when the message *should* have been sent, as the ack latency is. Unthrottled topics
(`--rate max`) have no schedule (a message is intended when it is appended): their
offsets are NaN and the caller falls back on the record's timestamp.
"""

from __future__ import annotations

import math

import numpy as np

from producer_core.workload.message_source import SHARE_ID_SHIFT, TOPIC_ID_SHIFT, make_schedule
from producer_core.workload.schedule import PiecewiseSchedule, PoissonSchedule
from producer_core.workload.workload import Workload

SEQUENCE_MASK = (1 << TOPIC_ID_SHIFT) - 1
TOPIC_MASK = (1 << (SHARE_ID_SHIFT - TOPIC_ID_SHIFT)) - 1


def split_ids(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(share, topic index, sequence) of each id."""
    ids = np.asarray(ids, dtype=np.uint64)
    return ((ids >> np.uint64(SHARE_ID_SHIFT)).astype(np.int64),
            ((ids >> np.uint64(TOPIC_ID_SHIFT)) & np.uint64(TOPIC_MASK)).astype(np.int64),
            (ids & np.uint64(SEQUENCE_MASK)).astype(np.int64))


def schedule_offsets(workload: Workload, topic_index: int, count: int) -> np.ndarray:
    """The intended offsets (seconds from the run's start) of a topic's first `count`
    messages; NaN where the topic has no schedule (unthrottled)."""
    spec = workload.topic_specs()[topic_index]
    schedule = make_schedule(spec, workload.duration_s, workload.seed * 7919 + topic_index)
    if count <= 0:
        return np.zeros(0, dtype=np.float64)
    if isinstance(schedule, PiecewiseSchedule):
        return schedule.offsets_of(0, count)
    if isinstance(schedule, PoissonSchedule):
        taken = schedule.take(math.inf, count)
        out = np.full(count, math.inf)
        out[: len(taken)] = taken
        return out
    return np.full(count, math.nan)


def intended_offsets(workload: Workload, ids: np.ndarray) -> np.ndarray:
    """The intended offset of each message id of this workload's share (NaN: unknown,
    which includes ids of other shares or topics this workload does not have)."""
    ids = np.asarray(ids, dtype=np.uint64)
    out = np.full(len(ids), math.nan)
    if not len(ids):
        return out
    shares, topics, sequences = split_ids(ids)
    mine = shares == workload.share_index
    for index in range(len(workload.topic_specs())):
        here = mine & (topics == index)
        if not here.any():
            continue
        table = schedule_offsets(workload, index, int(sequences[here].max()) + 1)
        out[here] = table[sequences[here]]
    return out
