"""What one request, one partition batch and one megabyte cost a broker: a least-squares fit
of measured broker CPU over runs (benchmarks/broker_cost.py, docs/findings/broker-cost.md).

The model is ``cpu_s = a*requests + b*partition_batches + c*MB`` without an intercept (no
requests, no work). With it, one request carrying 1,000 partition batches costs
``a + 1000*b`` and 1,000 requests of one batch each ``1000*(a + b)`` (the same megabytes):
their ratio says how much a many-partition request saves the broker.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def fit(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Least squares cpu = a*requests + b*partition_batches + c*MB (no intercept: no
    requests, no work), with standard errors and the relative error of the fit."""
    usable = [r for r in rows if r["broker_cpu_s"] is not None and r["requests"]]
    x = np.array([[r["requests"], r["partition_batches"], r["mb"]] for r in usable], float)
    y = np.array([r["broker_cpu_s"] for r in usable], float)
    coef, _, rank, _ = np.linalg.lstsq(x, y, rcond=None)
    predicted = x @ coef
    residual = y - predicted
    dof = max(len(y) - x.shape[1], 1)
    sigma2 = float(residual @ residual) / dof
    try:
        stderr = np.sqrt(np.diag(sigma2 * np.linalg.inv(x.T @ x)))
    except np.linalg.LinAlgError:
        stderr = np.full(3, np.nan)
    a, b, c = (float(v) for v in coef)
    one_big = a + 1000 * b
    many_small = 1000 * (a + b)
    return {
        "points": len(y), "rank": int(rank),
        "a_ms_per_request": a * 1e3, "a_stderr_ms": float(stderr[0]) * 1e3,
        "b_ms_per_partition_batch": b * 1e3, "b_stderr_ms": float(stderr[1]) * 1e3,
        "c_s_per_mb": c, "c_stderr_s": float(stderr[2]),
        "rms_error_s": float(np.sqrt(np.mean(residual ** 2))),
        "mean_relative_error_pct": float(np.mean(np.abs(residual) / np.maximum(y, 1e-9))) * 100,
        "r2": float(1 - (residual @ residual) / max(float(((y - y.mean()) ** 2).sum()), 1e-12)),
        "one_1000_partition_request_ms": one_big * 1e3,
        "thousand_1_partition_requests_ms": many_small * 1e3,
        "ratio": many_small / one_big if one_big > 0 else None,
    }
