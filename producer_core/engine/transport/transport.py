"""Connections and metadata over the Kafka wire protocol, through aiokafka's protocol layer.

One connection per broker (aiokafka's `AIOKafkaConnection`: framing, correlation ids,
ApiVersions negotiation, pipelined requests). kbatch decides itself how many requests are
in flight; this module only connects, asks for metadata, creates topics and hands out the
connection for a node id.
"""

from __future__ import annotations

import asyncio
import struct
from collections import Counter
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from aiokafka.conn import AIOKafkaConnection, create_conn
from aiokafka.errors import KafkaConnectionError, for_code
from aiokafka.protocol.admin import CreatePartitionsRequest, CreateTopicsRequest
from aiokafka.protocol.metadata import MetadataRequest
from aiokafka.protocol.offset import OffsetRequest

from producer_core.engine.transport.connect_errors import connection_problem
from producer_core.engine.transport.priming import Note, Priming, pad_bytes, prime_topic
from producer_core.engine.transport.produce_send import ProduceLine, answer
from producer_core.engine.transport.produce_wire import ProduceRequest
from producer_core.engine.transport.producer_id import IdempotentInitProducerId
from producer_core.errors import BrokerError, UsageError
from producer_core.security import PLAINTEXT, SecurityConfig
from producer_core.settings import ProducerSettings
from producer_core.topic_creation import (
    DEFAULT_CREATION,
    DEFAULT_REPLICATION_FACTOR,
    TopicCreation,
)

CONNECT_TIMEOUT_S = 10.0
INIT_PRODUCER_ID_TIMEOUT_S = 30.0
CONCURRENT_TRANSACTIONS = 51
"""The transactional id's previous transaction is still being ended (a fenced producer's
is aborted): ask again, as Java does."""
"""How long InitProducerId is asked again while the broker answers a retriable error."""
INIT_PRODUCER_ID_BACKOFF_S = 0.1
TOPIC_ALREADY_EXISTS = 36
PARTITIONS_PER_STEP = 5_000
"""A KRaft controller refuses more than 10,000 partitions (metadata records) in one
operation ("Excessively large number of partitions per request", "Unable to perform
excessively large batch operation"): a larger topic it refused is created with this many
partitions, then grown by CreatePartitions, this many at a time."""
LATEST_OFFSET = -1  # ListOffsets timestamp meaning "the log end"
RETRIABLE_METADATA_ERRORS = {3, 5}  # UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE
METADATA_CLOSED = "the broker closed the connection when asked for metadata"


@dataclass(frozen=True)
class BrokerAddress:
    node_id: int
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass
class ClusterView:
    """What a Metadata response says: brokers, controller, and partition leaders per topic."""

    brokers: dict[int, BrokerAddress]
    controller_id: int
    leaders: dict[str, list[int]]  # topic -> leader node per partition (-1: none)
    topic_errors: dict[str, int]
    replicas: dict[str, list[int]] = field(default_factory=dict)  # replicas per partition


def parse_bootstrap(text: str) -> list[tuple[str, int]]:
    """`host:port[,host:port...]` into pairs; refuses anything else with an example."""
    servers = []
    for part in (p.strip() for p in text.split(",")):
        host, sep, port = part.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise UsageError(
                f"Malformed --bootstrap-servers entry {part!r}: expected host:port, "
                "for example localhost:9092 or broker1:9092,broker2:9092."
            )
        servers.append((host.strip("[]"), int(port)))
    return servers


class Cluster:
    """Connections to the brokers of one cluster, created on demand and shared."""

    def __init__(self, bootstrap: str, client_id: str = "kbatch", request_timeout_s: float = 30,
                 security: SecurityConfig = PLAINTEXT,
                 topic_creation: TopicCreation = DEFAULT_CREATION):
        self.bootstrap = bootstrap
        self.servers = parse_bootstrap(bootstrap)
        self.client_id = client_id
        self.request_timeout_ms = int(request_timeout_s * 1000)
        self.security = security
        self.topic_creation = topic_creation
        self._security_kwargs = security.aiokafka_kwargs()  # one SSL context, shared
        self.view: ClusterView | None = None
        self._conns: dict[int, AIOKafkaConnection] = {}
        self._lines: dict[int, ProduceLine] = {}
        """Each broker connection's direct produce path (`produce_send`)."""
        self._bootstrap_conn: AIOKafkaConnection | None = None

    @classmethod
    def for_settings(cls, bootstrap: str, settings: ProducerSettings) -> Cluster:
        """The cluster as a run's settings describe it: client id, timeout, security, and
        how topics are created."""
        return cls(bootstrap, settings["client.id"], settings.request_timeout_s,
                   settings.security, settings.topic_creation)

    async def _open(self, host: str, port: int) -> AIOKafkaConnection:
        conn = await asyncio.wait_for(
            create_conn(
                host, port, client_id=self.client_id, request_timeout_ms=self.request_timeout_ms,
                **self._security_kwargs,
            ),
            CONNECT_TIMEOUT_S,
        )
        conn._handle_frame = partial(tolerant_frame, conn, conn._handle_frame)
        return conn

    def send(self, node_id: int, request: Any, expect_response: bool = True) -> Awaitable[Any]:
        """Write `request` to the connection of broker `node_id`; the awaitable gives the
        response (None when none is expected). Raises KafkaConnectionError at once when
        there is no open connection: the request was not written.

        A ProduceRequest that expects a response goes the direct way (`produce_send`): a
        plain future with no timeout of its own (the producer core times requests out)."""
        conn = self._conns.get(node_id)
        if conn is None or not conn.connected():
            raise KafkaConnectionError(f"no open connection to broker {node_id}")
        if expect_response and isinstance(request, ProduceRequest):
            return self._lines[node_id].send(request)
        return conn.send(request, expect_response=expect_response)

    def has_connection(self, node_id: int) -> bool:
        conn = self._conns.get(node_id)
        return conn is not None and conn.connected()

    def close_connection(self, node_id: int) -> None:
        """Drop the connection to `node_id` (a request timed out: whatever it still carries
        must not be applied later); requests waiting on it fail with a connection error."""
        conn = self._conns.pop(node_id, None)
        self._lines.pop(node_id, None)
        if conn is not None:
            conn.close()

    async def init_producer_id(self, producer_id: int = -1, epoch: int = -1,
                               timeout_s: float = INIT_PRODUCER_ID_TIMEOUT_S,
                               transactional_id: str | None = None,
                               transaction_timeout_ms: int = 60_000,
                               coordinator: int | None = None) -> tuple[int, int]:
        """InitProducerId without a transactional id: (producer id, epoch) for an
        idempotent producer; given the current ones, the broker bumps the epoch (KIP-360).
        Any broker can answer. Retriable errors (a fresh Kafka cluster answers
        COORDINATOR_LOAD_IN_PROGRESS while its internal topics load) are asked again after
        a pause, as Java's TransactionManager does, for at most `timeout_s`. A transactional
        producer names its `transactional_id` and asks its transaction `coordinator`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            conn = await (self._any_conn() if coordinator is None
                          else self.connection(coordinator))
            response = await conn.send(IdempotentInitProducerId(
                producer_id, epoch, transaction_timeout_ms, transactional_id))
            if not response.error_code:
                return response.producer_id, response.producer_epoch
            error = for_code(response.error_code)
            retriable = error.retriable or response.error_code == CONCURRENT_TRANSACTIONS
            if not retriable or loop.time() >= deadline:
                waited = "" if not retriable else f" for {timeout_s:g} s"
                raise BrokerError(f"InitProducerId was refused{waited}: {error.__name__}.")
            await asyncio.sleep(INIT_PRODUCER_ID_BACKOFF_S)

    async def connect(self) -> ClusterView:
        """Reach any bootstrap server and read the cluster's brokers, within a bounded time."""
        problems = []
        for host, port in self.servers:
            try:
                self._bootstrap_conn = await self._open(host, port)
                break
            except (TimeoutError, OSError, Exception) as exc:  # noqa: BLE001
                problem = connection_problem(exc, self.security)
                if problem is not None:  # the address answered: retrying others won't help
                    raise BrokerError(f"Could not connect to {host}:{port} "
                                      f"({self.security.describe()}): {problem}") from None
                problems.append(f"{host}:{port}: {_describe(exc)}")
        else:
            raise BrokerError(
                f"Could not reach any bootstrap server ({'; '.join(problems)}). Check "
                "--bootstrap-servers and that the brokers are running, or leave the option "
                "out to use kbatch's embedded broker."
            )
        return await self.refresh_metadata([])

    async def _any_conn(self) -> AIOKafkaConnection:
        if self._bootstrap_conn is not None and self._bootstrap_conn.connected():
            return self._bootstrap_conn
        for node_id in list(self._conns):
            try:
                return await self.connection(node_id)
            except BrokerError:
                continue
        await self.connect()
        assert self._bootstrap_conn is not None
        return self._bootstrap_conn

    async def refresh_metadata(self, topics: list[str]) -> ClusterView:
        conn = await self._any_conn()
        response = await conn.send(MetadataRequest(topics or None, False))
        data: dict[str, Any] = response.to_object()
        brokers = {
            b["node_id"]: BrokerAddress(b["node_id"], b["host"], b["port"])
            for b in data["brokers"]
        }
        leaders: dict[str, list[int]] = {}
        errors: dict[str, int] = {}
        replicas: dict[str, list[int]] = {}
        for topic in data["topics"]:
            name = topic["topic"]
            errors[name] = topic["error_code"]
            parts = sorted(topic["partitions"], key=lambda p: p["partition"])
            leaders[name] = [p["leader"] if p["error_code"] in (0, 9) else -1 for p in parts]
            replicas[name] = [len(p["replicas"]) for p in parts]
        self.view = ClusterView(brokers, data.get("controller_id", -1), leaders, errors,
                                replicas)
        return self.view

    async def create_topic(self, conn: Any, topic: str, partitions: int,
                           replication_factor: int | None, timeout_ms: int) -> bool:
        """Create the topic through `conn` (the controller); True if this call created it.
        A large topic the broker refuses in one request is created in steps of
        `PARTITIONS_PER_STEP`; any other refusal is a BrokerError."""
        created, refusal = await self._create_topic(conn, topic, partitions,
                                                    replication_factor, timeout_ms)
        if refusal is not None and partitions > PARTITIONS_PER_STEP:
            created, refusal = await self._create_topic(conn, topic, PARTITIONS_PER_STEP,
                                                        replication_factor, timeout_ms)
            for count in [*range(2 * PARTITIONS_PER_STEP, partitions, PARTITIONS_PER_STEP),
                          partitions]:
                if refusal is not None:
                    break
                refusal = await self._add_partitions(conn, topic, count, timeout_ms)
        if refusal is not None:
            raise BrokerError(f"The broker refused to create topic {topic!r}: {refusal}.")
        return created

    async def _create_topic(self, conn: Any, topic: str, partitions: int,
                            replication_factor: int | None,
                            timeout_ms: int) -> tuple[bool, str | None]:
        """CreateTopics for one topic: (whether this request created it, the broker's reason
        when it refused; None when created or existing already)."""
        request = CreateTopicsRequest(
            [(topic, partitions, replication_factor or DEFAULT_REPLICATION_FACTOR, [],
              list(self.topic_creation.configs))], timeout_ms, False)
        response = await conn.send(request)
        for result in response.to_object()["topic_errors"]:
            code = result["error_code"]
            if code not in (0, TOPIC_ALREADY_EXISTS):
                return False, result.get("error_message") or for_code(code).__name__
            return code == 0, None
        return False, None

    async def _add_partitions(self, conn: Any, topic: str, total: int,
                              timeout_ms: int) -> str | None:
        """CreatePartitions up to `total` (the broker places them): None, or its reason."""
        response = await conn.send(CreatePartitionsRequest([(topic, (total, None))],
                                                           timeout_ms, False))
        for result in response.to_object()["topic_errors"]:
            if result["error_code"] != 0:
                return (result.get("error_message")
                        or for_code(result["error_code"]).__name__)
        return None

    async def ensure_topic(
        self, topic: str, partitions: int, replication_factor: int | None = None,
        timeout_s: float | None = None,
    ) -> bool:
        """Create the topic unless it exists; wait until every partition's leader serves it.

        Returns True if kbatch created it. An existing topic with another partition count, or
        another replication factor than one asked for (`replication_factor`, else
        `topic_creation`), is refused: the run would not measure the layout the user asked
        for. New topics get `topic_creation`'s configs (min.insync.replicas, ...). The
        default wait grows with the partitions (15 s + 50 ms each): a busy 3-node Kafka
        takes ~12 s to serve 1,000 new partitions on a loaded 2-core machine.
        """
        if replication_factor is None:
            replication_factor = self.topic_creation.replication_factor
        if timeout_s is None:
            timeout_s = 15.0 + partitions / 20
        view = await self.refresh_metadata([topic])
        exists = view.topic_errors.get(topic) == 0 and view.leaders.get(topic)
        created = False
        if exists:
            have = len(view.leaders[topic])
            if have != partitions:
                raise UsageError(
                    f"Topic {topic!r} already exists with {have} partitions, but "
                    f"--partitions {partitions} was asked for. Use another --topic, or "
                    f"--partitions {have}."
                )
            have_rf = min(view.replicas.get(topic) or [0])
            if replication_factor is not None and have_rf and have_rf != replication_factor:
                raise UsageError(
                    f"Topic {topic!r} already exists with replication factor {have_rf}, but "
                    f"--replication-factor {replication_factor} was asked for. Use another "
                    f"--topic, or --replication-factor {have_rf}."
                )
        else:
            conn = await self.connection(view.controller_id) if view.controller_id in (
                view.brokers) else await self._any_conn()
            created = await self.create_topic(conn, topic, partitions, replication_factor,
                                              int(timeout_s * 1000))
        deadline = asyncio.get_running_loop().time() + timeout_s
        # each refusal's largest count over the polls: a leader short of files may answer
        # one poll and close the connection of the next, and both say why
        seen: Counter[str] = Counter()
        leaders: list[int] = []
        while True:
            polled = asyncio.get_running_loop().time()
            try:
                leaders = (await self.refresh_metadata([topic])).leaders.get(topic, [])
            except KafkaConnectionError:  # the same node may close the Metadata request too
                seen[METADATA_CLOSED] = max(seen[METADATA_CLOSED], partitions)
            else:
                if len(leaders) == partitions and all(leader >= 0 for leader in leaders):
                    refused = await self._leaders_refuse(topic, leaders)
                    if not refused:
                        return created
                    seen |= refused
            # decoding a large topic's metadata (pure Python) is costly: wait at least as
            # long as a poll took, so a broker on the same machine gets the CPU to create it
            poll_s = asyncio.get_running_loop().time() - polled
            if asyncio.get_running_loop().time() > deadline:
                raise BrokerError(_not_served(topic, partitions, leaders, seen, timeout_s))
            await asyncio.sleep(max(0.1, poll_s))

    async def ready_topic(self, topic: str, partitions: int, on_note: Note | None = None
                          ) -> Priming | None:
        """`ensure_topic`, then `prime`: what the run measures starts on a warm topic."""
        await self.ensure_topic(topic, partitions)
        return await self.prime(topic, partitions, on_note)

    async def prime(self, topic: str, partitions: int, on_note: Note | None = None
                    ) -> Priming | None:
        """Unless the topic creation says `--no-prime`, write each never-written partition
        of a served topic once (`priming`); None when not asked to."""
        if not self.topic_creation.prime:
            return None
        return await prime_topic(self, topic, 30.0 + partitions / 20, on_note,
                                 pad_bytes(self.topic_creation.configs))

    async def _leaders_refuse(self, topic: str, leaders: list[int]) -> Counter[str]:
        """How many partitions their leader refuses to serve, by error name (none: every
        leader answers ListOffsets for its partitions without an error).

        Apache Kafka (KRaft) lists a new partition's leader in Metadata a moment before
        that broker serves it; a first Produce then gets NOT_LEADER_OR_FOLLOWER and a
        retry, which would show up in the run's figures. Asking the leaders first avoids it.
        """
        by_leader: dict[int, list[int]] = {}
        for partition, leader in enumerate(leaders):
            by_leader.setdefault(leader, []).append(partition)
        refused: Counter[str] = Counter()
        for leader, parts in by_leader.items():
            conn = await self.connection(leader)
            try:
                response = await conn.send(
                    OffsetRequest(-1, 0, [(topic, [(p, LATEST_OFFSET) for p in parts])]))
            except KafkaConnectionError:  # e.g. a node out of file descriptors: ask again
                refused[f"the leader closed the connection (node {leader})"] += len(parts)
                continue
            for entry in response.to_object()["topics"]:
                refused.update(f"{for_code(p['error_code']).message} (error {p['error_code']})"
                               for p in entry["partitions"] if p["error_code"] != 0)
        return refused

    async def connection(self, node_id: int) -> AIOKafkaConnection:
        conn = self._conns.get(node_id)
        if conn is not None and conn.connected():
            return conn
        assert self.view is not None
        address = self.view.brokers.get(node_id)
        if address is None:
            raise BrokerError(f"Broker {node_id} is not in the cluster's metadata.")
        try:
            conn = await self._open(address.host, address.port)
        except Exception as exc:  # noqa: BLE001
            problem = connection_problem(exc, self.security)
            if problem is not None:
                raise BrokerError(f"Could not connect to broker {node_id} at {address} "
                                  f"({self.security.describe()}): {problem}") from None
            raise BrokerError(
                f"Could not connect to broker {node_id} at {address}: {_describe(exc)}. The "
                "cluster advertises this address; it must be reachable from this machine."
            ) from exc
        self._conns[node_id] = conn
        self._lines[node_id] = ProduceLine(conn)
        return conn

    async def close(self) -> None:
        for conn in [*self._conns.values(), self._bootstrap_conn]:
            if conn is not None:
                conn.close()
        self._conns.clear()
        self._lines.clear()
        self._bootstrap_conn = None


def tolerant_frame(conn: AIOKafkaConnection, handle: Any, frame: bytes) -> None:
    """Pass a response on only if it answers the oldest request waiting for one.

    A ProduceRequest with acks=0 asks for no response and aiokafka expects none, but some
    brokers (Tansu) answer anyway; aiokafka would then match that answer to the next
    request, or fail on an empty queue, and break the connection. Such answers are read
    and dropped here.
    """
    waiting = conn._requests
    if not waiting:
        return
    expected = waiting[0][0]
    if expected is not None and len(frame) >= 4 and struct.unpack_from(">i", frame)[0] != expected:
        return
    if not answer(conn, frame):  # not a request of `produce_send`'s
        handle(frame)


def _not_served(topic: str, partitions: int, leaders: list[int], refused: Counter[str],
                timeout_s: float) -> str:
    """Why a topic is not ready after the wait: partitions without a leader, or leaders
    that refuse their partitions, or a broker that closes the connection (and what a broker
    that does so may be missing)."""
    if len(leaders) == partitions and all(leader >= 0 for leader in leaders):
        shown = f"metadata names a leader for each of its {partitions:,} partitions"
    elif not leaders:
        shown = f"no metadata answered showed any of its {partitions:,} partitions"
    else:
        shown = (f"metadata shows {len(leaders):,} of its {partitions:,} partitions, "
                 f"{sum(1 for x in leaders if x < 0):,} without a leader")
    if not refused:
        return (f"Topic {topic!r} has no leader serving every partition after "
                f"{timeout_s:.0f} s ({shown}).")
    answers = ", ".join(f"{name} for {count:,}" for name, count in refused.most_common())
    refusing = min(sum(refused.values()), partitions)  # a partition may have several answers
    return (f"Topic {topic!r}: {shown}, but after {timeout_s:.0f} s the brokers still "
            f"refuse {refusing:,} of them ({answers}). A broker that failed to "
            "take partitions over refuses them until it restarts: Apache Kafka logs \"Error "
            "applying topics delta\", for example with \"Too many open files\" (a node "
            "keeps a file open per partition, and a deleted topic's files until "
            "log.segment.delete.delay.ms has passed: see `ulimit -n`).")


def _describe(exc: BaseException) -> str:
    if isinstance(exc, asyncio.TimeoutError):
        return f"no answer within {CONNECT_TIMEOUT_S:.0f} s"
    text = str(exc) or type(exc).__name__
    return text.rstrip(".")


async def ensure_topics(bootstrap: str, settings: ProducerSettings, specs: Sequence[Any],
                        on_note: Note | None = None) -> list[Priming]:
    """Create (or check) a run's topics, as the run's settings say, and prime them, before
    a client that creates no topics itself (librdkafka, the Java producer) starts
    producing; what priming did, per topic."""
    cluster = Cluster.for_settings(bootstrap, settings)
    try:
        await cluster.connect()
        return [p for spec in specs
                if (p := await cluster.ready_topic(spec.name, spec.partitions, on_note))
                is not None]
    finally:
        await cluster.close()
