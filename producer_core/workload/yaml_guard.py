"""Plain YAML only: the checks a workload file passes before it is composed.

A workload file is data a CI parameter may supply, so it gets no YAML feature that can
blow up or reach code: no explicit tags (`!!python/name:`, `!!binary`, `!local`), no
alias used as a mapping key, and no alias of a list or mapping (an alias of an alias of
a list is how a few hundred bytes grow into gigabytes: "billion laughs"). An alias of a
single value (`rate: {constant: *base}`) is harmless and stays allowed. The scan reads
parser events once, so it takes time and memory linear in the file's length.
"""

from __future__ import annotations

import yaml

from producer_core.errors import UsageError

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's parser when PyYAML has it (tens of times faster than the pure-Python one)."""


class PlainYamlError(UsageError):
    """A workload file uses a YAML feature kbatch refuses (the message names the line)."""


_NODE_EVENTS = (yaml.ScalarEvent, yaml.AliasEvent, yaml.SequenceStartEvent,
                yaml.MappingStartEvent)


def _fail(file: str, event: yaml.Event, message: str) -> PlainYamlError:
    line = event.start_mark.line + 1 if event.start_mark is not None else 0
    return PlainYamlError(f"{file}:{line}: {message}.")


def check_plain_yaml(text: str, file: str = "<workload>") -> None:
    """Raise PlainYamlError on an explicit tag, an alias key or an alias of a collection.
    Raises yaml.YAMLError (the caller's to report) on text that is not YAML at all."""
    collections: set[str] = set()  # anchors naming a list or a mapping
    stack: list[list[int]] = []  # per open collection: [is_mapping, children seen]
    for event in yaml.parse(text, Loader=LOADER):
        if not isinstance(event, _NODE_EVENTS):
            if isinstance(event, yaml.SequenceEndEvent | yaml.MappingEndEvent):
                stack.pop()
            continue
        is_key = bool(stack) and stack[-1][0] == 1 and stack[-1][1] % 2 == 0
        if stack:
            stack[-1][1] += 1
        tag = getattr(event, "tag", None)
        if tag is not None:
            raise _fail(file, event, f"the YAML tag {tag!r} is not allowed: a workload file "
                                     "holds plain values only (numbers, text, lists, mappings)")
        if isinstance(event, yaml.AliasEvent):
            if is_key:
                raise _fail(file, event, f"the alias *{event.anchor} is used as a mapping "
                                         "key; write the key out")
            if event.anchor in collections:
                raise _fail(file, event, f"the alias *{event.anchor} stands for a list or "
                                         "mapping; only aliases of single values are allowed")
            continue
        if is_key and not isinstance(event, yaml.ScalarEvent):
            raise _fail(file, event, "a mapping key must be a single value, not a list or "
                                     "mapping")
        if isinstance(event, yaml.SequenceStartEvent | yaml.MappingStartEvent):
            if event.anchor is not None:
                collections.add(event.anchor)
            stack.append([1 if isinstance(event, yaml.MappingStartEvent) else 0, 0])
