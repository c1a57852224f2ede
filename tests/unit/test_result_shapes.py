"""The results documents of engine runs keep their key sets and value types
(fixtures/result_shapes.txt, written from main before the producer core was split out).

Each engine mode (and a transactional run) runs on the virtual clock against the fake
cluster; its `Results.to_dict()` is reduced to one line per key path with the JSON type
of its value. A refactoring that drops, renames or retypes a field shows up as a diff.
Regenerate only for an intended change of the format:
    KBATCH_WRITE_RESULT_SHAPES=1 python -m pytest tests/unit/test_result_shapes.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from producer_core.config import build_settings
from producer_core.engine.drivers.engine import Engine
from producer_core.engine.drivers.run_types import RunCall
from producer_core.engine.modes import REGISTRY
from producer_core.workload.workload import Workload
from tests.virtual_run import FakeCluster, run_virtual

FIXTURE = Path(__file__).parent / "fixtures" / "result_shapes.txt"
VARIABLE_KEYS = ("brokers", "topics", "requests_by_broker", "failed_reasons",
                 "unknown_reasons", "discard_reasons", "rate_limit_discards")
"""Objects keyed by data (broker ids, topic names, reasons): their values' shape counts,
not their keys."""


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list):
        return "list"
    return "object"


def shape(value: Any, path: str = "") -> list[str]:
    """`path: type` for every key path (list items merged under `[]`, data-keyed objects
    under `*`)."""
    lines = [f"{path or '.'}: {_kind(value)}"]
    if isinstance(value, dict):
        variable = path.rpartition(".")[2] in VARIABLE_KEYS
        for key in sorted(value):
            lines.extend(shape(value[key], f"{path}.{'*' if variable else key}"))
    elif isinstance(value, list):
        for item in value:
            lines.extend(shape(item, f"{path}[]"))
    return sorted(set(lines))


def _document(mode: str, settings: dict[str, str]) -> dict[str, Any]:
    cluster = FakeCluster()

    async def go() -> Any:
        workload = Workload(rate=2000.0, duration_s=0.1, partitions=6, message_size=40)
        call = RunCall(workload, build_settings(settings, mode=mode), mode, cluster.bootstrap)
        return await Engine(call, cluster).run()  # type: ignore[arg-type]  # a fake cluster

    return json.loads(json.dumps(run_virtual(go).to_dict(), default=str))


def result_shapes() -> str:
    out: list[str] = []
    runs = [(spec.name, spec.name, {}) for spec in REGISTRY if spec.policy is not None]
    runs.append(("partition-transactions", "partition", {"transactional.id": "shape"}))
    for name, mode, settings in runs:
        out.append(f"== {name}")
        out.extend(shape(_document(mode, settings)))
    return "\n".join(out) + "\n"


def test_shape_sees_types_and_paths() -> None:
    assert shape({"a": [1, 2.5], "topics": {"t1": {"n": 1}, "t2": {"n": 2}}}) == sorted([
        ".: object", ".a: list", ".a[]: float", ".a[]: int", ".topics: object",
        ".topics.*: object", ".topics.*.n: int"])


def _blocks(text: str) -> dict[str, set[str]]:
    blocks: dict[str, set[str]] = {}
    current: set[str] = set()
    for line in text.splitlines():
        if line.startswith("== "):
            current = blocks.setdefault(line[3:], set())
        else:
            current.add(line)
    return blocks


def test_result_documents_keep_their_keys_and_types() -> None:
    """Nothing is lost or retyped; the one thing allowed to grow is `.settings` (a new
    shared setting appears there by design)."""
    shapes = result_shapes()
    if os.environ.get("KBATCH_WRITE_RESULT_SHAPES"):
        FIXTURE.write_text(shapes)
    now, before = _blocks(shapes), _blocks(FIXTURE.read_text())
    assert now.keys() == before.keys()
    for name, lines in before.items():
        assert sorted(lines - now[name]) == [], f"{name}: lost or retyped"
        added = [line for line in now[name] - lines if not line.startswith(".settings.")]
        assert added == [], f"{name}: new fields (regenerate the fixture if intended)"
