"""The transactional producer's bookkeeping, without I/O.

A transaction starts, partitions join it (AddPartitionsToTxn) before any batch of theirs
is sent, and after `transaction.duration.ms` it ends: everything queued is flushed, then
EndTxn commits it (or aborts every K-th, `transaction.abort.every`, and any transaction in
which a batch failed: Java's TransactionManager makes such a transaction abortable only).
This class decides which partitions still need adding, when a transaction is due to end
and whether it commits, and keeps the figures the results report; the producer core
(`producer.Producer`) asks for the requests. Tested with synthetic time
(tests/unit/test_transactions.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class TransactionConfig:
    transactional_id: str
    duration_s: float
    abort_every: int
    """Abort every K-th transaction (0: never)."""
    timeout_ms: int = 60_000
    """transaction.timeout.ms: how long the coordinator lets a transaction stay open."""


@dataclass
class TransactionStats:
    committed: int = 0
    aborted: int = 0
    aborted_records: int = 0
    end_latencies_s: list[float] = field(default_factory=list)
    """From the end decision (flush start) to the EndTxn answer, per transaction."""
    end_txn_latencies_s: list[float] = field(default_factory=list)
    """The EndTxn round trip alone."""
    records: list[int] = field(default_factory=list)
    add_partitions_requests: int = 0
    partitions_added: int = 0
    end_txn_requests: int = 0
    flush_requests: int = 0
    """ProduceRequests sent while a transaction's end flushed the linger policy."""
    flush_s: float = 0.0


class Transactions:
    """One transactional producer's transactions, one at a time."""

    def __init__(self, config: TransactionConfig) -> None:
        self.config = config
        self.number = 0
        """1-based number of the open transaction."""
        self.started = 0.0
        self.added: set[int] = set()
        """Slots AddPartitionsToTxn added to the open transaction."""
        self.adding: set[int] = set()
        """Slots of the AddPartitionsToTxn request in flight."""
        self.wanted: set[int] = set()
        """Slots with data, not added and not being added yet."""
        self.ending = False
        self.end_started = 0.0
        self.failed_in_txn = 0
        self.acked_in_txn = 0
        self.acked_by_slot: dict[int, int] = {}
        self.stats = TransactionStats()

    def begin(self, now: float) -> None:
        self.number += 1
        self.started = now
        self.added.clear()
        self.ending = False
        self.failed_in_txn = 0
        self.acked_in_txn = 0
        self.acked_by_slot = {}

    # ------------------------------------------------------------- partitions
    def need(self, slots: Iterable[int]) -> None:
        """These slots have data for the open transaction."""
        for slot in slots:
            if slot not in self.added and slot not in self.adding:
                self.wanted.add(slot)

    def missing(self, slots: Iterable[int]) -> list[int]:
        """Those of `slots` that are not in the transaction yet (their batches must wait)."""
        return [slot for slot in slots if slot not in self.added]

    def next_add(self) -> list[int] | None:
        """The slots for the next AddPartitionsToTxn, if one may go now (one at a time,
        as Java's TransactionManager)."""
        if self.adding or not self.wanted:
            return None
        self.adding, self.wanted = self.wanted, set()
        self.stats.add_partitions_requests += 1
        return sorted(self.adding)

    def on_added(self) -> list[int]:
        """The AddPartitionsToTxn in flight succeeded: its slots are in the transaction."""
        done = sorted(self.adding)
        self.added.update(done)
        self.stats.partitions_added += len(done)
        self.adding = set()
        return done

    # ------------------------------------------------------------ outcomes
    def on_acknowledged(self, slot: int, records: int) -> None:
        self.acked_in_txn += records
        self.acked_by_slot[slot] = self.acked_by_slot.get(slot, 0) + records

    def on_failed(self, records: int) -> None:
        self.failed_in_txn += records

    # ---------------------------------------------------------------- ending
    def due(self, now: float) -> bool:
        """Whether the open transaction has lasted `transaction.duration.ms`."""
        return not self.ending and now >= self.started + self.config.duration_s

    def start_end(self, now: float) -> None:
        self.ending = True
        self.end_started = now

    @property
    def empty(self) -> bool:
        """Nothing was added: the transaction ends without EndTxn (as Java)."""
        return not self.added and not self.adding

    def commits(self) -> bool:
        """Whether the ending transaction commits (else it aborts)."""
        every = self.config.abort_every
        if every > 0 and self.number % every == 0:
            return False
        return self.failed_in_txn == 0

    def on_flushed(self, now: float, requests: int) -> None:
        self.stats.flush_requests += requests
        self.stats.flush_s += now - self.end_started

    def on_ended(self, committed: bool, end_txn_s: float, now: float) -> dict[int, int]:
        """EndTxn answered (or the transaction was empty). Returns, for an abort, the
        acknowledged records per slot that are now aborted."""
        stats = self.stats
        aborted: dict[int, int] = {}
        if not self.empty:
            stats.end_txn_requests += 1
            stats.end_txn_latencies_s.append(end_txn_s)
            stats.end_latencies_s.append(now - self.end_started)
            stats.records.append(self.acked_in_txn)
            if committed:
                stats.committed += 1
            else:
                stats.aborted += 1
                stats.aborted_records += self.acked_in_txn
                aborted = dict(self.acked_by_slot)
        self.begin(now)
        return aborted

    # --------------------------------------------------------------- results
    def as_dict(self, sent: Mapping[str, int] | None = None) -> dict[str, object]:
        """The results JSON `transactions` object; `sent`: the coordinator requests
        actually sent (retries included), by API name, when they were counted."""
        s = self.stats
        control: dict[str, int] = {"add_partitions_to_txn": s.add_partitions_requests,
                                   "end_txn": s.end_txn_requests}
        if sent is not None:
            control = {_snake(name): count for name, count in sorted(sent.items())}
            control.setdefault("add_partitions_to_txn", 0)
            control.setdefault("end_txn", 0)
        return {
            "transactional_id": self.config.transactional_id,
            "duration_ms": self.config.duration_s * 1000,
            "abort_every": self.config.abort_every,
            "committed": s.committed,
            "aborted": s.aborted,
            "aborted_records": s.aborted_records,
            "commit_latency": _latency(s.end_latencies_s),
            "end_txn_latency": _latency(s.end_txn_latencies_s),
            "records_per_transaction": _spread(s.records),
            "control_requests": control,
            "partitions_added": s.partitions_added,
            "flush_requests": s.flush_requests,
            "flush_ms": round(s.flush_s * 1000, 3),
        }


def _snake(name: str) -> str:
    """AddPartitionsToTxn -> add_partitions_to_txn."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _latency(values_s: list[float]) -> dict[str, float]:
    if not values_s:
        return {"p50_ms": 0.0, "p99_ms": 0.0, "max_ms": 0.0}
    ms = np.asarray(values_s) * 1000
    return {"p50_ms": round(float(np.percentile(ms, 50)), 3),
            "p99_ms": round(float(np.percentile(ms, 99)), 3),
            "max_ms": round(float(ms.max()), 3)}


def _spread(values: list[int]) -> dict[str, float]:
    if not values:
        return {"mean": 0.0, "min": 0, "max": 0}
    return {"mean": round(float(np.mean(values)), 3), "min": int(min(values)),
            "max": int(max(values))}
