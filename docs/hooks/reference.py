"""MkDocs hook: the reference pages' tables, generated from the code's own tables at build time.

Why: a hand-kept copy of the settings, metrics, modes, results schema, CLI options or exit
codes drifts with every change; generated from the tables the code runs on, it cannot.
A page asks for a table with a marker line, `<!-- kbatch:generate NAME -->`. Each generator
imports only public names (no leading underscore), so a refactor that moves or renames one
breaks `mkdocs build` (and tests/docs/test_docs_site.py) loudly instead of leaving a page
silently stale. Every generator must be used exactly once, or the build fails.
"""

from __future__ import annotations

import html
import inspect
import json
import re
import signal
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # the hook runs inside mkdocs, maybe not from the repository
    sys.path.insert(0, str(ROOT))

import click  # noqa: E402

MARKER = re.compile(r"^<!-- kbatch:generate ([a-z-]+) -->$", re.MULTILINE)


def cell(text: Any) -> str:
    """Text made safe for one Markdown table cell (no pipes, no stray markup, one line)."""
    value = html.escape(str(text), quote=False)
    value = value.replace("|", "\\|").replace("*", "\\*").replace("_", "\\_")
    return " ".join(value.split())


def code(text: Any) -> str:
    """Inline code in a table cell."""
    return f"`{str(text).replace('|', '¦')}`"


def table(header: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    header = list(header)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


# --- settings (producer_core/config.py) ------------------------------------------------------

def _allowed(spec: Any) -> str:
    if spec.choices:
        return ", ".join(code(c) for c in spec.choices)
    if spec.minimum is not None or spec.maximum is not None:
        low = "" if spec.minimum is None else f"{spec.minimum:,}"
        high = "" if spec.maximum is None else f"{spec.maximum:,}"
        return cell(f"{spec.kind} {low} .. {high}")
    return cell(spec.kind)


def settings_table() -> str:
    from producer_core.config import BRUCE_TOPIC_PREFIX, BRUCE_TOPIC_SETTINGS, SETTINGS

    def rows(specs: Mapping[str, Any], prefix: str = "") -> list[list[str]]:
        return [[code(prefix + spec.name), code(spec.default if spec.default != "" else "(none)"),
                 _allowed(spec), cell(", ".join(spec.modes) or "all"), cell(spec.help)]
                for spec in specs.values()]

    head = ["setting", "default", "allowed", "modes", "meaning"]
    return (table(head, rows(SETTINGS))
            + f"\nMode `bruce`'s per-topic settings, `-X {BRUCE_TOPIC_PREFIX}<topic>.<suffix>`:\n\n"
            + table(head, rows(BRUCE_TOPIC_SETTINGS, f"{BRUCE_TOPIC_PREFIX}<topic>.")))


# --- modes (producer_core/engine/modes/, REGISTRY in its __init__.py) -------------------------

def modes_table() -> str:
    from producer_core.engine.modes import REGISTRY

    rows = []
    for spec in REGISTRY:
        runner = "kbatch's engine" if spec.policy else "its own client"
        rows.append([
            code(spec.name), cell(spec.help), cell(runner),
            cell("yes" if spec.collector else "no"),
            code(spec.window) if spec.window else cell("(chooses its own)"),
            code(spec.sweep_window) if spec.sweep_window else cell("(no window: runs once)"),
            cell(", ".join(spec.reads) or "-"),
            cell("yes" if spec.transactions else "no"),
            cell("; ".join(f"{name}: {why}" for name, why in spec.ignores) or "-"),
        ])
    return table(["mode", "what it does", "run by", "broker-level collector",
                  "`compare-modes --linger-ms` sets", "`sweep --windows` sets",
                  "mode-specific settings", "transactions", "ignored settings"], rows)


# --- metrics (producer_core/results/metric_catalog.py) --------------------------------------------

def metrics_table() -> str:
    from producer_core.results.metric_catalog import METRICS, TOPIC_METRICS

    rows = [[code(m.name), code(m.path), cell(m.unit), cell(m.merge.value),
             cell("yes" if m.summary else "no"), cell(m.change.value if m.summary else "-"),
             code(m.source) if m.source else cell("(derived)")] for m in METRICS]
    topic_rows = [[code(m.field), code(m.path), cell(m.merge.value)] for m in TOPIC_METRICS]
    head = ["name", "JSON path", "unit", "merge of Spark shares", "summary row and gate name",
            "change column", "recorded in RunMetrics"]
    return (table(head, rows)
            + "\nPer topic (`topics.<name>` in a run document):\n\n"
            + table(["TopicMetrics field", "JSON path", "merge"], topic_rows))


# --- results schema (producer_core/schemas/*.json) -------------------------------------------

def _type(node: Mapping[str, Any]) -> str:
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{name})"
    if "oneOf" in node or "anyOf" in node:
        return " or ".join(_type(n) for n in node.get("oneOf", node.get("anyOf", [])))
    kind = node.get("type", "any")
    kind = " or ".join(kind) if isinstance(kind, list) else kind
    if kind == "array" and isinstance(node.get("items"), Mapping):
        return f"array of {_type(node['items'])}"
    if "enum" in node:
        return f"{kind}: " + ", ".join(code(v) for v in node["enum"])
    if "const" in node:
        return f"{kind} = {code(node['const'])}"
    return cell(kind)


def _fields(node: Mapping[str, Any], prefix: str = "") -> list[list[str]]:
    rows = []
    required = set(node.get("required", ()))
    for name, prop in node.get("properties", {}).items():
        path = prefix + name
        rows.append([code(path), _type(prop), cell("yes" if name in required else ""),
                     cell(prop.get("description", ""))])
        if "properties" in prop:
            rows += _fields(prop, path + ".")
    return rows


def schema_tables() -> str:
    from importlib.resources import files

    out = []
    schemas = sorted(files("producer_core").joinpath("schemas").iterdir(), key=lambda p: p.name)
    for path in (p for p in schemas if p.name.endswith(".json")):
        doc = json.loads(path.read_text())
        out.append(f"## `{path.name}`: {cell(doc.get('title', ''))}\n")
        out.append(cell(doc.get("description", "")) + "\n")
        if "oneOf" in doc:
            out.append("A document is one of: " + ", ".join(_type(n) for n in doc["oneOf"]) + ".\n")
        for name, node in doc.get("$defs", {}).items():
            out.append(f"### {name}\n\n{cell(node.get('description', ''))}\n")
            rows = _fields(node)
            if rows:
                out.append(table(["field", "type", "required", "meaning"], rows))
            else:
                out.append(f"Type: {_type(node)}.\n")
    if not out:
        raise RuntimeError("no results schema found under producer_core/schemas")
    return "\n".join(out)


# --- CLI (the Click command tree of cli.main) ------------------------------------------------

def _commands(command: click.Command,
              ctx: click.Context) -> Iterable[tuple[click.Command, click.Context]]:
    yield command, ctx
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from _commands(sub, click.Context(sub, info_name=name, parent=ctx))


def cli_reference() -> str:
    from cli.main import cli

    out = []
    root = click.Context(cli, info_name="kbatch")
    for command, ctx in _commands(cli, root):
        title = ctx.command_path
        out.append(f"## `{title}`\n")
        out.append("```text\n" + command.get_usage(ctx) + "\n```\n")
        if command.help:
            text = inspect.cleandoc(command.help).replace("\b\n", "")
            out.append(html.escape(text, quote=False).replace("*", "\\*") + "\n")
        rows = []
        for param in command.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                if isinstance(param, click.Argument):
                    rows.append([code(param.human_readable_name), cell("argument")])
                continue
            names, help_text = record
            if isinstance(param, click.Argument) and not help_text:
                help_text = "argument"
            rows.append([code(names), cell(help_text)])
        if rows:
            out.append(table(["option", "meaning"], rows))
    return "\n".join(out)


# --- exit codes (cli/app/errors.py, cli/render/outcome.py) ----------------------------------------

def exit_code_table() -> str:
    from cli.app.errors import EXIT_INTERRUPTED, EXIT_RUNTIME, EXIT_USAGE
    from cli.render.outcome import EXIT_OK, EXIT_UNDELIVERED, EXIT_VERIFY

    rows = [
        (EXIT_OK, "EXIT_OK", "success (`kbatch gate`: every rule holds)"),
        (EXIT_RUNTIME, "EXIT_RUNTIME", "runtime failure: unreachable brokers, failed "
         "authentication or TLS, a broker that cannot start or refuses the topic "
         "(`kbatch gate`: a rule failed)"),
        (EXIT_USAGE, "EXIT_USAGE", "usage error, always before any broker starts"),
        (EXIT_UNDELIVERED, "EXIT_UNDELIVERED", "some messages failed or have an unknown "
         "outcome (`--allow-failures` keeps 0)"),
        (EXIT_VERIFY, "EXIT_VERIFY", "`--verify` found a problem (before 3 when both apply), "
         "or its read-back failed and no message failed (results are still written; with "
         "failed messages such a run exits 3)"),
        (EXIT_INTERRUPTED, "EXIT_INTERRUPTED", "interrupted by SIGINT (Ctrl-C)"),
        (128 + signal.SIGTERM, "128 + SIGTERM", "stopped by SIGTERM"),
    ]
    return table(["code", "constant", "meaning"],
                 [[code(n), code(name), cell(text) if "`" not in text else text]
                  for n, name, text in rows])


# --- the public API (producer_core/__init__.py) -------------------------------------------

def api_table() -> str:
    """Every public name of `producer_core`, its module and the first line of its docstring."""
    import producer_core

    rows = []
    for name, module in producer_core.API.items():
        value = getattr(producer_core, name)
        if inspect.isclass(value) or callable(value):
            kind = "class" if inspect.isclass(value) else "function"
            what = (inspect.getdoc(value) or "").split("\n\n")[0]
        elif isinstance(value, Mapping):  # a table: how big (its page lists it)
            kind, what = "dict", f"{len(value)} entries by name"
        else:  # a list of names: the names
            kind, what = type(value).__name__, ", ".join(map(str, value))
        # code spans keep no escapes: the docstrings' backticks are dropped for the cell
        rows.append([code(name), kind, code(module), cell(what.replace("`", ""))])
    return table(["name", "kind", "module", "what"], rows)


GENERATORS: dict[str, Callable[[], str]] = {
    "settings": settings_table,
    "modes": modes_table,
    "metrics": metrics_table,
    "results-schema": schema_tables,
    "cli": cli_reference,
    "exit-codes": exit_code_table,
    "api": api_table,
}

_used: dict[str, str] = {}


def on_pre_build(config: Any) -> None:
    _used.clear()


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise ValueError(f"{page.file.src_uri}: unknown generated table {name!r}")
        if name in _used:
            raise ValueError(f"{page.file.src_uri}: table {name!r} is already in {_used[name]}")
        _used[name] = page.file.src_uri
        return GENERATORS[name]()

    return MARKER.sub(replace, markdown)


def on_post_build(config: Any) -> None:
    missing = sorted(set(GENERATORS) - set(_used))
    if missing:
        raise ValueError(f"generated reference tables used by no page: {', '.join(missing)}")
