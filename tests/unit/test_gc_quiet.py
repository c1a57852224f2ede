"""quiet_gc: a run's setup objects are frozen out of collection and the thresholds are the
run's while any run is on; afterwards everything is as before."""

from __future__ import annotations

import gc
import weakref

from producer_core.engine.drivers.gc_quiet import RUN_THRESHOLDS, quiet_gc


def test_freezes_during_the_block_and_restores_after() -> None:
    before = gc.get_threshold()
    alive = [object() for _ in range(10)] + [[] for _ in range(10)]
    with quiet_gc():
        assert gc.get_freeze_count() >= 10  # what existed at the start, the lists included
        assert gc.get_threshold() == RUN_THRESHOLDS
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == before
    assert alive


def test_nested_runs_restore_only_when_the_last_ends() -> None:
    before = gc.get_threshold()
    with quiet_gc():
        with quiet_gc():
            assert gc.get_threshold() == RUN_THRESHOLDS
        assert gc.get_threshold() == RUN_THRESHOLDS
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_cycles_made_during_a_run_are_still_collected() -> None:
    class Node:
        other: object = None

    with quiet_gc():
        node = Node()
        node.other = node
        ref = weakref.ref(node)
        del node
        gc.collect()
        assert ref() is None


def test_an_exception_in_the_run_still_restores() -> None:
    before = gc.get_threshold()
    try:
        with quiet_gc():
            raise RuntimeError("run failed")
    except RuntimeError:
        pass
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
