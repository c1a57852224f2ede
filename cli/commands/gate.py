"""`kbatch gate`: judge saved results against a gates file, for CI."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.table import Table

from cli.app.errors import friendly_errors
from cli.app.lazy_group import start_up_signals
from cli.app.output_paths import writable_file
from cli.render.markdown import table_to_markdown
from cli.render.tables import out

if TYPE_CHECKING:  # the gates' evaluator reads results (numpy, jsonschema): not for --help
    from producer_core.analysis.gate import Verdict

_STYLE = {"pass": "green", "FAIL": "bold red", "ERROR": "bold yellow"}


def verdict_table(verdicts: list[Verdict], title: str) -> Table:
    """Every rule with its measured value, limit and verdict."""
    from producer_core.analysis.gate import format_number

    table = Table(title=title)
    table.add_column("#", justify="right")
    table.add_column("rule", overflow="fold")
    table.add_column("measured", justify="right")
    table.add_column("limit", justify="right")
    table.add_column("verdict")
    for verdict in verdicts:
        status = verdict.status
        measured = "-" if verdict.measured is None else format_number(verdict.measured)
        table.add_row(str(verdict.rule.number), verdict.rule.check, measured,
                      verdict.limit_text(), f"[{_STYLE[status]}]{status}[/]")
    return table


@click.command("gate")
@click.argument("results", nargs=-1, required=True,
                type=click.Path(path_type=Path), metavar="DIR|FILE...")
@click.option("--gates", "gates_path", required=True,
              type=click.Path(dir_okay=False, path_type=Path),
              help="Gates file (TOML) with [[rule]] tables; see docs/guides/gate-ci.md.")
@click.option("--baseline", type=click.Path(path_type=Path), default=None,
              help="Baseline results (directory or JSON) for baseline.* rules; overrides the "
                   "gates file's baseline = \"...\".")
@click.option("--markdown", "markdown_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="Also append the verdict table as Markdown to this file "
                                 "(e.g. $GITHUB_STEP_SUMMARY).")
@friendly_errors
def gate(results: tuple[Path, ...], gates_path: Path, baseline: Path | None,
         markdown_path: Path | None) -> None:
    """Check saved results against the rules of a gates file.

    RESULTS are directories written with --out, or results JSON files; the runs of several
    are pooled by mode. Exit code: 0 every rule holds, 1 a rule fails, 2 a malformed gates
    file, unreadable results, or a metric that is unknown or missing.

    A rule's metric is MODE.NAME, MODE the run's mode as the results name it, versions and
    builds included: kafka-java.p99_ms, librdkafka@2.10.0.p99_ms,
    franz-go@v1.18.0.requests_sent, librdkafka@build-<hex>.failed.

    Example: kbatch gate out/ --gates gates/ci.toml
    """
    with start_up_signals():  # the evaluator and results reader: not for --help
        from producer_core.analysis.gate import MetricSource, evaluate, exit_code, load_gates
        from producer_core.results.results_io import load_results

    if markdown_path is not None:  # before evaluating: a verdict is never lost to it
        writable_file(markdown_path, "--markdown", append=True)
    gates = load_gates(gates_path)
    loaded = [load_results(path) for path in results]
    source = MetricSource.from_documents([item.document for item in loaded],
                                         label=", ".join(str(item.path) for item in loaded))
    baseline_path = baseline or gates.baseline
    baseline_source = None
    if baseline_path is not None:
        base = load_results(baseline_path)
        baseline_source = MetricSource.from_documents(
            [base.document], label=f"baseline {base.path}")
    verdicts = evaluate(gates, source, baseline_source)
    code = exit_code(verdicts)
    title = f"kbatch gate — {gates_path}"
    out.print(verdict_table(verdicts, title))
    failed = [v for v in verdicts if v.status == "FAIL"]
    errors = [v for v in verdicts if v.status == "ERROR"]
    for verdict in failed:
        out.print(f"[bold red]FAIL[/] {verdict.reason()}", highlight=False)
    for verdict in errors:
        click.echo(f"Error: {verdict.reason()}", err=True)
    held = sum(v.status == "pass" for v in verdicts)
    summary = (f"{held} of {len(verdicts)} rules hold" + (f", {len(failed)} fail"
               if failed else "") + (f", {len(errors)} could not be evaluated" if errors
                                     else "") + ".")
    out.print(summary, highlight=False)
    if markdown_path is not None:
        text = table_to_markdown(verdict_table(verdicts, title))
        if failed or errors:
            text += "\n" + "".join(f"- **{v.status}** {v.reason()}\n" for v in failed + errors)
        text += f"\n{summary}\n"
        markdown_path.parent.mkdir(parents=True, exist_ok=True)
        with markdown_path.open("a", encoding="utf-8") as handle:
            handle.write(text + "\n")
    if code:
        sys.exit(code)
