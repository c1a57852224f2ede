"""The transaction coordinator's requests: FindCoordinator, InitProducerId, AddPartitionsToTxn
and EndTxn.

Retriable answers are asked again after a short pause (Java's TransactionManager: 20 ms
for CONCURRENT_TRANSACTIONS, the retry backoff otherwise), a moved coordinator is looked
up again, and fencing (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH: a newer producer with the
same transactional.id) ends the run with a clear error.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from aiokafka.errors import for_code
from aiokafka.protocol.coordination import FindCoordinatorRequest
from aiokafka.protocol.transaction import AddPartitionsToTxnRequest, EndTxnRequest

from producer_core.engine.transport.transport import Cluster
from producer_core.errors import BrokerError

TRANSACTION_KEY_TYPE = 1
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
CONCURRENT_TRANSACTIONS = 51
OPERATION_NOT_ATTEMPTED = 55
FENCED = frozenset({47, 90})  # INVALID_PRODUCER_EPOCH, PRODUCER_FENCED
CONCURRENT_BACKOFF_S = 0.02
RETRY_BACKOFF_S = 0.1
TIMEOUT_S = 30.0


class TransactionFenced(BrokerError):
    """Another producer with the same transactional.id took over."""


def fenced_message(transactional_id: str, where: str, name: str) -> str:
    return (f"The transactional producer was fenced ({name} on {where}): another producer "
            f"with transactional.id={transactional_id!r} started after this one, so this one "
            "may write nothing more. Use a transactional.id no other producer uses.")


class Coordinator:
    """Talks to the transaction coordinator of one transactional id."""

    def __init__(self, cluster: Cluster, transactional_id: str) -> None:
        self.cluster = cluster
        self.transactional_id = transactional_id
        self.node: int | None = None
        self.sent: dict[str, int] = {}
        """Requests sent per API (retries included): the results' control requests."""

    def count(self, api: str) -> None:
        self.sent[api] = self.sent.get(api, 0) + 1

    async def find(self) -> int:
        """FindCoordinator (key type 1, transaction): the broker that runs our
        transactions. Asked again while the coordinator is not available yet."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + TIMEOUT_S
        while True:
            conn = await self.cluster._any_conn()
            self.count("FindCoordinator")
            response = await conn.send(
                FindCoordinatorRequest(self.transactional_id, TRANSACTION_KEY_TYPE))
            code = response.error_code
            if code == 0:
                self.node = response.coordinator_id
                view = self.cluster.view
                if view is not None and self.node not in view.brokers:
                    await self.cluster.refresh_metadata([])
                return self.node
            error = for_code(code)
            if not error.retriable or loop.time() >= deadline:
                raise BrokerError(
                    f"FindCoordinator for transactional.id={self.transactional_id!r} was "
                    f"refused: {error.__name__}. The broker may not support transactions.")
            await asyncio.sleep(RETRY_BACKOFF_S)

    async def init_producer_id(self, transaction_timeout_ms: int) -> tuple[int, int]:
        """InitProducerId with the transactional id at the coordinator `find` found (which
        also fences any older producer with this id): (producer id, epoch)."""
        assert self.node is not None
        self.count("InitProducerId")
        return await self.cluster.init_producer_id(
            transactional_id=self.transactional_id, coordinator=self.node,
            transaction_timeout_ms=transaction_timeout_ms)

    async def _call(self, what: str, make: Callable[[], Any],
                    codes: Callable[[Any], list[int]]) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + TIMEOUT_S
        while True:
            if self.node is None:
                await self.find()
            assert self.node is not None
            try:
                conn = await self.cluster.connection(self.node)
                self.count(what)
                response = await conn.send(make())
            except BrokerError:
                raise
            except Exception as exc:  # noqa: BLE001 - connection lost: ask again
                if loop.time() >= deadline:
                    raise BrokerError(f"{what} got no answer: {exc}") from None
                self.node = None
                await asyncio.sleep(RETRY_BACKOFF_S)
                continue
            errors = [c for c in codes(response) if c != 0]
            if not errors:
                return
            fenced = [c for c in errors if c in FENCED]
            if fenced:
                raise TransactionFenced(fenced_message(
                    self.transactional_id, what, for_code(fenced[0]).__name__))
            retriable = all(c in (CONCURRENT_TRANSACTIONS, OPERATION_NOT_ATTEMPTED,
                                  NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE)
                            or for_code(c).retriable for c in errors)
            if not retriable or loop.time() >= deadline:
                names = sorted({for_code(c).__name__ for c in errors})
                raise BrokerError(f"{what} for transactional.id={self.transactional_id!r} "
                                  f"was refused: {', '.join(names)}.")
            if any(c in (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE) for c in errors):
                self.node = None
            await asyncio.sleep(CONCURRENT_BACKOFF_S if CONCURRENT_TRANSACTIONS in errors
                                else RETRY_BACKOFF_S)

    async def add_partitions(self, producer_id: int, epoch: int,
                             partitions: list[tuple[str, int]]) -> None:
        """AddPartitionsToTxn: these partitions join the open transaction."""
        topics: dict[str, list[int]] = {}
        for topic, partition in partitions:
            topics.setdefault(topic, []).append(partition)

        def codes(response: Any) -> list[int]:
            return [code for _, parts in response.errors for _, code in parts]

        await self._call("AddPartitionsToTxn", lambda: AddPartitionsToTxnRequest(
            self.transactional_id, producer_id, epoch, list(topics.items())), codes)

    async def end(self, producer_id: int, epoch: int, commit: bool) -> None:
        """EndTxn: commit or abort the open transaction."""
        await self._call("EndTxn", lambda: EndTxnRequest(
            self.transactional_id, producer_id, epoch, commit),
            lambda response: [response.error_code])
