"""What passes between the pure producer and its shell: the events the shell tells
`Producer.handle` (a response, a written request, a coordinator found, metadata...), the
inputs of a send turn (`SendInputs`), and the commands the producer answers (write this
request, find the coordinator, ask for a producer id...). One module, so a driver reads the
whole conversation in one place; `producer_core.engine.core.producer` holds the decisions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from producer_core.errors import BrokerError


# ----------------------------------------------------------------------- events
@dataclass(frozen=True)
class ResponseReceived:
    """A ProduceResponse: `topics` as decoded, [(topic, [(partition, error_code,
    base_offset, ...)])], or None for acks=0 (nothing to wait for)."""

    request_id: int
    topics: Sequence[tuple[str, Sequence[tuple[int, ...]]]] | None
    throttle_ms: int = 0


@dataclass(frozen=True)
class RequestWritten:
    """The request of a `Send` was written to its connection."""

    request_id: int


@dataclass(frozen=True)
class SendFailed:
    """The request of a `Send` could not be written at all (no connection)."""

    request_id: int
    reason: str


@dataclass(frozen=True)
class RequestFailed:
    """A written request got no answer: timed out or its connection was lost."""

    request_id: int
    reason: str


@dataclass(frozen=True)
class CoordinatorFound:
    """FindCoordinator answered: `node` runs this producer's transactions."""

    node: int


@dataclass(frozen=True)
class ProducerIdAssigned:
    producer_id: int
    epoch: int


@dataclass(frozen=True)
class ProducerIdFailed:
    """InitProducerId failed. `refused`: the broker answered with an error (a bump it
    cannot make is then asked as a new id); otherwise it did not answer."""

    reason: str
    refused: bool


@dataclass(frozen=True)
class PartitionsAdded:
    """The AddPartitionsToTxn in flight succeeded."""


@dataclass(frozen=True)
class TransactionFailed:
    """A transaction request (FindCoordinator, AddPartitionsToTxn, EndTxn) was refused or
    fenced, or got no answer in time: the producer is fatal."""

    error: BrokerError


@dataclass(frozen=True)
class TransactionEnded:
    """EndTxn answered."""

    committed: bool


@dataclass(frozen=True)
class MetadataUpdated:
    """Leaders per slot (-1: none), and the brokers now connected. Metadata that misses
    partitions is asked again, as a failure is."""

    leaders: list[int]
    brokers: frozenset[int] = frozenset()


@dataclass(frozen=True)
class MetadataFailed:
    reason: str


@dataclass(frozen=True)
class Stop:
    """No new requests from now on; responses are still taken."""


Event = (ResponseReceived | RequestWritten | SendFailed | RequestFailed | CoordinatorFound
         | ProducerIdAssigned | ProducerIdFailed | PartitionsAdded | TransactionFailed
         | TransactionEnded | MetadataUpdated | MetadataFailed | Stop)


# ------------------------------------------------------------------- the shell
@dataclass(slots=True)
class SendInputs:
    """What the shell knows at a send turn and the producer cannot: `send_ready`'s
    argument (the policy reads it in its `PollContext`). The shell owns one and updates it
    in place as its run goes on (a turn without a generator pass keeps the last values)."""

    backlog: float | None = None
    """When the oldest message not appended yet was due (-inf: one always is, an
    unthrottled topic; None: nothing is scheduled)."""
    memory_exhausted: bool = False
    """buffer.memory is used up: the generator waits for room."""
    flushing: bool = False
    """The generator is done (or stopped): everything queued goes, whatever its window."""


NO_INPUTS = SendInputs()
"""`send_ready`'s inputs when the shell gives none (tests): nothing known, not flushing."""


# --------------------------------------------------------------------- commands
@dataclass(frozen=True)
class Send:
    """Write a ProduceRequest carrying `topics` (topic -> [(partition, record batch)]) to
    `broker`; answer `RequestWritten` or `SendFailed`, later `ResponseReceived` or
    `RequestFailed`."""

    request_id: int
    broker: int
    topics: list[tuple[str, list[tuple[int, bytes]]]]
    expect_response: bool


@dataclass(frozen=True)
class FindCoordinator:
    """FindCoordinator for `transactional_id`; answer `CoordinatorFound` or
    `TransactionFailed`."""

    transactional_id: str


@dataclass(frozen=True)
class InitProducerId:
    """Ask for a producer id: a new epoch of (producer_id, epoch), or a new id when both
    are -1. With a `transactional_id`, ask its coordinator (found before), which fences
    any older producer with that id. Answer `ProducerIdAssigned` or `ProducerIdFailed`."""

    producer_id: int = -1
    epoch: int = -1
    transactional_id: str | None = None
    transaction_timeout_ms: int = 60_000


@dataclass(frozen=True)
class AddPartitions:
    """AddPartitionsToTxn; answer `PartitionsAdded` or `TransactionFailed`."""

    partitions: list[tuple[str, int]]
    producer_id: int
    epoch: int


@dataclass(frozen=True)
class EndTransaction:
    """EndTxn; answer `TransactionEnded`."""

    commit: bool
    producer_id: int
    epoch: int


@dataclass(frozen=True)
class RefreshMetadata:
    """Re-read leaders and connect to them; answer `MetadataUpdated` or `MetadataFailed`."""


@dataclass(frozen=True)
class CloseConnection:
    broker: int


@dataclass(frozen=True)
class Wake:
    """Something became ready (a retry is back in its queue): poll again without sleeping."""


Command = (Send | FindCoordinator | InitProducerId | AddPartitions | EndTransaction
           | RefreshMetadata | CloseConnection | Wake)
