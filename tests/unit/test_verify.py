"""`--verify`'s sums on synthetic read-backs: present, missing, duplicated, out of order."""

from __future__ import annotations

import numpy as np

from producer_core.measure.verify import (
    check_topic,
    idempotence_enabled,
    out_of_order,
    problems,
    verify_document,
)
from producer_core.workload.message_source import SHARE_ID_SHIFT, TOPIC_ID_SHIFT

T1 = 1 << TOPIC_ID_SHIFT  # ids of the second topic of a run


def test_clean_topic() -> None:
    check = check_topic(range(10), {0: [0, 2, 4, 6, 8], 1: [1, 3, 5, 7, 9]})
    assert check.as_dict() == {"acknowledged": 10, "records_read": 10, "present": 10,
                               "missing": 0, "duplicated": 0, "out_of_order": 0,
                               "unacknowledged_found": 0}


def test_missing_acknowledged() -> None:
    check = check_topic(range(6), {0: [0, 2, 4], 1: [1]})
    assert (check.present, check.missing) == (4, 2)


def test_each_extra_copy_is_one_duplicate_and_not_a_reorder() -> None:
    # a retried batch written twice: 0 1 2 | 0 1 2 (two duplicates of three ids: 3 extra)
    check = check_topic(range(3), {0: [0, 1, 2, 0, 1, 2]})
    assert check.duplicated == 3
    assert check.out_of_order == 0
    assert check.present == 3


def test_triple_copy_counts_two() -> None:
    assert check_topic([5], {0: [5, 5, 5]}).duplicated == 2


def test_out_of_order_first_copies() -> None:
    # batch 3-4 landed before batch 1-2 after a retry: 1 and 2 are lower than 4
    assert check_topic(range(5), {0: [0, 3, 4, 1, 2]}).out_of_order == 2


def test_out_of_order_is_per_partition() -> None:
    # ids interleave across partitions; each partition on its own grows
    assert check_topic(range(6), {0: [0, 4, 5], 1: [1, 2, 3]}).out_of_order == 0


def test_streams_of_shares_interleave_without_reorder() -> None:
    share1 = 1 << SHARE_ID_SHIFT
    ids = [0, share1, 1, share1 + 1, 2]
    assert out_of_order(np.asarray(ids, dtype=np.uint64)) == 0
    assert check_topic(ids, {0: [0, share1, 2, share1 + 1, 1]}).out_of_order == 1


def test_unacknowledged_written_anyway() -> None:
    # 3 and 4 failed or timed out with outcome unknown, yet 4 was written (twice)
    check = check_topic([0, 1, 2], {0: [0, 1, 2, 4, 4]})
    assert check.unacknowledged_found == 1
    assert check.duplicated == 1
    assert check.missing == 0


def test_empty_topic_with_acks_is_all_missing() -> None:
    check = check_topic(range(4), {0: [], 1: []})
    assert (check.present, check.missing, check.records_read) == (0, 4, 0)


def test_document_totals_and_problems_with_idempotence() -> None:
    topics = {"a": check_topic(range(3), {0: [0, 1, 1, 2]}),
              "b": check_topic([T1, T1 + 1], {0: [T1 + 1, T1]})}
    doc = verify_document(topics, idempotence=True, read_complete=True, read_s=0.5)
    assert doc["duplicated"] == 1 and doc["out_of_order"] == 1 and doc["missing"] == 0
    assert doc["present"] == 5 and doc["records_read"] == 6
    assert set(doc["topics"]) == {"a", "b"}
    assert len(doc["problems"]) == 2
    assert doc["idempotence"] is True


def test_without_idempotence_duplicates_are_reported_not_problems() -> None:
    topics = {"a": check_topic(range(3), {0: [0, 1, 1, 2, 0]})}
    doc = verify_document(topics, idempotence=False, read_complete=True, read_s=0.1)
    assert doc["duplicated"] == 2
    assert doc["problems"] == []


def test_missing_is_a_problem_either_way() -> None:
    totals = {"missing": 1, "duplicated": 0, "out_of_order": 0}
    assert problems(totals, idempotence=False) == ["1 acknowledged messages missing"]
    assert problems(totals, idempotence=True)


def test_idempotence_flag_from_results() -> None:
    assert idempotence_enabled({"idempotence": {"enabled": True}}) is True
    assert idempotence_enabled({"idempotence": {"enabled": False}}) is False
    assert idempotence_enabled({}) is False
