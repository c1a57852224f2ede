"""producer_core's modules import each other without a cycle.

Every import counts, those inside functions and classes too: an import inside a function
runs later than a module-level one, but a circle it closes is still a circle in the
design (two modules that each need the other are one idea split in two), and hiding it
in a function only hides it from a reader. Imports under `if TYPE_CHECKING:` are left
out: they never run and only name types for annotations."""

from __future__ import annotations

import ast
from pathlib import Path

import producer_core

ROOT = Path(producer_core.__file__).parent


def _module_name(path: Path) -> str:
    parts = ["producer_core", *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _all_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of a module, wherever it sits (module level, `if`/`try`,
    functions, classes), except inside `if TYPE_CHECKING:` blocks (never run)."""
    found: list[ast.Import | ast.ImportFrom] = []
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
            continue
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            pending.extend(node.orelse)
            continue
        pending.extend(ast.iter_child_nodes(node))
    return found


def test_every_import_is_read() -> None:
    tree = ast.parse(
        "import a\n"
        "if TYPE_CHECKING:\n    import hidden\nelse:\n    import b\n"
        "def f():\n    import c\n    class K:\n        def g(self):\n"
        "            from d import e\n"
        "try:\n    import f2\nexcept ImportError:\n    import g2\n")
    names = sorted(alias.name if isinstance(node, ast.Import) else node.module or ""
                   for node in _all_imports(tree) for alias in node.names[:1])
    assert names == ["a", "b", "c", "d", "f2", "g2"]


def import_graph() -> dict[str, set[str]]:
    """Module -> the producer_core modules it imports (anywhere in its code)."""
    modules = {_module_name(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _all_imports(ast.parse(path.read_text())):
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
    assert "producer_core.run_types" in graph["producer_core.drivers.librdkafka"]
    assert "producer_core.modes" in graph["producer_core.config"]
    assert "producer_core.core.linger" in graph["producer_core.drivers.engine"]


def test_no_import_cycle_among_producer_core_modules() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_driver_imports_another() -> None:
    graph = import_graph()
    drivers = {"producer_core.drivers.engine", "producer_core.drivers.librdkafka",
               "producer_core.drivers.kafka_java.run"}
    for driver in drivers:
        assert not graph[driver] & (drivers - {driver}), driver
