"""The Prometheus text exposition format (version 0.0.4), parsed into samples.

What a JMX exporter's ``/metrics`` answers: ``# HELP``/``# TYPE`` comments, and sample
lines ``name{label="value",...} value [timestamp]``. Label values may hold escaped
``\\"``, ``\\\\`` and ``\\n``, commas and braces, so the labels are scanned character by
character rather than split. Values may be ``NaN``, ``+Inf``, ``-Inf``. OpenMetrics'
``# EOF`` is accepted. A line that is not a sample raises ``PrometheusParseError`` with
its number, so a wrong URL (an HTML page) is reported as such, not read as zeros.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n"}


class PrometheusParseError(ValueError):
    """The text is not in the Prometheus text format."""


@dataclass(frozen=True)
class Sample:
    name: str
    labels: tuple[tuple[str, str], ...]
    value: float

    def label(self, key: str) -> str | None:
        return dict(self.labels).get(key)


def parse(text: str) -> list[Sample]:
    """Every sample of an exposition text, in order."""
    samples = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            samples.append(_sample(line))
        except (ValueError, IndexError) as exc:
            shown = line if len(line) <= 80 else line[:77] + "..."
            raise PrometheusParseError(f"line {number} is not a Prometheus sample: "
                                       f"{shown!r} ({exc})") from None
    return samples


def _sample(line: str) -> Sample:
    match = _NAME.match(line)
    if match is None:
        raise ValueError("no metric name")
    name, pos = match.group(), match.end()
    labels: list[tuple[str, str]] = []
    if pos < len(line) and line[pos] == "{":
        labels, pos = _labels(line, pos + 1)
    rest = line[pos:].split()
    if not rest or len(rest) > 2:
        raise ValueError("expected a value and an optional timestamp")
    return Sample(name, tuple(labels), _value(rest[0]))


def _labels(line: str, pos: int) -> tuple[list[tuple[str, str]], int]:
    labels: list[tuple[str, str]] = []
    while True:
        while line[pos] in " \t":
            pos += 1
        if line[pos] == "}":
            return labels, pos + 1
        match = _LABEL_NAME.match(line, pos)
        if match is None:
            raise ValueError(f"bad label name at column {pos + 1}")
        key, pos = match.group(), match.end()
        while line[pos] in " \t":
            pos += 1
        if line[pos] != "=" or line[pos + 1] != '"':
            raise ValueError(f"expected =\" after label {key}")
        pos += 2
        chars = []
        while line[pos] != '"':
            if line[pos] == "\\":
                pos += 1
                chars.append(_ESCAPES.get(line[pos], "\\" + line[pos]))
            else:
                chars.append(line[pos])
            pos += 1
        labels.append((key, "".join(chars)))
        pos += 1
        while line[pos] in " \t":
            pos += 1
        if line[pos] == ",":
            pos += 1
        elif line[pos] != "}":
            raise ValueError(f"expected , or }} at column {pos + 1}")


def _value(text: str) -> float:
    lowered = text.lower()
    if lowered in ("nan",):
        return math.nan
    if lowered in ("+inf", "inf"):
        return math.inf
    if lowered == "-inf":
        return -math.inf
    return float(text)


def select(samples: Iterable[Sample], name: str,
           labels: Mapping[str, str] | None = None) -> list[Sample]:
    """The samples of one metric whose labels include ``labels``."""
    wanted = dict(labels or {})
    return [s for s in samples if s.name == name
            and all(s.label(k) == v for k, v in wanted.items())]
