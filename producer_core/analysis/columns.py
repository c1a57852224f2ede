"""The columns of the run table `analyze` builds (one row per run) and `--where` filters:
name -> Spark SQL type. Shared by `analyze` and `where`, so neither imports the other's
reason to exist."""

from __future__ import annotations

METADATA_COLUMNS: dict[str, str] = {
    "run": "string",             # <results dir>/<mode>-<round>
    "results": "string",         # path of the results JSON
    "mode": "string",
    "round": "int",
    "kind": "string",            # run | comparison
    "started_at": "timestamp",
    "date": "date",
    "kbatch_version": "string",
    "broker": "string",          # the run's broker, without an embedded broker's port
    "broker_implementation": "string",  # tansu | kafka | external
    "broker_version": "string",
    "bootstrap_servers": "string",
    "hostname": "string",
    "runner": "string",          # local | spark
    "workers": "int",
    "topic_partitions": "int",   # partitions of the workload's topics (all topics)
    "target_msgs_per_s": "double",
    "duration_s": "double",
    "settings": "map<string,string>",
    "requests_path": "string",
}
