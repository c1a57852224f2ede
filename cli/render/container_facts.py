"""The faults of a run on a cluster kbatch started (``--fault``): aimed at the run's topic,
and named on the interval lines they were active in. Their report reaches the results
through the target's facts (``BrokerTarget.facts``)."""

from __future__ import annotations

from typing import Any

from producer_core.brokers import BrokerTarget


def aim_faults(target: BrokerTarget, workload: Any) -> None:
    """Tell the fault runner the run's topic, for ``leader:P`` targets."""
    if target.faults is not None:
        topics = getattr(workload, "topics", None)
        first = topics[0] if topics else None
        target.faults.topic_hint = getattr(first, "name", None) or getattr(workload, "topic",
                                                                           None)


def fault_note(row: dict[str, Any]) -> str:
    """The faults active during an interval line's interval, as a suffix of the line."""
    from producer_core.brokers.faults.runner import current

    runner = current()
    if runner is None:
        return ""
    if runner.aligned:  # the runner counts from the run's start, as the rows do
        start, end = row["start_s"], row["end_s"]
    else:  # the interval that just ended, on the runner's clock
        end = runner.elapsed()
        start = end - (row["end_s"] - row["start_s"])
    labels = runner.during(start, end)
    return f"  FAULT: {'; '.join(labels)}" if labels else ""


def align_faults(run_elapsed_s: float) -> None:
    """Let ``--fault at=`` count from the run's start (see FaultRunner.align_to_run)."""
    from producer_core.brokers.faults.runner import current

    runner = current()
    if runner is not None:
        runner.align_to_run(run_elapsed_s)
