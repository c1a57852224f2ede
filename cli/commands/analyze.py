"""`kbatch analyze DIR...`: per-run/mode/broker figures of many runs' request logs, on Spark."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from cli.app.errors import friendly_errors
from cli.app.output_paths import writable_dir
from cli.render.tables import console, out
from producer_core.distributed.limits import MASTER_FORMS
from producer_core.errors import KbatchError, UsageError

EPILOG = (
    "Columns for --group-by and --where: run, results, mode, round, kind, started_at, date, "
    "kbatch_version, broker, broker_implementation, broker_version, bootstrap_servers, "
    "hostname, runner, workers, topic_partitions, target_msgs_per_s, duration_s; --where "
    "also settings['linger.ms'] (strings); --group-by also node (broker node id), reason, "
    "attempt. --where is kbatch's own small language: comparisons (= != < <= > >=), AND, OR, "
    "NOT, IN (...), BETWEEN x AND y, IS [NOT] NULL, text in single quotes; no functions, no "
    "subqueries (docs/guides/spark.md, 'kbatch analyze --where'). Example: kbatch analyze results/ "
    "--group-by mode,date --where \"mode != 'none' AND date >= '2025-06-01'\""
)


@click.command(epilog=EPILOG)
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--group-by", "group_by", default="run,mode,broker", show_default=True,
              metavar="COL[,COL...]",
              help="Columns to aggregate by (run metadata, or node/reason/attempt).")
@click.option("--where", default=None, metavar="CONDITION",
              help="Condition on the run metadata (kbatch's own language, checked before "
                   "Spark starts), e.g. \"mode = 'broker' AND "
                   "kbatch_version = '0.1.0' AND date >= '2025-01-01'\".")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              default=Path("kbatch-analysis"), show_default=True,
              help="Directory for the Parquet output: summary/, requests_per_second/, runs/.")
@click.option("--accuracy", type=click.IntRange(min=1), default=10_000, show_default=True,
              help="percentile_approx accuracy: a percentile's rank is off by at most "
                   "1/accuracy of the group's requests.")
@click.option("--spark-master", default="local[*]", show_default=True, metavar="URL",
              help=f"Spark master. Forms: {MASTER_FORMS}.")
@click.option("--spark-conf", multiple=True, metavar="KEY=VALUE",
              help="A Spark setting, e.g. --spark-conf spark.driver.memory=4g. Repeatable.")
@friendly_errors
def analyze(inputs: tuple[Path, ...], group_by: str, where: str | None, out_dir: Path,
            accuracy: int, spark_master: str, spark_conf: tuple[str, ...]) -> None:
    """Analyze the request logs and results JSON of any number of runs with PySpark.

    DIR is a results directory (--out of produce or compare-modes), a results JSON, or a
    directory holding results directories at any depth (a CI history). Per group: requests,
    msgs/req, partitions/req, bytes/req, round-trip percentiles (percentile_approx),
    requests per second (mean and peak second); written as Parquet and printed.
    """
    from producer_core.analysis.analyze import analyze as run_analysis
    from producer_core.analysis.analyze import check_group_by, find_runs, session_conf
    from producer_core.distributed.plan import parse_master
    from producer_core.distributed.session import (
        describe_spark_error,
        parse_conf,
        require_pyspark,
        spark_session,
    )

    master = parse_master(spark_master)
    group = check_group_by(group_by)
    if where is not None:
        from producer_core.analysis.where import parse_where

        parse_where(where)  # refused here, before any JVM starts
    conf = {**session_conf(master.slots), **parse_conf(spark_conf)}
    require_pyspark("kbatch analyze")
    entries, notes = find_runs(inputs)
    writable_dir(out_dir, "--out")
    for note in notes:
        console.print(f"[yellow]Note:[/yellow] {note}")
    console.print(f"Analyzing {len(entries)} run(s) on Spark ({master.url})...")
    began = time.monotonic()
    with spark_session(master.url, "kbatch analyze", master.on_this_machine, conf) as session:
        try:
            analysis = run_analysis(session.spark, entries, out_dir, group, where, accuracy)
        except (UsageError, KbatchError):
            raise
        except Exception as exc:  # a Spark failure: one line, not a Java stack
            raise KbatchError(f"The analysis failed: {describe_spark_error(exc)}. Spark's "
                              f"log: {session.log_path}.") from None
    out.print(summary_table(analysis.group_by, analysis.rows))
    console.print(f"{analysis.runs} run(s) analyzed in {time.monotonic() - began:.1f} s; "
                  f"Parquet in {out_dir}/ (summary, requests_per_second, runs).")


def _number(value: Any, digits: int = 0) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def summary_table(group_by: tuple[str, ...], rows: list[dict[str, Any]]) -> Table:
    table = Table(title="kbatch analyze — per " + ", ".join(group_by))
    for name in group_by:
        table.add_column(name, overflow="fold")
    for name in ("runs", "requests", "msgs/req", "parts/req", "bytes/req", "rtt p50 ms",
                 "p95", "p99", "p99.9", "max", "req/s", "peak req/s"):
        table.add_column(name, justify="right")
    for row in rows:
        table.add_row(
            *[str(row[name]) for name in group_by],
            _number(row["runs"]), _number(row["requests"]), _number(row["msgs_per_req"], 1),
            _number(row["partitions_per_req"], 1), _number(row["bytes_per_req"]),
            _number(row["rtt_p50_ms"], 2), _number(row["rtt_p95_ms"], 2),
            _number(row["rtt_p99_ms"], 2), _number(row["rtt_p999_ms"], 2),
            _number(row["rtt_max_ms"], 2), _number(row["req_per_s"], 1),
            _number(row["peak_req_per_s"], 1),
        )
    return table
