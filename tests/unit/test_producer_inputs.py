"""`Producer`'s edges (issue 46): what the shell knows goes in as `send_ready(now, inputs)`,
and every event has exactly one handler in one table (`HANDLERS`).

Why: fields the shell set before calling `send_ready` made the call order part of the
protocol (the ordering `PollContext` was made to remove); an isinstance chain let an event
type be forgotten silently. The plan dump (test_plan_dump.py) checks the behaviour stayed.
"""

from __future__ import annotations

import math
from typing import Any, get_args

import pytest

from producer_core.engine.core.events import Event, SendInputs, Stop
from producer_core.engine.core.linger.base import PollContext
from producer_core.engine.core.producer import HANDLERS
from tests.unit.test_producer_core import Rig


def test_every_event_type_has_one_handler() -> None:
    assert set(HANDLERS) == set(get_args(Event))


def test_an_unknown_event_is_refused() -> None:
    with pytest.raises(TypeError, match="not a producer event"):
        Rig.build().producer.handle(object(), 0.0)  # type: ignore[arg-type]  # on purpose


def test_a_subclass_is_not_an_event_of_its_base() -> None:
    """Dispatch is by exact type: a subclass needs its own row in the table."""

    class Halt(Stop):
        pass

    with pytest.raises(TypeError):
        Rig.build().producer.handle(Halt(), 0.0)


class _Recording:
    """A policy that plans nothing and keeps every context it was polled with."""

    def __init__(self) -> None:
        self.contexts: list[PollContext] = []

    def poll(self, now: float, context: PollContext) -> list[Any]:
        self.contexts.append(context)
        return []


def polled(rig: Rig, inputs: SendInputs | None = None) -> tuple[Any, ...]:
    recording = _Recording()
    rig.producer.policy = recording  # type: ignore[assignment]  # a recording stand-in
    rig.producer.send_ready(0.0, inputs)
    [context] = recording.contexts
    return context.backlog, context.memory_exhausted, context.flushing


def test_what_the_shell_knows_reaches_the_policy() -> None:
    assert polled(Rig.build()) == (None, False, False)  # no inputs: nothing known
    assert polled(Rig.build(), SendInputs(-math.inf, True, True)) == (-math.inf, True, True)
    assert polled(Rig.build(), SendInputs(backlog=2.5)) == (2.5, False, False)


def test_a_transactions_flush_is_the_producers_own() -> None:
    rig = Rig.build(transactional=True)
    rig.producer.begin_transaction_end(1.0)
    assert rig.producer.flushing
    assert polled(rig, SendInputs()) == (None, False, True)


def test_the_producer_keeps_no_shell_fields() -> None:
    producer = Rig.build().producer
    for name in ("backlog", "memory_exhausted"):
        assert not hasattr(producer, name)
    with pytest.raises(AttributeError):
        producer.flushing = True  # type: ignore[misc]  # read-only on purpose
