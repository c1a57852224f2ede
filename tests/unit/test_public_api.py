"""The public face of the engine: `producer_core`'s API (producer_core/__init__.py) and the
extension points the command line and the benchmarks may use beside it.

Why: without a stated boundary every module of `producer_core` is de facto public, and the
next change anywhere breaks a caller nobody knew of. Here the API is one table, loaded
lazily (start-up stays light); `cli/` may import it, the modules it names, and the
extension points listed below; anything else fails, so a new reach into the engine's inside
is a decision taken (add it to the list, with why) rather than an accident.
"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import producer_core

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "producer_core"

CLI_EXTENSION_POINTS: dict[str, str] = {
    # Internal modules the command line may import besides the API and the modules it names
    # (producer_core.API). Each is a tool around the engine that only the CLI drives, or
    # a table the CLI renders; the list is today's (issue 46), not a wish: shrink it when a
    # name moves into the API, and add to it only with a reason.
    "producer_core.bounds": "every option's allowed range (the options' help and checks)",
    "producer_core.properties": "Java .properties files (--command-config, --producer.config)",
    "producer_core.topic_creation": "--topic-config: the topic's own settings",
    "producer_core.engine.drivers.run_checks": "settings checked before any broker starts",
    "producer_core.engine.transport.client_logs": "the reference clients' log lines on stderr",
    "producer_core.engine.transport.transport": "perf-test creates its topic as the Java tool does",
    # the brokers kbatch starts: lab, Kafka, containers, faults
    "producer_core.brokers": "--broker choices and the started cluster's facts",
    "producer_core.brokers.docker": "kbatch image",
    "producer_core.brokers.docker_image": "kbatch image",
    "producer_core.brokers.docker_target": "kbatch lab up --broker docker",
    "producer_core.brokers.faults.runner": "--fault: what the faults did, for the results",
    "producer_core.brokers.faults.spec": "--fault: refused up front when it cannot apply",
    "producer_core.brokers.kafka": "kbatch lab up --broker kafka",
    "producer_core.brokers.kafka_dist": "--kafka-home and the Kafka distribution",
    "producer_core.brokers.kafka_security": "kbatch lab up --security",
    "producer_core.brokers.kafka_target": "kbatch lab: Kafka nodes and their relays",
    "producer_core.brokers.lab": "kbatch lab up (Tansu)",
    "producer_core.brokers.lab.cluster": "kbatch lab: the cluster's shape",
    "producer_core.brokers.lab.delay": "--rtt-ms and --jitter-ms",
    "producer_core.brokers.lab.shape": "kbatch lab: node layout",
    "producer_core.brokers.lab.state": "kbatch lab status, down, restart: the state file",
    # measuring around a run: read-back, consumers, the brokers' cost
    "producer_core.measure.consuming_run": "--consumers: end-to-end latency",
    "producer_core.measure.consumers": "--consumer-config: checked by the client up front",
    "producer_core.measure.metrics_endpoint": "--broker-metrics: the brokers' cost",
    "producer_core.measure.per_run": "a run on its own broker (--fresh-broker)",
    "producer_core.measure.verify_read": "--verify: reading the topic back",
    # what the commands other than produce compute
    "producer_core.analysis.analyze": "kbatch analyze",
    "producer_core.analysis.capacity": "kbatch capacity",
    "producer_core.analysis.gate": "kbatch gate",
    "producer_core.analysis.sweep": "kbatch sweep and capacity: cells and their figures",
    "producer_core.analysis.sweep_run": "kbatch sweep: running the cells",
    "producer_core.analysis.where": "kbatch analyze --where",
    # --runner spark
    "producer_core.distributed.limits": "the Spark options' bounds",
    "producer_core.distributed.plan": "--spark-master and the shares of a run",
    "producer_core.distributed.session": "the Spark session",
    "producer_core.distributed.spark_runner": "--runner spark",
    "producer_core.distributed.sweep_spark": "kbatch sweep --runner spark",
    # results on disk and on screen
    "producer_core.results.histogram": "latency histograms for the report's charts",
    "producer_core.results.intervals": "per-interval rows for the dashboard and charts",
    "producer_core.results.metric_catalog": "every figure's name, unit and JSON path (tables)",
    "producer_core.results.perf_test_format": "kbatch perf-test's output lines",
    "producer_core.results.request_log": "the report's per-request figures",
    "producer_core.results.results_io": "results directories: written and read back",
    "producer_core.results.run_facts": "the facts of a run (broker, host, versions)",
}

BENCHMARK_EXTENSION_POINTS: dict[str, str] = {
    # Internal modules benchmarks/ may import besides `producer_core` itself: they measure
    # the engine's parts and start the clusters, which a script of the API does not need.
    "producer_core.analysis.analyze": "spark_scaling: the analyze step it times",
    "producer_core.analysis.trace_replay": "fidelity: replays a client's trace",
    "producer_core.brokers.kafka": "real Apache Kafka clusters",
    "producer_core.brokers.kafka_dist": "client_throughput: Kafka's jars (ProducerPerformance)",
    "producer_core.brokers.lab": "lab_seed: the embedded lab",
    "producer_core.brokers.lab.protocol": "lab_seed: counts Produce requests per broker",
    "producer_core.distributed.plan": "spark_scaling",
    "producer_core.distributed.session": "spark_scaling",
    "producer_core.distributed.spark_runner": "spark_scaling",
    "producer_core.downloads": "client_throughput: rdkafka_performance in the per-user cache",
    "producer_core.engine.drivers.engine_parts": "adaptive: wraps the policy each run makes",
    "producer_core.engine.drivers.go_clients.driver":
        "client_throughput: the Go driver built first",
    "producer_core.engine.drivers.go_clients.generate":
        "client_throughput: a Go client's own ceiling (the driver generating)",
    "producer_core.engine.drivers.kafka_java.fidelity": "fidelity: the emulation pairs it checks",
    "producer_core.engine.drivers.kafka_java.run": "fidelity: a traced run of the Java producer",
    "producer_core.engine.drivers.librdkafka": "fidelity: a traced run of librdkafka",
    "producer_core.measure.cost_model": "broker_cost: the fitted cost model",
    "producer_core.measure.per_run": "a run on its own broker",
    "producer_core.measure.process_cost": "CPU time of processes",
    "producer_core.results.client_trace": "fidelity: traces saved and read again",
    "producer_core.results.results_io": "results directories",
    "producer_core.results.run_facts": "spark_scaling: a run's facts",
    "producer_core.engine.transport.produce_wire": "produce_rtt: one Produce request on the wire",
    "producer_core.engine.transport.transport": "topics created before a measured run",
}


def modules_of(package: Path) -> set[str]:
    return {".".join(p.relative_to(package.parent).with_suffix("").parts)
            .removesuffix(".__init__") for p in package.rglob("*.py")}


MODULES = modules_of(PACKAGE)


def engine_imports(path: Path) -> dict[str, set[str]]:
    """The `producer_core` modules a file imports (anywhere in it, type-only imports too:
    they tie a caller to a module's names as much as a run-time import does), each with
    the names it takes from it (empty for `import module`)."""
    found: dict[str, set[str]] = {}
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and (
                node.module == "producer_core" or node.module.startswith("producer_core.")):
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                if sub in MODULES:  # `from package import module`
                    found.setdefault(sub, set())
                else:
                    found.setdefault(node.module, set()).add(alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "producer_core":
                    found.setdefault(alias.name, set())
    return found


def imports_under(folder: str) -> dict[str, dict[str, set[str]]]:
    """File (relative to the repository) -> its `engine_imports`."""
    return {str(p.relative_to(ROOT)): engine_imports(p)
            for p in sorted((ROOT / folder).rglob("*.py"))}


# --- the API itself ----------------------------------------------------------------------

def test_every_public_name_is_the_object_its_module_defines() -> None:
    for name, module in producer_core.API.items():
        assert module in MODULES, (name, module)
        assert getattr(producer_core, name) is getattr(importlib.import_module(module), name)


def test_all_lists_the_api() -> None:
    assert sorted(producer_core.__all__) == sorted([*producer_core.API, "API"])
    assert set(producer_core.__all__) <= set(dir(producer_core))


def test_the_type_checking_imports_match_the_table() -> None:
    """Type checkers and editors read the `if TYPE_CHECKING:` block; the run reads `API`."""
    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    block = next(node for node in tree.body
                 if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test))
    typed = {alias.name: node.module for node in block.body
             if isinstance(node, ast.ImportFrom) for alias in node.names}
    assert typed == producer_core.API


def test_no_public_name_hides_a_submodule() -> None:
    """`producer_core.X` must not mean a function here and a module there."""
    tops = {name.split(".")[1] for name in MODULES if name.count(".") >= 1}
    assert not tops & set(producer_core.API)


def test_unknown_names_still_fail_and_submodules_still_import() -> None:
    try:
        producer_core.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("an unknown name resolved")
    from producer_core import errors

    assert errors.__name__ == "producer_core.errors"


def test_importing_the_package_loads_nothing_else() -> None:
    """Lazy: `import producer_core` (which `kbatch --help` does) loads no module of it."""
    probe = ("import sys, json, producer_core\n"
             "print(json.dumps(sorted(m for m in sys.modules if m.startswith('producer_core')"
             " or m in ('numpy', 'aiokafka'))))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, check=True, cwd=ROOT)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == ["producer_core"]


# --- who may import what -----------------------------------------------------------------

def outside(imports: dict[str, dict[str, set[str]]], allowed: set[str]) -> list[str]:
    return sorted(f"{file} imports {module}" for file, modules in imports.items()
                  for module in modules if module not in allowed)


def test_the_check_sees_a_deep_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("from producer_core.engine.core import producer\n"
                      "import producer_core.engine.core.sender\n"
                      "def f():\n    from producer_core.config import build_settings\n")
    assert engine_imports(sample) == {"producer_core.engine.core.producer": set(),
                                      "producer_core.engine.core.sender": set(),
                                      "producer_core.config": {"build_settings"}}
    assert outside({"sample.py": engine_imports(sample)}, {"producer_core.config"}) == [
        "sample.py imports producer_core.engine.core.producer",
        "sample.py imports producer_core.engine.core.sender"]


def test_the_cli_imports_only_the_api_and_its_extension_points() -> None:
    allowed = {"producer_core", *producer_core.API.values(), *CLI_EXTENSION_POINTS}
    deep = outside(imports_under("cli"), allowed)
    assert not deep, ("cli/ reaches into the engine beyond the public API "
                      "(producer_core.API) and CLI_EXTENSION_POINTS:\n" + "\n".join(deep))


def test_the_benchmarks_take_public_names_from_the_api() -> None:
    """A benchmark imports the API's names from `producer_core`, and other internals only
    from BENCHMARK_EXTENSION_POINTS."""
    imports = imports_under("benchmarks")
    deep = outside(imports, {"producer_core", *BENCHMARK_EXTENSION_POINTS})
    assert not deep, "benchmarks/ import internal modules:\n" + "\n".join(deep)
    detour = sorted(f"{file}: {name} from {module}" for file, modules in imports.items()
                    for module, names in modules.items() if module != "producer_core"
                    for name in names if name in producer_core.API)
    assert not detour, "import these from producer_core:\n" + "\n".join(detour)


def test_every_extension_point_is_used_and_internal() -> None:
    """The lists stay today's: an entry nobody imports any more, or one the API now names,
    is taken out (the list shrinks as the API grows)."""
    for folder, points in (("cli", CLI_EXTENSION_POINTS),
                           ("benchmarks", BENCHMARK_EXTENSION_POINTS)):
        used = {module for modules in imports_under(folder).values() for module in modules}
        assert set(points) <= MODULES, folder
        assert not set(points) - used, (folder, sorted(set(points) - used))
        if folder == "cli":
            assert not set(points) & set(producer_core.API.values())


# --- private names stay private ----------------------------------------------------------

PROJECT_FOLDERS = ("producer_core", "cli", "benchmarks", "tests", "docs")
PROJECT_PACKAGES = ("producer_core", "cli", "benchmarks", "tests")


def private_imports(path: Path) -> list[str]:
    """`from module import _name` of a project module, or a project name imported under a
    private alias (`import x as _y`): a leading underscore says "only this module uses it",
    and an importer makes that untrue. Other libraries' private names are their business."""
    found = []
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            project = node.level > 0 or (node.module or "").split(".")[0] in PROJECT_PACKAGES
            for alias in node.names:
                private = alias.name.startswith("_") and not alias.name.startswith("__")
                if project and (private or (alias.asname or "").startswith("_")):
                    found.append(f"{shown}:{node.lineno}: {alias.name}"
                                 + (f" as {alias.asname}" if alias.asname else ""))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if (alias.name.split(".")[0] in PROJECT_PACKAGES
                        and (alias.asname or "").startswith("_")):
                    found.append(f"{shown}:{node.lineno}: {alias.name} as "
                                 f"{alias.asname}")
    return found


def test_the_check_sees_a_private_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("from cli.render.results_tables import _x\n"
                      "from producer_core.engine.modes.spec import setting as _spec\n"
                      "import producer_core.config as _config\n"
                      "from pyspark.sql.types import _parse_datatype_string\n"
                      "from producer_core import __version__\n")
    assert [line.split(": ", 1)[1] for line in private_imports(sample)] == [
        "_x", "setting as _spec", "producer_core.config as _config"]


def test_no_module_imports_another_modules_private_names() -> None:
    found = [line for folder in PROJECT_FOLDERS for path in sorted((ROOT / folder).rglob("*.py"))
             for line in private_imports(path)]
    assert not found, ("private names imported from another module (make the name public "
                       "where it is shared):\n" + "\n".join(found))
