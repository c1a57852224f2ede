"""Click parameter types with finite bounds: a value outside is refused while parsing,
with one sentence that names the value and what is allowed (exit code 2).

Click's own FloatRange lets NaN through (every comparison with NaN is false) and accepts
infinity and 1e308, which later overflow or hang; these types refuse them.
"""

from __future__ import annotations

import math
from typing import Any

import click


class FiniteFloat(click.ParamType):
    """A finite float in [low, high] (or (low, high] with `low_open`)."""

    name = "NUMBER"

    def __init__(self, low: float, high: float, low_open: bool = False, unit: str = "") -> None:
        self.low, self.high, self.low_open, self.unit = low, high, low_open, unit

    def allowed(self) -> str:
        unit = f" {self.unit}" if self.unit else ""
        if self.low_open:
            return f"a number above {self.low:,g} and at most {self.high:,g}{unit}"
        return f"a number from {self.low:,g} to {self.high:,g}{unit}"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        if isinstance(value, float) and math.isfinite(value):
            number = value
        else:
            try:
                number = float(str(value).strip())
            except ValueError:
                self.fail(f"{value!r} is not a number: give {self.allowed()}.", param, ctx)
        if not math.isfinite(number) or number > self.high or number < self.low or (
                self.low_open and number == self.low):
            self.fail(f"{value!r} is out of range: give {self.allowed()}.", param, ctx)
        return number


class BoundedInt(click.ParamType):
    """A whole number in [low, high], refused (not clamped) outside."""

    name = "INTEGER"

    def __init__(self, low: int, high: int, what: str = "") -> None:
        self.low, self.high, self.what = low, high, what

    def allowed(self) -> str:
        what = f" ({self.what})" if self.what else ""
        return f"a whole number from {self.low:,} to {self.high:,}{what}"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        else:
            text = str(value).strip()
            if len(text) > 40:
                self.fail(f"{text[:20]}... is out of range: give {self.allowed()}.", param, ctx)
            try:
                number = int(text)
            except ValueError:
                self.fail(f"{value!r} is not a whole number: give {self.allowed()}.",
                          param, ctx)
        if not self.low <= number <= self.high:
            self.fail(f"{number} is out of range: give {self.allowed()}.", param, ctx)
        return number
