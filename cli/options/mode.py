"""`--mode`'s type: a mode name, or ``MODE@VERSION`` for modes that run a real client.

A `click.Choice` still (its help lists the modes, completion offers them); a label with
``@`` is judged by the registry (`producer_core.engine.modes.mode_problem`), which is where
versions are understood."""

from __future__ import annotations

from typing import Any

import click

from producer_core.engine.modes import MODES, mode_problem


class ModeChoice(click.Choice):
    """A registry mode or a versioned label such as ``kafka-java@3.9.1``."""

    def __init__(self) -> None:
        super().__init__(MODES)

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        if isinstance(value, str) and "@" in value:
            problem = mode_problem(value.strip())
            if problem is not None:
                self.fail(problem, param, ctx)
            return value.strip()
        return super().convert(value, param, ctx)
