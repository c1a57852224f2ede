"""`--closed-loop N` and `--think-time-ms`: synchronous senders instead of a rate schedule.

Open loop (`--rate`, the default) asks what a producer does at a given arrival rate; a
closed loop asks how fast N callers that each wait for their acknowledgement go, and what
each send costs them (docs/guides: "Open or closed loop"). Shared by produce,
compare-modes and sweep; the workload carries it (`Workload.closed_loop`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import click

from producer_core.errors import UsageError

if TYPE_CHECKING:
    from producer_core.workload.workload import Workload

CLOSED_LOOP_FLAGS = ("closed_loop", "think_time_ms")


def closed_loop_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The closed-loop flags."""
    options = [
        click.option("--closed-loop", "closed_loop", type=click.IntRange(1, 10_000),
                     default=None, metavar="N",
                     help="N synchronous senders instead of --rate: each sends its next "
                          "message as soon as its previous one is acknowledged (a closed "
                          "loop; the rate is what it achieves). Latency is what each "
                          "sender waited."),
        click.option("--think-time-ms", "think_time_ms", type=click.FloatRange(0, 3_600_000),
                     default=0.0, show_default=True,
                     help="With --closed-loop: each sender's pause between an "
                          "acknowledgement and its next send."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _explicit(name: str) -> bool:
    context = click.get_current_context(silent=True)
    if context is None:
        return False
    source = context.get_parameter_source(name)
    return source is not None and source.name == "COMMANDLINE"


def closed_loop_from_flags(flags: dict[str, Any]) -> tuple[int | None, float]:
    """Take the closed-loop flags out of a command's keyword arguments: (senders, think
    time in seconds)."""
    senders, think_ms = (flags.pop(name) for name in CLOSED_LOOP_FLAGS)
    if senders is None:
        if think_ms:
            raise UsageError("--think-time-ms applies only with --closed-loop N.")
        return None, 0.0
    for name in ("rate", "rates"):
        if name in flags and _explicit(name):
            raise UsageError(f"--{name} and --closed-loop cannot be combined: a closed loop's "
                             "senders send when their previous message is acknowledged, so "
                             "its rate is an outcome, not an input.")
    return senders, think_ms / 1000.0


def with_closed_loop(workload: Workload, loop: tuple[int | None, float]) -> Workload:
    senders, think_s = loop
    if senders is None:
        return workload
    return replace(workload, closed_loop=senders, think_time_s=think_s)
