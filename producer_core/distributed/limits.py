"""The numbers and forms a distributed run's options quote, without the planner.

`--help` of `produce`, `compare-modes` and `sweep` prints them; the planner
(producer_core.distributed.plan) needs the transport and aiokafka, which a help text
does not (tests/cli/test_startup_imports.py). plan re-exports them.
"""

from __future__ import annotations

DEFAULT_START_LEAD_S = 5.0
"""Seconds from planning to the common start instant: Spark's task launch fits in it."""
MAX_WORKERS = 128
"""Share ids are `index << 56` in a signed 64-bit id, so at most 128 shares."""

MASTER_FORMS = ("local, local[N], local[*], local[N,F], spark://HOST:PORT[,HOST:PORT...], "
                "yarn, k8s://[https://]HOST[:PORT]")
