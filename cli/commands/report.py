"""`kbatch report`: saved results as the live tables, as Markdown, and as PNG charts. Its
options; what it does is in cli.report.steps."""

from __future__ import annotations

from pathlib import Path

import click

from cli.app.errors import friendly_errors
from cli.app.lazy_group import guarded_import


@click.command("report")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path),
                metavar="DIR|FILE...")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="Directory for report.md and the PNG charts. Default: "
                                 "DIR/report for one results directory, else ./kbatch-report.")
@click.option("--markdown", "markdown_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="Write the Markdown here instead of OUT/report.md.")
@click.option("--charts/--no-charts", default=True, show_default=True,
              help="Draw the PNG charts (matplotlib).")
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="Write the report as ONE self-contained HTML page here "
                                 "(interactive charts, every script inlined: opens offline). "
                                 "Alone (without --out or --markdown) it is the only file "
                                 "written.")
@friendly_errors
def report(inputs: tuple[Path, ...], out_dir: Path | None, markdown_path: Path | None,
           charts: bool, html_path: Path | None = None) -> None:
    """Show saved results as tables, Markdown and charts.

    INPUTS are directories written with --out, or results JSON files (from --json or
    --out). Prints the tables the live command printed (and the per-topic table of a
    multi-topic run); writes report.md, latency.png (percentile distribution),
    requests.png (requests and msgs/req per mode) and over_time.png (messages/s, MB/s,
    requests/s and p50/p99 over the run, from its intervals), one colour per mode.

    Example: kbatch report out/ && cat out/report/report.md >> "$GITHUB_STEP_SUMMARY"
    """
    # the results readers, tables and charts: imported to run, not for --help
    guarded_import("cli.report.steps").report(inputs, out_dir, markdown_path, charts,
                                              html_path)
