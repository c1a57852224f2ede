"""Sentences that keep end-to-end figures from misleading a first reader (issue 49).

End-to-end latency is the ack latency plus what the reader waits. With librdkafka's default
``fetch.wait.max.ms`` (500 ms) a broker may hold a fetch that finds little new data up to
that long; the embedded Tansu broker tends to, so at linger 0 the end-to-end p50 sat
~115 ms above the ack p50 with nothing wrong in the producer. When the gap is large and the
user left the wait at its default, the run says so, with the option that shrinks it.
A transactional run read with ``read_uncommitted`` counts aborted records as read: said too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

FETCH_WAIT_KEY = "fetch.wait.max.ms"
DEFAULT_FETCH_WAIT_MS = 500
GAP_FLOOR_MS = 50.0
"""Below this, the gap between end-to-end and ack p50 is not worth a sentence."""


def fetch_wait_note(ack_p50_ms: float, e2e_p50_ms: float, user_config: Mapping[str, Any]
                    ) -> str | None:
    """The fetch wait's share of the end-to-end latency, named when it likely dominates."""
    gap = e2e_p50_ms - ack_p50_ms
    if gap < GAP_FLOOR_MS or FETCH_WAIT_KEY in user_config:
        return None
    return (f"end-to-end p50 {e2e_p50_ms:,.1f} ms is {gap:,.1f} ms above the ack p50 "
            f"{ack_p50_ms:,.1f} ms: most of that gap is likely the consumers' fetch wait, not "
            f"the producer (a broker may hold a fetch up to {FETCH_WAIT_KEY}="
            f"{DEFAULT_FETCH_WAIT_MS} ms, librdkafka's default, when little new data is "
            "waiting; the embedded Tansu broker does). To see the producer's share, run "
            f"with --consumer-config {FETCH_WAIT_KEY}=10.")


def isolation_note(transactional: bool, isolation: str | None) -> str | None:
    """A transactional run read with read_uncommitted: aborted records are read too."""
    if not transactional or isolation != "read_uncommitted":
        return None
    return ("the consumers read with isolation.level=read_uncommitted on a transactional run: "
            "they read aborted records too, so their counts and end-to-end latency include "
            "records no read_committed reader would see (kbatch's default here is "
            "read_committed)")
