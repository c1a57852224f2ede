"""The import rules of the whole tree (producer_core/ and cli/): no import circle, and no
import from a lower layer to a higher one (LAYERS, bottom first).

Every import counts, those inside functions and classes too: an import inside a function
runs later than a module-level one, but a circle it closes is still a circle in the
design (two modules that each need the other are one idea split in two), and hiding it
in a function only hides it from a reader. Imports under `if TYPE_CHECKING:` are left
out: they never run and only name types for annotations."""

from __future__ import annotations

import ast
from pathlib import Path

import cli
import producer_core

ROOTS = (Path(producer_core.__file__).parent, Path(cli.__file__).parent)

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # (layer, the modules and packages in it); bottom first. A module belongs to the layer
    # of its longest listed prefix, and may import only from its own layer or lower ones.
    ("shared", ("producer_core", "producer_core.errors", "producer_core.bounds",
                "producer_core.input_files", "producer_core.client_properties",
                "producer_core.properties",
                "producer_core.security", "producer_core.tls_material",
                "producer_core.topic_creation", "producer_core.loop_thread",
                "producer_core.downloads", "producer_core.topic_setting_keys")),
    ("workload", ("producer_core.workload",)),
    ("results", ("producer_core.results",)),
    ("core", ("producer_core.engine.core",)),
    ("modes", ("producer_core.engine.modes",)),
    ("settings", ("producer_core.settings", "producer_core.config")),
    ("transport", ("producer_core.engine.transport",)),
    ("brokers", ("producer_core.brokers",)),
    ("measure", ("producer_core.measure",)),
    ("drivers", ("producer_core.engine.drivers",)),
    ("analysis", ("producer_core.analysis",)),
    ("distributed", ("producer_core.distributed",)),
    # the command line's sub-layers: the app's base, what renders, what it draws, the
    # report and the dashboard built on those, the options, the lab, the steps that run a
    # command, the commands (which parse and hand over) and the entry point
    ("cli.app", ("cli", "cli.app")),
    ("cli.render", ("cli.render",)),
    ("cli.charts", ("cli.charts",)),
    ("cli.report", ("cli.report",)),
    ("cli.dashboard", ("cli.dashboard",)),
    ("cli.options", ("cli.options",)),
    ("cli.lab", ("cli.lab",)),
    ("cli.steps", ("cli.steps",)),
    ("cli.commands", ("cli.commands",)),
    ("cli.main", ("cli.main",)),
)

ENGINE = ("producer_core.engine.core", "producer_core.engine.modes", "producer_core.engine.drivers",
          "producer_core.engine.transport", "producer_core.settings", "producer_core.config")
"""The producer engine: what runs a workload in a mode against a target."""
TOOLS = ("producer_core.brokers", "producer_core.measure", "producer_core.analysis",
         "producer_core.distributed", "cli")
"""The tools around it: where brokers come from, what else is measured, the analyses,
Spark, the command line. The engine never imports them (DESIGN.md)."""


def _module_name(root: Path, path: Path) -> str:
    parts = [root.name, *path.relative_to(root).with_suffix("").parts]
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
    """Module -> the producer_core and cli modules it imports (anywhere in its code)."""
    modules = {_module_name(root, p): p for root in ROOTS for p in root.rglob("*.py")}
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


def layer_of(module: str) -> int:
    """The index in LAYERS of a module's layer (its longest listed prefix)."""
    best, rank = -1, None
    for index, (_, members) in enumerate(LAYERS):
        for prefix in members:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, rank = len(prefix), index
    assert rank is not None, f"{module} is in no layer: add it to LAYERS"
    return rank


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import from a lower layer to a higher one, as 'a (layer) -> b (layer)'."""
    return sorted(
        f"{name} ({LAYERS[layer_of(name)][0]}) -> {target} ({LAYERS[layer_of(target)][0]})"
        for name, targets in graph.items() for target in targets
        if layer_of(target) > layer_of(name))


def test_the_graph_sees_known_edges() -> None:
    graph = import_graph()
    assert "producer_core.engine.drivers.run_types" in graph[
        "producer_core.engine.drivers.librdkafka"]
    assert "producer_core.engine.modes" in graph["producer_core.config"]
    assert "producer_core.engine.core.linger" in graph["producer_core.engine.drivers.engine_parts"]
    assert "producer_core.engine.core.events" in graph["producer_core.engine.drivers.engine"]
    assert "cli.render.results_tables" in graph["cli.report.html_report"]  # cli is read too
    assert "producer_core.brokers.embedded" in graph["producer_core.brokers.target"]


def test_finds_an_upward_import_when_there_is_one() -> None:
    graph = {"producer_core.engine.core.sender": {"producer_core.engine.drivers.engine"},
             "producer_core.engine.drivers.engine": {"producer_core.engine.core.sender"}}
    assert upward_imports(graph) == [
        "producer_core.engine.core.sender (core) -> producer_core.engine.drivers.engine (drivers)"]
    assert layer_of("producer_core.workload.partitioners.topic") == layer_of(
        "producer_core.workload.workload")
    assert layer_of("cli.main") == len(LAYERS) - 1
    assert layer_of("cli.commands.produce") > layer_of("cli.steps.run") > layer_of(
        "cli.options.run") > layer_of("cli.render.tables") > layer_of("cli.app.errors")


def test_every_module_has_a_layer() -> None:
    for module in import_graph():
        layer_of(module)


def test_no_import_cycle_anywhere() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_import_from_a_lower_layer_to_a_higher_one() -> None:
    upward = upward_imports(import_graph())
    assert not upward, "imports that run back up:\n" + "\n".join(upward)


def _within(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def engine_reaching_tools(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{name} -> {target}" for name, targets in graph.items()
                  if _within(name, ENGINE) for target in targets if _within(target, TOOLS))


def test_finds_the_engine_reaching_a_tool_when_it_does() -> None:
    graph = {"producer_core.engine.drivers.go_clients.driver": {"producer_core.brokers.kafka_dist"},
             "producer_core.brokers.kafka": {"producer_core.engine.drivers.engine"}}
    assert engine_reaching_tools(graph) == [
        "producer_core.engine.drivers.go_clients.driver -> producer_core.brokers.kafka_dist"]


def test_the_engine_never_imports_the_tools_around_it() -> None:
    reaching = engine_reaching_tools(import_graph())
    assert not reaching, "the engine imports a tool:\n" + "\n".join(reaching)


def test_no_driver_imports_another() -> None:
    graph = import_graph()
    drivers = {"producer_core.engine.drivers.engine", "producer_core.engine.drivers.librdkafka",
               "producer_core.engine.drivers.kafka_java.run"}
    for driver in drivers:
        assert not graph[driver] & (drivers - {driver}), driver
