"""The per-request log of a run as Parquet: one row per ProduceRequest written to the wire.

Columns (docs/reference/results.md): ``send_time_s`` (seconds from the run's start),
``broker`` (node id), ``mode``, ``round``, ``partitions``, ``records``, ``bytes``,
``rtt_ms`` (send -> response; null when no response came, e.g. acks=0 or a failure),
``reason`` (what triggered the send), ``linger_ms`` (oldest message's append -> send) and
``attempt`` (1, or higher for a request carrying a re-sent batch). Row count equals the
run's ``requests_sent``, except where the client reports only totals (mode librdkafka,
``RunMetrics.client_counts``): then the log is empty.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from producer_core.errors import UsageError

if TYPE_CHECKING:
    from producer_core.results.metrics import Results

__all__ = ["REQUEST_LOG_SCHEMA", "read_request_log", "request_table", "write_request_log"]

REQUEST_LOG_SCHEMA = pa.schema([
    pa.field("send_time_s", pa.float64(), nullable=False),
    pa.field("broker", pa.int32(), nullable=False),
    pa.field("mode", pa.string(), nullable=False),
    pa.field("round", pa.int32(), nullable=False),
    pa.field("partitions", pa.int32(), nullable=False),
    pa.field("records", pa.int64(), nullable=False),
    pa.field("bytes", pa.int64(), nullable=False),
    pa.field("rtt_ms", pa.float64(), nullable=True),
    pa.field("reason", pa.string(), nullable=False),
    pa.field("linger_ms", pa.float64(), nullable=False),
    pa.field("attempt", pa.int32(), nullable=False),
])


def request_table(results: Results, round_index: int = 1) -> pa.Table:
    """The run's requests as an Arrow table in REQUEST_LOG_SCHEMA, in send order."""
    requests = results.metrics.requests
    n = len(requests)
    columns = {
        "send_time_s": [r.send_time_s for r in requests],
        "broker": [r.broker for r in requests],
        "mode": [results.mode] * n,
        "round": [round_index] * n,
        "partitions": [r.partitions for r in requests],
        "records": [r.records for r in requests],
        "bytes": [r.bytes for r in requests],
        "rtt_ms": [r.rtt_ms if r.rtt_ms >= 0 else None for r in requests],
        "reason": [r.reason for r in requests],
        "linger_ms": [r.linger_ms for r in requests],
        "attempt": [r.attempt for r in requests],
    }
    return pa.Table.from_pydict(columns, schema=REQUEST_LOG_SCHEMA)


def write_request_log(path: Path, results: Results, round_index: int = 1) -> None:
    """Write the run's request log as one Parquet file (zstd-compressed)."""
    pq.write_table(request_table(results, round_index), path, compression="zstd")


def read_request_log(path: Path) -> pa.Table:
    """Read a request log written by write_request_log; a damaged file is a usage error
    (exit 2) that names it, not a failure of kbatch."""
    try:
        return pq.read_table(path)
    except (OSError, pa.ArrowException) as exc:
        raise UsageError(f"The request log {path} cannot be read ({exc}); it is damaged or "
                         "not a kbatch request log. Write the results again, or leave the "
                         "directory out.") from None
