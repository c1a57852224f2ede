"""Options a command takes once: given twice with different values they are refused,
never resolved silently by keeping the last (issue 49). The same value twice is one value.

Declare such an option with ``multiple=True`` and ``callback=one_value``; the command
receives the one value (or the option's default when it was not given)."""

from __future__ import annotations

from typing import Any

import click


def one_value(ctx: click.Context, param: click.Parameter, values: Any) -> Any:
    """The option's single value; click's UsageError (exit 2, "Error: ...") for two
    different values (raised while parsing, before the command's body)."""
    if not isinstance(values, tuple):
        return values
    distinct = list(dict.fromkeys(values))
    if len(distinct) > 1:
        name = param.opts[0] if param.opts else str(param.name)
        raise click.UsageError(f"{name} is given {len(distinct)} times with different values "
                         f"({', '.join(repr(v) for v in distinct)}); it takes one. Give it "
                         "once (run again for another value).")
    return distinct[0] if distinct else None
