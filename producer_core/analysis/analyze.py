"""`kbatch analyze`: a PySpark job over the request logs and results JSON of many runs.

Input: results directories (or results JSON files, or directories holding them at any
depth, such as a CI history). Each run's metadata comes from its JSON (mode, round,
broker, kbatch and broker versions, start date, host, runner, settings, duration); its
requests from its Parquet request log (one row per ProduceRequest). The job filters runs
with `--where` (a condition in kbatch's own language, producer_core.analysis.where) before
reading any log, joins each
request to its run, and aggregates per group (`--group-by`, default run, mode, broker):

- requests, records, bytes, msgs/req, partitions and bytes per request, retried requests;
- round trip (send -> response) percentiles with Spark's `percentile_approx`, whose rank
  error is at most 1/accuracy of the group's requests (accuracy 10,000: 0.01%);
- requests per second: the group's requests over its runs' summed durations (for one run,
  the JSON's `send_rate_per_s`), and over time, per second since each run's start (the
  mean over the group's runs), with its peak.

For one run the figures reproduce the run's JSON: requests, records and bytes exactly,
percentiles within the approximation's error (plus HdrHistogram's 0.1% in the JSON).
Results go to `OUT/summary`, `OUT/requests_per_second` and `OUT/runs` as Parquet.

pyspark is imported lazily; the discovery of runs is plain Python.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import reduce
from pathlib import Path
from typing import Any

from producer_core.analysis.columns import METADATA_COLUMNS
from producer_core.analysis.where import parse_where, to_spark
from producer_core.engine.modes import keeps_request_log
from producer_core.errors import UsageError
from producer_core.results.results_io import RESULTS_FILE, ResultsError, load_results, run_group

DEFAULT_GROUP_BY = ("run", "mode", "broker")
DEFAULT_ACCURACY = 10_000
PERCENTILES = (("p50", 0.50), ("p95", 0.95), ("p99", 0.99), ("p999", 0.999))

REQUEST_COLUMNS = ("node", "reason", "attempt")
"""Request log columns a group may also split by (`node`: the broker's node id)."""
GROUPABLE = tuple(c for c in METADATA_COLUMNS if c not in ("settings", "requests_path")) + (
    REQUEST_COLUMNS)


@dataclass
class RunEntry:
    """One run found in the inputs: its metadata row (METADATA_COLUMNS)."""

    row: dict[str, Any]


@dataclass
class Analysis:
    """What the job found: the summary rows (dicts), where it wrote, what it left out."""

    group_by: tuple[str, ...]
    rows: list[dict[str, Any]]
    runs: int
    out_dir: Path
    notes: list[str] = field(default_factory=list)


# ------------------------------------------------------------------ discovery (pure)


def _results_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise ResultsError(f"No results at {path}: no such file or directory.")
    if (path / RESULTS_FILE).is_file():
        return [path / RESULTS_FILE]
    found = sorted(path.rglob(RESULTS_FILE))
    if not found:
        raise ResultsError(f"No {RESULTS_FILE} in {path} or below it: give results "
                           "directories written with --out (or directories holding them).")
    return found


def _timestamp(text: Any) -> datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def _label(path: Path) -> str:
    parent = path.parent
    return str(parent) if path.name == RESULTS_FILE else str(path)


def find_runs(inputs: Sequence[str | Path]) -> tuple[list[RunEntry], list[str]]:
    """Every run of the inputs with a request log, and notes on the runs left out."""
    if not inputs:
        raise UsageError("Give one or more results directories (or results JSON files).")
    entries: list[RunEntry] = []
    notes: list[str] = []
    seen: set[tuple[Path, str, int]] = set()
    for given in inputs:
        for file in _results_files(Path(given)):
            loaded = load_results(file)
            label = _label(file)
            for run in loaded.runs:
                mode, round_index = run["mode"], int(run.get("round", 1))
                key = (file.resolve(), run_group(run), round_index)
                if key in seen:
                    continue
                seen.add(key)
                name = f"{label}/{run_group(run)}-{round_index}"
                log = loaded.companion(run, "requests")
                if log is None:
                    notes.append(f"{name}: no request log (results written with --json, not "
                                 "--out); left out.")
                    continue
                if run.get("requests_sent", 0) and not keeps_request_log(mode):
                    notes.append(f"{name}: mode {mode} keeps no per-request log (the "
                                 "client reports totals only; see its results JSON); left out.")
                    continue
                entries.append(RunEntry(_metadata(name, file, loaded.document, run, log)))
    return entries, notes


_LOOPBACK_ADDRESS = re.compile(r"\s+at\s+(?:127\.\d+\.\d+\.\d+|localhost):\d+(?:,\S+)*$")


def broker_name(description: str | None) -> str | None:
    """A run's broker description without an embedded broker's loopback address (its port
    differs every run), so runs on the embedded broker or a lab group together."""
    if not description:
        return description
    return _LOOPBACK_ADDRESS.sub("", description)


def _metadata(name: str, file: Path, document: dict[str, Any], run: dict[str, Any],
              log: Path) -> dict[str, Any]:
    started = _timestamp(run.get("started_at") or document.get("started_at"))
    host = run.get("host") or document.get("host") or {}
    workload = run.get("workload") or {}
    topics = workload.get("topics") or []
    partitions = (sum(int(t.get("partitions", 0)) for t in topics) if topics
                  else workload.get("partitions"))
    runner = run.get("runner") or {}
    target = (run.get("rate") or {}).get("target_msgs_per_s")
    settings = run.get("settings") or {}
    return {
        "run": name,
        "results": str(file),
        "mode": run["mode"],
        "round": int(run.get("round", 1)),
        "kind": document.get("kind", "run"),
        "started_at": started,
        "date": started.date() if started else None,
        "kbatch_version": run.get("kbatch_version") or document.get("kbatch_version"),
        "broker": broker_name(run.get("broker") or document.get("broker")),
        "broker_implementation": (run.get("broker_implementation")
                                  or document.get("broker_implementation")),
        "broker_version": run.get("broker_version") or document.get("broker_version"),
        "bootstrap_servers": run.get("bootstrap_servers"),
        "hostname": host.get("hostname"),
        "runner": runner.get("name", "local"),
        "workers": int(runner.get("workers", 1)),
        "topic_partitions": int(partitions) if partitions is not None else None,
        "target_msgs_per_s": None if target is None else float(target),
        "duration_s": float(run["duration_s"]),
        "settings": {str(k): None if v is None else str(v) for k, v in settings.items()},
        "requests_path": str(log.resolve()),
    }


def check_group_by(text: str | Sequence[str]) -> tuple[str, ...]:
    names = [n.strip() for n in text.split(",")] if isinstance(text, str) else list(text)
    names = [n for n in names if n]
    unknown = [n for n in names if n not in GROUPABLE]
    if not names or unknown:
        raise UsageError(f"--group-by: unknown column(s) {', '.join(unknown) or '(none given)'}"
                         f". Columns: {', '.join(GROUPABLE)}.")
    return tuple(dict.fromkeys(names))


# ------------------------------------------------------------------ the Spark job


def session_conf(local_slots: int | None) -> dict[str, str]:
    """Spark settings for the job: on one machine, a few shuffle partitions instead of 200
    (a CI history is small data; on a cluster, adaptive execution sizes them)."""
    if local_slots is None:
        return {}
    return {"spark.sql.shuffle.partitions": str(max(2, 2 * local_slots))}


def runs_schema() -> Any:
    """The Spark schema of the runs' metadata table (METADATA_COLUMNS)."""
    from pyspark.sql.types import _parse_datatype_string  # pyspark's own DDL parser

    fields = ", ".join(f"{name}: {kind}" for name, kind in METADATA_COLUMNS.items())
    return _parse_datatype_string(f"struct<{fields}>")


def _join(left: Any, right: Any, keys: Sequence[str]) -> Any:
    """Null-safe equi-join on `keys`, keeping the left side's key columns."""
    if not keys:
        return left.crossJoin(right)
    renamed = right
    for key in keys:
        renamed = renamed.withColumnRenamed(key, f"_r_{key}")
    condition = reduce(lambda a, b: a & b,
                       [left[k].eqNullSafe(renamed[f"_r_{k}"]) for k in keys])
    joined = left.join(renamed, condition, "left")
    return joined.drop(*[f"_r_{k}" for k in keys])


def _path_key(column: Any) -> Any:
    """Spark's file URI (file:/a%20b/x.parquet) as a local path (/a b/x.parquet)."""
    from pyspark.sql import functions as F

    path = F.regexp_replace(column, r"^file:(//)?", "")
    return F.url_decode(F.regexp_replace(path, r"\+", "%2B"))


def analyze(spark: Any, entries: Sequence[RunEntry], out_dir: Path,
            group_by: Sequence[str] = DEFAULT_GROUP_BY, where: str | None = None,
            accuracy: int = DEFAULT_ACCURACY) -> Analysis:
    """Run the job on `spark` over `entries`; write Parquet under `out_dir`."""
    from pyspark.sql import functions as F

    group = check_group_by(group_by)
    if accuracy < 1:
        raise UsageError(f"--accuracy must be at least 1 (got {accuracy}).")
    if not entries:
        raise UsageError("None of the inputs has a run with a request log to analyze.")
    meta = spark.createDataFrame([e.row for e in entries], runs_schema())
    if where is not None:
        meta = meta.filter(to_spark(parse_where(where)))
    meta = meta.cache()
    if where is not None:
        paths = [row.requests_path for row in meta.select("requests_path").collect()]
    else:  # every run: no Spark job needed to know which logs to read
        paths = [entry.row["requests_path"] for entry in entries]
    if not paths:
        raise UsageError(f"No run matches --where {where!r}.")
    log = (spark.read.parquet(*paths)
           .withColumn("_path", _path_key(F.col("_metadata.file_path")))
           .drop("mode", "round")
           .withColumnRenamed("broker", "node"))
    requests = (log.join(F.broadcast(meta), log["_path"] == meta["requests_path"])
                .drop("_path", "settings", "requests_path").persist())

    per_run = requests.groupBy(*dict.fromkeys([*group, "run"])).agg(
        F.count(F.lit(1)).alias("requests"),
        F.sum("records").alias("records"),
        F.sum("bytes").alias("bytes"),
        F.sum("partitions").alias("_partitions"),
        F.max("partitions").alias("partitions_max"),
        F.sum((F.col("attempt") > 1).cast("long")).alias("retried_requests"),
        F.first("duration_s").alias("duration_s"),
    )
    counts = per_run.groupBy(*group).agg(
        F.count(F.lit(1)).alias("runs"),
        F.sum("requests").alias("requests"),
        F.sum("records").alias("records"),
        F.sum("bytes").alias("bytes"),
        F.sum("_partitions").alias("_partitions"),
        F.max("partitions_max").alias("partitions_max"),
        F.sum("retried_requests").alias("retried_requests"),
        F.sum("duration_s").alias("duration_s"),
    )
    fractions = [fraction for _, fraction in PERCENTILES]
    rtt = requests.groupBy(*group).agg(
        F.percentile_approx("rtt_ms", fractions, accuracy).alias("_rtt"),
        F.max("rtt_ms").alias("rtt_max_ms"),
        F.count("rtt_ms").alias("rtt_count"),
    )
    series = (requests.withColumn("second", F.floor("send_time_s").cast("int"))
              .groupBy(*group, "second").agg(F.count(F.lit(1)).alias("requests")))
    series = _join(series, counts.select(*group, "runs"), group)
    series = series.withColumn("requests_per_s", F.col("requests") / F.col("runs"))
    peaks = series.groupBy(*group).agg(F.max("requests_per_s").alias("peak_req_per_s"))

    summary = _join(_join(counts, rtt, group), peaks, group)
    summary = summary.select(
        *group, "runs", "requests", "records", "bytes",
        (F.col("records") / F.col("requests")).alias("msgs_per_req"),
        (F.col("_partitions") / F.col("requests")).alias("partitions_per_req"),
        "partitions_max",
        (F.col("bytes") / F.col("requests")).alias("bytes_per_req"),
        "retried_requests",
        *[F.col("_rtt")[i].alias(f"rtt_{name}_ms") for i, (name, _) in enumerate(PERCENTILES)],
        "rtt_max_ms", "rtt_count",
        (F.col("requests") / F.col("duration_s")).alias("req_per_s"),
        "peak_req_per_s", "duration_s",
    ).orderBy(*group)
    rows = summary.collect()
    out_dir.mkdir(parents=True, exist_ok=True)
    spark.createDataFrame(rows, summary.schema).coalesce(1).write.mode("overwrite").parquet(
        str(out_dir / "summary"))
    (series.orderBy(*group, "second").coalesce(1).write.mode("overwrite")
     .parquet(str(out_dir / "requests_per_second")))
    meta.drop("requests_path").coalesce(1).write.mode("overwrite").parquet(str(out_dir / "runs"))
    meta.unpersist()
    requests.unpersist()
    return Analysis(group, [row.asDict() for row in rows], len(paths), out_dir)
