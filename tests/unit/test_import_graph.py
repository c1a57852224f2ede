"""producer_core's modules import each other without a cycle (top-level imports only:
an import inside a function runs on first call, after every module has loaded)."""

from __future__ import annotations

import ast
from pathlib import Path

import producer_core

ROOT = Path(producer_core.__file__).parent


def _module_name(path: Path) -> str:
    parts = ["producer_core", *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _top_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Module-level imports, including those under `if`/`try` at module level, but not
    `if TYPE_CHECKING:` blocks (never run) or imports inside functions and classes."""
    found: list[ast.Import | ast.ImportFrom] = []
    body = list(tree.body)
    while body:
        node = body.pop(0)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif isinstance(node, ast.If):
            if "TYPE_CHECKING" not in ast.unparse(node.test):
                body.extend(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            body.extend(node.body + node.orelse + node.finalbody)
            for handler in node.handlers:
                body.extend(handler.body)
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the producer_core modules it imports at load time."""
    modules = {_module_name(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _top_level_imports(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                # `from pkg import mod` imports the submodule pkg.mod when there is one
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules
                           else base for alias in node.names]
            for target in targets:
                # importing a.b.c loads a and a.b first (the importer's own packages
                # are loading already: a package may import its submodules)
                parts = target.split(".")
                for end in range(1, len(parts) + 1):
                    prefix = ".".join(parts[:end])
                    if prefix in modules and not (name + ".").startswith(prefix + "."):
                        graph[name].add(prefix)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a list of modules (first == last), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_finds_a_cycle_when_there_is_one() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_the_graph_sees_known_edges() -> None:
    graph = import_graph()
    assert "producer_core.run_types" in graph["producer_core.librdkafka_engine"]
    assert "producer_core.modes" in graph["producer_core.config"]
    assert "producer_core.linger" in graph["producer_core.engine"]


def test_no_import_cycle_among_producer_core_modules() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_driver_imports_another() -> None:
    graph = import_graph()
    drivers = {"producer_core.engine", "producer_core.librdkafka_engine",
               "producer_core.kafka_java.run"}
    for driver in drivers:
        assert not graph[driver] & (drivers - {driver}), driver
