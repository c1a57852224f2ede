"""Carry out ``--fault`` specs against a running cluster, on a timer, and keep the record.

The plan (``plan_steps``) is pure: every fault's begin, and its end when it has ``for=``,
in time order. ``FaultRunner`` walks each fault's steps on a thread of its own (a node
that takes a minute to restart holds back no other fault), counting from the run's start:
it finds the node (``leader:P`` asks the cluster's metadata when the fault begins), acts
through ``nodes`` (a ``FaultableNodes``: Docker containers or Kafka JVMs), and records when
each fault began and ended. Closing it cancels what has not begun and undoes what is still
active (heals, resumes, starts killed nodes), so a run's read-back and the cluster's
removal never meet a frozen node. ``current()`` is the runner of this process, which the
interval lines ask what happened during their interval.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from producer_core.brokers.faults.spec import FaultSpec

#: action -> (method that begins it, method that ends it or None)
OPERATIONS: dict[str, tuple[str, str | None]] = {
    "isolate": ("isolate_node", "heal_node"),
    "pause": ("pause_node", "unpause_node"),
    "kill": ("kill_node", "start_node"),
    "restart": ("restart_node", None),
}


class FaultableNodes(Protocol):
    """What a cluster offers the runner (DockerKafkaCluster; KafkaNodes for --broker kafka)."""

    def leader_of(self, partition: int, topic_hint: str | None) -> int | None: ...
    def isolate_node(self, node_id: int) -> None: ...
    def heal_node(self, node_id: int) -> None: ...
    def pause_node(self, node_id: int) -> None: ...
    def unpause_node(self, node_id: int) -> None: ...
    def kill_node(self, node_id: int) -> None: ...
    def start_node(self, node_id: int) -> None: ...
    def restart_node(self, node_id: int) -> None: ...


@dataclass(frozen=True)
class Step:
    at_s: float
    begin: bool
    index: int  # which fault (position on the command line)


def plan_steps(faults: list[FaultSpec]) -> list[Step]:
    """Begins and ends in time order; at equal times ends come first (a node healed at 10 s
    can be cut again at 10 s), then the command line's order."""
    steps = [Step(f.at_s, True, i) for i, f in enumerate(faults)]
    steps += [Step(f.at_s + f.for_s, False, i) for i, f in enumerate(faults)
              if f.for_s is not None and OPERATIONS[f.action][1] is not None]
    return sorted(steps, key=lambda s: (s.at_s, s.begin, s.index))


@dataclass
class FaultRecord:
    """What happened to one fault (times in seconds since the runner started)."""

    spec: FaultSpec
    node: int | None = None
    began_s: float | None = None
    ended_s: float | None = None
    began_at: str | None = None
    ended_at: str | None = None
    error: str | None = None
    undone_at_close: bool = False
    _active: bool = field(default=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "fault": self.spec.text, "action": self.spec.action,
            "target": self.spec.target_text, "node": self.node,
            "planned_at_s": self.spec.at_s, "planned_for_s": self.spec.for_s,
            "began_s": _round(self.began_s), "ended_s": _round(self.ended_s),
            "began_at": self.began_at, "ended_at": self.ended_at,
            "undone_at_close": self.undone_at_close, "error": self.error,
        }

    def label(self) -> str:
        node = f"node {self.node}" if self.node is not None else self.spec.target_text
        target = (f"{node} (leader of p{self.spec.index})" if self.spec.target == "leader"
                  else node)
        return f"{self.spec.action} {target}"


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


_CURRENT: FaultRunner | None = None
#: How long the schedule waits for the run's first progress report before it counts from
#: the moment the cluster was ready.
ALIGN_WAIT_S = 60.0


def current() -> FaultRunner | None:
    return _CURRENT


class FaultRunner:
    """Applies faults on a thread; ``with FaultRunner(...) as runner:`` around the runs."""

    def __init__(self, faults: list[FaultSpec], nodes: FaultableNodes,
                 topic_hint: str | None = None, clock: Callable[[], float] = time.monotonic,
                 log: Callable[[str], None] | None = None) -> None:
        self.faults = faults
        self.nodes = nodes
        self.topic_hint = topic_hint
        self.records = [FaultRecord(f) for f in faults]
        self._clock = clock
        self._log = log or (lambda _message: None)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._locks = [threading.Lock() for _ in faults]
        self.started: float | None = None
        self._aligned = False

    def start(self) -> FaultRunner:
        global _CURRENT
        self.started = self._clock()
        _CURRENT = self
        # One thread per fault: a node that takes a minute to start again must not hold
        # back another fault's schedule.
        steps = plan_steps(self.faults)
        for index in range(len(self.faults)):
            own = [step for step in steps if step.index == index]
            thread = threading.Thread(target=self._walk, args=(own,), daemon=True,
                                      name=f"kbatch-fault-{index + 1}")
            self._threads.append(thread)
            thread.start()
        return self

    def align_to_run(self, run_elapsed_s: float) -> None:
        """Count from the run's start (its first progress report says how long ago that
        was) rather than from the cluster being ready; once, and only before any fault
        began, so a comparison's later runs do not move the schedule."""
        if self._aligned or self.started is None:
            return
        self._aligned = True
        if any(record.began_s is not None for record in self.records):
            return
        self.started = max(self.started, self._clock() - run_elapsed_s)

    def elapsed(self) -> float:
        return 0.0 if self.started is None else self._clock() - self.started

    def _walk(self, steps: list[Step]) -> None:
        # Wait for the run to start (topic creation can take seconds on a loaded machine),
        # but not forever: a run that reports no progress gets the cluster-ready clock.
        while not self._aligned and self.elapsed() < ALIGN_WAIT_S:
            if self._stop.wait(0.05):
                return
        for step in steps:
            # Short waits: the clock may be re-based when the run starts (align_to_run).
            while (wait := step.at_s - self.elapsed()) > 0:
                if self._stop.wait(min(wait, 0.05)):
                    return
            if self._stop.is_set():
                return
            self._do(step)

    def _do(self, step: Step) -> None:
        record = self.records[step.index]
        spec = record.spec
        begin_name, end_name = OPERATIONS[spec.action]
        with self._locks[step.index]:  # this fault's begin, end and undo never overlap
            try:
                if step.begin:
                    record.node = self._node_of(spec)
                    record.began_s, record.began_at = self.elapsed(), _now()
                    record._active = True
                    self._log(f"fault: {record.label()} begins at {record.began_s:.1f} s")
                    getattr(self.nodes, begin_name)(record.node)
                    if end_name is None:  # one step (restart): ends when it returns
                        record.ended_s, record.ended_at = self.elapsed(), _now()
                        record._active = False
                        self._log(f"fault: {record.label()} done at {record.ended_s:.1f} s")
                elif record._active and end_name is not None:
                    assert record.node is not None
                    getattr(self.nodes, end_name)(record.node)
                    record.ended_s, record.ended_at = self.elapsed(), _now()
                    record._active = False
                    self._log(f"fault: {record.label()} ends at {record.ended_s:.1f} s")
            except Exception as exc:  # noqa: BLE001 - recorded in the results, run goes on
                record.error = f"{type(exc).__name__}: {exc}"
                record._active = False
                self._log(f"fault: {spec.text} failed: {record.error}")

    def _node_of(self, spec: FaultSpec) -> int:
        if spec.target == "node":
            return spec.index
        leader = self.nodes.leader_of(spec.index, self.topic_hint)
        if leader is None or leader < 0:
            raise LookupError(f"no leader of partition {spec.index} is known "
                              f"(topic {self.topic_hint or '?'})")
        return leader

    def close(self) -> None:
        """Cancel what has not begun; undo what is still active."""
        global _CURRENT
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=120)
        for record, lock in zip(self.records, self._locks, strict=True):
            with lock:
                end_name = OPERATIONS[record.spec.action][1]
                if record.began_s is None and record.error is None:
                    record.error = "not begun: the run ended before its time came"
                    self._log(f"fault: {record.spec.text} was never applied: the runs "
                              f"ended before {record.spec.at_s:g} s")
                if record._active and end_name is not None and record.node is not None:
                    try:
                        getattr(self.nodes, end_name)(record.node)
                        record.ended_s, record.ended_at = self.elapsed(), _now()
                        record.undone_at_close = True
                    except Exception as exc:  # noqa: BLE001 - the cluster is removed next
                        record.error = f"undo failed: {type(exc).__name__}: {exc}"
                    record._active = False
        if _CURRENT is self:
            _CURRENT = None

    def __enter__(self) -> FaultRunner:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def report(self) -> list[dict[str, Any]]:
        return [record.to_dict() for record in self.records]

    @property
    def aligned(self) -> bool:
        """Whether the clock counts from the run's start (see align_to_run)."""
        return self._aligned

    def during(self, start_s: float, end_s: float) -> list[str]:
        """Faults active during some of (start_s, end_s) (runner seconds), as labels."""
        labels = []
        for record in self.records:
            if record.began_s is None or record.began_s >= end_s:
                continue
            if record.ended_s is not None and record.ended_s <= start_s:
                continue
            labels.append(record.label())
        return labels


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
