"""Java `.properties` files, read the way `java.util.Properties.load` reads them.

Users keep their client settings in such files (`client.properties`, passed to Kafka's tools
as `--command-config` or `--producer.config`), so kbatch reads the same syntax: `key=value`,
`key: value` and `key value`; `#` and `!` comments; a line ending in an odd number of
backslashes continues on the next (whose leading blanks are dropped); `\\t \\n \\r \\f`,
`\\uXXXX` and `\\<any>` escapes in keys and values. Where Java silently turns a bare word
into a key with an empty value, kbatch reports the line: in a client file that is a typo.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from producer_core.errors import UsageError
from producer_core.input_files import read_regular_file

_BLANKS = " \t\f"
_SEPARATORS = "=:"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


@dataclass(frozen=True)
class Property:
    """One entry of a properties file, with the line it starts on (for error messages)."""

    key: str
    value: str
    line: int


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Join continued lines; return (first physical line number, logical line)."""
    lines = text.splitlines()
    result: list[tuple[int, str]] = []
    index = 0
    while index < len(lines):
        start = index
        line = lines[index].lstrip(_BLANKS)
        index += 1
        if not line or line[0] in "#!":
            continue
        while _continues(line) and index < len(lines):
            line = line[:-1] + lines[index].lstrip(_BLANKS)
            index += 1
        if _continues(line):  # a continuation at the end of the file: Java drops it
            line = line[:-1]
        result.append((start + 1, line))
    return result


def _continues(line: str) -> bool:
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def _unescape(raw: str, where: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(raw):
        char = raw[i]
        i += 1
        if char != "\\" or i >= len(raw):
            out.append(char)
            continue
        char = raw[i]
        i += 1
        if char == "u":
            digits = raw[i:i + 4]
            if len(digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise UsageError(f"{where}: malformed \\uXXXX escape (it needs four hex digits).")
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append(_ESCAPES.get(char, char))
    return "".join(out)


def _split(line: str) -> tuple[str, str, bool]:
    """(raw key, raw value, whether a separator was found), as Properties.load splits."""
    i = 0
    while i < len(line):
        char = line[i]
        if char == "\\":
            i += 2
            continue
        if char in _SEPARATORS or char in _BLANKS:
            break
        i += 1
    key = line[:i]
    rest = line[i:]
    stripped = rest.lstrip(_BLANKS)
    found = len(stripped) != len(rest)
    if stripped[:1] in ("=", ":"):
        stripped = stripped[1:].lstrip(_BLANKS)
        found = True
    return key, stripped, found


def parse_properties(text: str, source: str = "properties") -> list[Property]:
    """Every entry of `text` in file order (a later duplicate overrides an earlier one)."""
    entries = []
    for number, line in _logical_lines(text):
        where = f"{source}, line {number}"
        raw_key, raw_value, separated = _split(line)
        key = _unescape(raw_key, where)
        if not key:
            raise UsageError(f"{where}: the line has no key before its separator; "
                             "expected key=value.")
        if not separated:
            raise UsageError(f"{where}: {_shown(key)} has no value; expected key=value "
                             "(an empty value is written key=).")
        entries.append(Property(key, _unescape(raw_value, where), number))
    return entries


MAX_PROPERTIES_BYTES = 1024 * 1024
"""A client properties file is a few dozen lines; more is a file named by mistake."""


def load_properties(path: Path) -> list[Property]:
    """Read a properties file; a missing, unreadable or malformed file is a UsageError."""
    data = read_regular_file(path, "client properties file", MAX_PROPERTIES_BYTES)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")  # what Properties.load(InputStream) assumes
    return parse_properties(text, str(path))


def _shown(key: str) -> str:
    """A bare word for an error message, only if it looks like a setting name: the line
    could be a pasted password."""
    if len(key) <= 80 and "." in key and re.fullmatch(r"[a-z0-9_.-]+", key):
        return repr(key)
    return "the line"
