"""A tiny JSON Schema checker: the subset kbatch's results schema uses, nothing more.

Supported keywords: ``type`` (one or a list), ``properties``, ``required``,
``additionalProperties`` (false or a schema), ``items``, ``const``, ``enum``,
``minimum``, ``oneOf``, ``allOf`` and local ``$ref`` (``#/$defs/...``). Everything else
(``title``, ``description``, ...) is documentation and ignored. The schema file itself is
standard draft 2020-12, so any full validator (e.g. the ``jsonschema`` package) reads it too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["SchemaError", "errors", "resolve_ref", "validate"]


class SchemaError(ValueError):
    """A document does not match its schema; the message lists where and why."""


_TYPES: dict[str, Any] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
}


def resolve_ref(root: Mapping[str, Any], ref: str) -> Mapping[str, Any]:
    """The schema a local ``$ref`` (``#/a/b``) points at."""
    if not ref.startswith("#/"):
        raise ValueError(f"only local $ref are supported, got {ref!r}")
    node: Any = root
    for part in ref[2:].split("/"):
        node = node[part]
    return node


def _where(path: str) -> str:
    return path or "(document)"


def errors(value: Any, schema: Mapping[str, Any], root: Mapping[str, Any] | None = None,
           path: str = "") -> list[str]:
    """Every mismatch of ``value`` against ``schema``, as 'path: problem' sentences."""
    root = schema if root is None else root
    if "$ref" in schema:
        return errors(value, resolve_ref(root, schema["$ref"]), root, path)
    found: list[str] = []
    for sub in schema.get("allOf", ()):
        found += errors(value, sub, root, path)
    if "oneOf" in schema:
        results = [errors(value, sub, root, path) for sub in schema["oneOf"]]
        matching = [r for r in results if not r]
        if len(matching) != 1:
            if not matching:
                best = min(results, key=len)
                found.append(f"{_where(path)}: matches none of the allowed shapes; closest: "
                             + "; ".join(best[:5]))
            else:
                found.append(f"{_where(path)}: matches more than one allowed shape")
    if "const" in schema and value != schema["const"]:
        found.append(f"{_where(path)}: must be {schema['const']!r}, got {value!r}")
    if "enum" in schema and value not in schema["enum"]:
        found.append(f"{_where(path)}: must be one of {schema['enum']!r}, got {value!r}")
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_TYPES[t](value) for t in types):
            found.append(f"{_where(path)}: must be {' or '.join(types)}, "
                         f"got {type(value).__name__} {value!r:.40}")
            return found
    if "minimum" in schema and _TYPES["number"](value) and value < schema["minimum"]:
        found.append(f"{_where(path)}: must be >= {schema['minimum']}, got {value!r}")
    if isinstance(value, dict):
        for key in schema.get("required", ()):
            if key not in value:
                found.append(f"{_where(path)}: required field {key!r} is missing")
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            child = f"{path}.{key}" if path else key
            if key in properties:
                found += errors(item, properties[key], root, child)
            elif extra is False:
                found.append(f"{_where(path)}: unexpected field {key!r}")
            elif isinstance(extra, Mapping):
                found += errors(item, extra, root, child)
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            found += errors(item, schema["items"], root, f"{path}[{index}]")
    return found


def validate(value: Any, schema: Mapping[str, Any], root: Mapping[str, Any] | None = None,
             what: str = "document") -> None:
    """Raise SchemaError naming the first few mismatches, if there are any."""
    problems = errors(value, schema, root)
    if problems:
        shown = "; ".join(problems[:8])
        more = f" (and {len(problems) - 8} more)" if len(problems) > 8 else ""
        raise SchemaError(f"{what} does not match the results schema: {shown}{more}.")
