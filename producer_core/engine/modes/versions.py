"""`CLIENT@VERSION`: the one place a mode label's client version is parsed.

A real client is a driver plus a mode line; its version is only a cache key (DESIGN.md).
So ``kafka-java@3.9.1`` is mode ``kafka-java`` run with kafka-clients 3.9.1, and the label
as a whole names the run everywhere (results, tables, compare's columns), which keeps two
versions of one client apart in one comparison. Which modes take a version, and where
it comes from, each mode declares (`ModeSpec.versions`); this module only reads labels.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SEPARATOR = "@"
VERSION_PATTERN = re.compile(r"[0-9A-Za-z][0-9A-Za-z._+-]{0,63}")
"""A registry version: Maven's (3.9.1, 4.0.0-rc1), PyPI's (2.6.0.post1), Go's (v1.17.0).
Letters, digits and ``._+-``, starting with a letter or digit: never a path, so a version
is safe to use as a cache directory's name."""


@dataclass(frozen=True)
class ModeLabel:
    """A parsed mode label: the registry's mode name and the client version, if any."""

    base: str
    version: str | None = None

    @property
    def label(self) -> str:
        return self.base if self.version is None else f"{self.base}{SEPARATOR}{self.version}"


def parse_label(text: str) -> ModeLabel:
    """``kafka-java@3.9.1`` -> (kafka-java, 3.9.1); ``partition`` -> (partition, None).

    ValueError, with the reason, for an empty or malformed version; whether the mode takes
    a version at all is the registry's question (`producer_core.engine.modes.mode`)."""
    base, separator, version = text.strip().partition(SEPARATOR)
    if not separator:
        return ModeLabel(base)
    if not VERSION_PATTERN.fullmatch(version):
        raise ValueError(
            f"{text!r}: the version after '@' must be a release name of letters, digits "
            "and '._+-' (e.g. kafka-java@3.9.1)")
    return ModeLabel(base, version)


def base_mode(text: str) -> str:
    """The mode a label runs (``kafka-java@3.9.1`` -> ``kafka-java``), without checks."""
    return text.strip().partition(SEPARATOR)[0]


def topic_part(label: str) -> str:
    """A label as part of a topic name (Kafka allows letters, digits and ``._-``):
    ``kafka-java@3.9.1`` -> ``kafka-java-3.9.1``."""
    return re.sub(r"[^0-9A-Za-z._-]", "-", label)
