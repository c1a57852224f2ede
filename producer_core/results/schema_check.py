"""JSON Schema checks of results documents, by a real validator (``jsonschema``).

The results schema (``schemas/results-v1.json``) is standard draft 2020-12; a hand-written
subset checker used to read it and silently skipped keywords it did not know (it let
``interval_s: 0`` through ``exclusiveMinimum: 0``). ``errors`` lists every mismatch as
'path: problem' sentences, ``validate`` raises ``SchemaError`` naming the first few.
``resolve_ref`` stays for code that walks the schema itself (the gate's metric names).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import jsonschema

__all__ = ["SchemaError", "errors", "resolve_ref", "validate"]

_MAX_MESSAGE = 160
"""A mismatch quotes the offending value; a huge one (a hostile file) is cut here."""


class SchemaError(ValueError):
    """A document does not match its schema; the message lists where and why."""


def resolve_ref(root: Mapping[str, Any], ref: str) -> Mapping[str, Any]:
    """The schema a local ``$ref`` (``#/a/b``) points at."""
    if not ref.startswith("#/"):
        raise ValueError(f"only local $ref are supported, got {ref!r}")
    node: Any = root
    for part in ref[2:].split("/"):
        node = node[part]
    return node


_VALIDATORS: dict[tuple[int, str], jsonschema.protocols.Validator] = {}


def _validator(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Any:
    """One compiled validator per (root, sub-schema): the sub-schema with the root's $defs."""
    key = (id(root), json.dumps(schema, sort_keys=True)[:4096])
    validator = _VALIDATORS.get(key)
    if validator is None:
        combined = {**schema}
        if schema is not root and "$defs" in root:
            combined["$defs"] = root["$defs"]
        cls = jsonschema.validators.validator_for(root, default=jsonschema.Draft202012Validator)
        validator = cls(combined)
        _VALIDATORS[key] = validator
    return validator


def _where(error: jsonschema.ValidationError) -> str:
    path = ""
    for part in error.absolute_path:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "(document)"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "..."


def _message(error: jsonschema.ValidationError) -> str:
    """The validator's finding in kbatch's words for the common keywords."""
    keyword, expected, value = error.validator, error.validator_value, error.instance
    if keyword == "required":
        missing = [k for k in expected if isinstance(value, dict) and k not in value]
        return f"required field {missing[0]!r} is missing" if missing else error.message
    if keyword == "type":
        types = expected if isinstance(expected, list) else [expected]
        return f"must be {' or '.join(types)}, got {type(value).__name__} {_short(value)}"
    if keyword == "minimum":
        return f"must be >= {expected}, got {_short(value)}"
    if keyword == "exclusiveMinimum":
        return f"must be > {expected}, got {_short(value)}"
    if keyword == "maximum":
        return f"must be <= {expected}, got {_short(value)}"
    if keyword == "const":
        return f"must be {expected!r}, got {_short(value)}"
    if keyword == "enum":
        return f"must be one of {expected!r}, got {_short(value)}"
    message = error.message
    return message if len(message) <= _MAX_MESSAGE else message[:_MAX_MESSAGE] + "..."


def _sentence(error: jsonschema.ValidationError) -> str:
    return f"{_where(error)}: {_message(error)}"


def errors(value: Any, schema: Mapping[str, Any], root: Mapping[str, Any] | None = None,
           path: str = "") -> list[str]:
    """Every mismatch of ``value`` against ``schema`` (refs resolved in ``root``)."""
    root = schema if root is None else root
    found = sorted(_validator(schema, root).iter_errors(value),
                   key=lambda e: [str(p) for p in e.absolute_path])
    return [(f"{path}." if path else "") + _sentence(e) for e in found]


def validate(value: Any, schema: Mapping[str, Any], root: Mapping[str, Any] | None = None,
             what: str = "document") -> None:
    """Raise SchemaError naming the first few mismatches, if there are any."""
    problems = errors(value, schema, root)
    if problems:
        shown = "; ".join(problems[:8])
        more = f" (and {len(problems) - 8} more)" if len(problems) > 8 else ""
        raise SchemaError(f"{what} does not match the results schema: {shown}{more}.")
