"""``--fault SPEC``: what to do to which node, when, and for how long.

A spec is space-separated ``key=value`` words, one of them the action::

    at=10s isolate=leader:0 for=8s   # at 10 s cut partition 0's leader off its peers, 8 s
    pause=node:2 at=5s for=3s        # freeze node 2 (SIGSTOP / docker pause) for 3 s
    kill=node:3 at=5s                # SIGKILL node 3 (with for=: start it again after)
    restart=node:3 at=5s             # stop node 3 politely and start it again

``at`` counts from the start of the run (of the first run, for compare-modes and sweep;
from the moment the cluster is ready when no run reports progress within 60 s;
default 0); durations take
``ms``, ``s`` or ``m`` (a bare number is seconds). The target is ``node:N`` (a node id,
1-based) or ``leader:P`` (the node leading partition P of the run's topic when the fault
starts). Parsing is pure; which broker supports which action is ``check_supported``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from producer_core.errors import UsageError

#: Action -> whether it takes ``for=`` (and what ``for`` means).
ACTIONS = {
    "isolate": "heal after for= (default: until the run ends)",
    "pause": "resume after for= (default: until the run ends)",
    "kill": "start the node again after for= (default: stays down)",
    "restart": "no for=: a restart is one step",
}
#: Actions each broker kbatch starts supports (isolate needs a network of the run's own).
SUPPORTED = {
    "docker": frozenset(ACTIONS),
    "kafka": frozenset({"pause", "kill", "restart"}),
}
MAX_FAULT_S = 604_800.0  # a week, as every other duration (producer_core/bounds.py)
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m)?$")
_TARGET = re.compile(r"^(node|leader):(\d+)$")
EXAMPLE = "--fault 'at=10s isolate=leader:0 for=8s'"


@dataclass(frozen=True)
class FaultSpec:
    """One fault as asked for on the command line."""

    action: str
    target: str  # "node" or "leader"
    index: int  # node id (node) or partition (leader)
    at_s: float = 0.0
    for_s: float | None = None
    text: str = ""

    @property
    def target_text(self) -> str:
        return f"{self.target}:{self.index}"

    def describe(self) -> str:
        length = f" for {self.for_s:g} s" if self.for_s is not None else ""
        return f"{self.action} {self.target_text} at {self.at_s:g} s{length}"


def parse_duration(text: str, what: str, spec: str) -> float:
    match = _DURATION.match(text.strip().lower())
    if match is None:
        raise _bad(spec, f"{what}={text!r} is not a duration (e.g. 10s, 500ms, 2m)")
    value = float(match.group(1)) * {"ms": 0.001, "s": 1.0, "m": 60.0}[match.group(2) or "s"]
    if not math.isfinite(value) or value > MAX_FAULT_S:
        raise _bad(spec, f"{what}={text} is longer than a week")
    return value


def parse_fault(spec: str) -> FaultSpec:
    """One ``--fault`` value into a FaultSpec; UsageError (exit 2) naming what is wrong."""
    words = spec.split()
    if not words:
        raise _bad(spec, "it is empty")
    fields: dict[str, str] = {}
    for word in words:
        key, sep, value = word.partition("=")
        key = key.lower()
        if not sep or not value:
            raise _bad(spec, f"{word!r} is not key=value")
        if key in fields:
            raise _bad(spec, f"{key}= is given twice")
        if key not in ACTIONS and key not in ("at", "for"):
            raise _bad(spec, f"{key}= is not known (keys: at, for, {', '.join(ACTIONS)})")
        fields[key] = value
    actions = [key for key in fields if key in ACTIONS]
    if len(actions) != 1:
        raise _bad(spec, "it needs exactly one action: " + ", ".join(f"{a}=TARGET"
                                                                      for a in ACTIONS))
    action = actions[0]
    target = _TARGET.match(fields[action].lower())
    if target is None:
        raise _bad(spec, f"{action}={fields[action]} names no target; use node:N (a node id) "
                         "or leader:P (the leader of partition P)")
    kind, index = target.group(1), int(target.group(2))
    if kind == "node" and index < 1:
        raise _bad(spec, "node ids start at 1")
    at_s = parse_duration(fields["at"], "at", spec) if "at" in fields else 0.0
    for_s = parse_duration(fields["for"], "for", spec) if "for" in fields else None
    if for_s is not None and action == "restart":
        raise _bad(spec, "restart is one step and takes no for= (use kill=... for=... to "
                         "keep a node down for a while)")
    if for_s is not None and for_s <= 0:
        raise _bad(spec, "for= must be longer than 0")
    return FaultSpec(action, kind, index, at_s, for_s, " ".join(words))


def parse_faults(specs: tuple[str, ...] | list[str]) -> list[FaultSpec]:
    return [parse_fault(spec) for spec in specs]


def check_supported(faults: list[FaultSpec], broker: str, bootstrap: str | None,
                    nodes: int) -> None:
    """Refuse faults the chosen broker cannot take, or nodes it does not have."""
    if not faults:
        return
    if bootstrap or broker not in SUPPORTED:
        raise UsageError(
            "--fault changes a cluster kbatch started itself: use it with --broker docker "
            "(every action) or --broker kafka (pause, kill, restart); a cluster named by "
            "--bootstrap-servers or the embedded Tansu broker takes no faults.")
    for fault in faults:
        if fault.action not in SUPPORTED[broker]:
            raise UsageError(
                f"--fault '{fault.text}': {fault.action} needs --broker docker (it cuts a "
                "node off its peers on a network of the run's own); --broker "
                f"{broker} takes {', '.join(sorted(SUPPORTED[broker]))}.")
        if fault.target == "node" and fault.index > nodes:
            raise UsageError(f"--fault '{fault.text}': there is no node {fault.index}; the "
                             f"cluster has node{'s 1-' if nodes > 1 else ' '}{nodes}.")


def check_against_run(faults: list[FaultSpec], partitions: int,
                      duration_s: float | None) -> None:
    """Refuse, before any broker starts, a fault that could never apply: ``leader:P`` of a
    partition the run's topic does not have, or an ``at=`` at or after the end of the runs
    (``duration_s`` after the first starts; None when they end by message count)."""
    for fault in faults:
        if fault.target == "leader" and fault.index >= partitions:
            raise UsageError(
                f"--fault '{fault.text}': the run's topic has partition"
                f"{'s 0-' if partitions > 1 else ' '}{partitions - 1}, so there is no "
                f"partition {fault.index} to find the leader of.")
        if duration_s is not None and fault.at_s >= duration_s:
            raise UsageError(
                f"--fault '{fault.text}': at={fault.at_s:g}s is not before the runs end "
                f"({duration_s:g} s after the first one starts, by --duration), so it "
                "would never apply. Give an at= inside the run.")


def _bad(spec: str, why: str) -> UsageError:
    return UsageError(f"--fault {spec!r}: {why}. Example: {EXAMPLE}.")
