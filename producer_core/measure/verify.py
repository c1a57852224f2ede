"""`--verify`: compare what a run says it delivered with what the topics hold (pure logic).

The reading is elsewhere (`producer_core.measure.verify_read`); here are only the sums, so every
rule is testable on synthetic inputs. Inputs per topic: the ids of the messages the run
reports acknowledged, and the records read back (per partition, in offset order, from the
offsets the run started at). Message ids grow per topic and per share of a distributed run
(`message_source`: share << 56 | topic << 40 | sequence), so within a partition the ids of
one stream must grow: a first copy of an id lower than an id read before it is out of order.

Definitions (per topic; docs/guides/faults-and-verify.md, 'Verifying delivery'):

* present: acknowledged ids found at least once;
* missing: acknowledged ids not found (a loss the producer was told did not happen);
* duplicated: records beyond the first copy of an id (each extra copy counts once);
* out_of_order: first copies whose id is lower than an earlier record's id of the same
  stream in the same partition (a duplicate copy is counted as duplicated only);
* unacknowledged_found: distinct ids found that the run did not report acknowledged
  (failed, unknown or acks=0 messages that were written anyway);
* aborted_visible (transactional runs, read with read_committed): ids of aborted
  transactions that a read_committed reader saw; any is a problem.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from producer_core.workload.message_source import TOPIC_ID_SHIFT

COUNTS = ("acknowledged", "records_read", "present", "missing", "duplicated", "out_of_order",
          "unacknowledged_found")


@dataclass(frozen=True)
class TopicCheck:
    """The verdict on one topic."""

    acknowledged: int
    records_read: int
    present: int
    missing: int
    duplicated: int
    out_of_order: int
    unacknowledged_found: int
    aborted_visible: int = 0

    def as_dict(self, transactional: bool = False) -> dict[str, int]:
        """The counts; `aborted_visible` only for a transactional run."""
        counts = asdict(self)
        if not transactional:
            del counts["aborted_visible"]
        return counts


def _ids(values: Iterable[int] | np.ndarray) -> np.ndarray:
    return np.asarray(values if isinstance(values, np.ndarray) else list(values),
                      dtype=np.uint64)


def out_of_order(ids: np.ndarray) -> int:
    """First copies in `ids` (one partition, offset order) lower than an earlier id of their
    stream (the id bits above the per-topic sequence)."""
    if len(ids) < 2:
        return 0
    count = 0
    streams = ids >> np.uint64(TOPIC_ID_SHIFT)
    for stream in np.unique(streams):
        sub = ids[streams == stream]
        earlier_max = np.maximum.accumulate(sub)
        lower = np.zeros(len(sub), dtype=bool)
        lower[1:] = sub[1:] < earlier_max[:-1]
        first = np.zeros(len(sub), dtype=bool)
        first[np.unique(sub, return_index=True)[1]] = True
        count += int(np.count_nonzero(lower & first))
    return count


def check_topic(acknowledged: Iterable[int] | np.ndarray,
                partitions: Mapping[int, Sequence[int] | np.ndarray],
                aborted: Iterable[int] | np.ndarray = ()) -> TopicCheck:
    """Compare the acknowledged ids of a topic with its records read back per partition
    (and, for a transactional run, the ids of its aborted transactions)."""
    acked = np.unique(_ids(acknowledged))
    per_partition = [_ids(ids) for ids in partitions.values()]
    found = np.concatenate(per_partition) if per_partition else np.zeros(0, np.uint64)
    distinct = np.unique(found)
    present = int(np.count_nonzero(np.isin(acked, distinct, assume_unique=True)))
    return TopicCheck(
        acknowledged=len(acked),
        records_read=len(found),
        present=present,
        missing=len(acked) - present,
        duplicated=len(found) - len(distinct),
        out_of_order=sum(out_of_order(ids) for ids in per_partition),
        unacknowledged_found=len(distinct) - present,
        aborted_visible=int(np.count_nonzero(np.isin(np.unique(_ids(aborted)), distinct,
                                                     assume_unique=True))),
    )


def verify_document(topics: Mapping[str, TopicCheck], idempotence: bool, read_complete: bool,
                    read_s: float, transactional: bool = False) -> dict[str, Any]:
    """The results JSON `verify` object: totals, per topic, and the problems found."""
    names = COUNTS + (("aborted_visible",) if transactional else ())
    totals = {name: sum(getattr(check, name) for check in topics.values()) for name in names}
    return {
        **totals,
        "idempotence": idempotence,
        "read_complete": read_complete,
        "read_s": round(read_s, 3),
        "problems": problems(totals, idempotence),
        "topics": {name: check.as_dict(transactional) for name, check in topics.items()},
    }


def problems(totals: Mapping[str, int], idempotence: bool) -> list[str]:
    """What makes a verified run fail: an acknowledged message missing always; duplicates
    and reorders only when idempotence promised there would be none."""
    found = []
    if totals["missing"]:
        found.append(f"{totals['missing']:,} acknowledged messages missing")
    if idempotence and totals["duplicated"]:
        found.append(f"{totals['duplicated']:,} duplicate records with idempotence on")
    if totals.get("aborted_visible"):
        found.append(f"{totals['aborted_visible']:,} records of aborted transactions visible "
                     "to read_committed")
    if idempotence and totals["out_of_order"]:
        found.append(f"{totals['out_of_order']:,} records out of order with idempotence on")
    return found


def idempotence_enabled(document: Mapping[str, Any]) -> bool:
    """A run's results say idempotence was on (absent field, as in older results: off)."""
    section = document.get("idempotence")
    return bool(section.get("enabled")) if isinstance(section, Mapping) else False
