"""The sans-I/O sender, every failure path, with synthetic time (no broker, no sockets)."""

from __future__ import annotations

import pytest
from aiokafka.record.default_records import DefaultRecordBatch

from producer_core.engine.core.accumulator import Accumulator, ProducerBatch, TopicPartition
from producer_core.engine.core.sender import (
    DUPLICATE_SEQUENCE_NUMBER,
    INVALID_PRODUCER_EPOCH,
    NOT_LEADER_OR_FOLLOWER,
    OUT_OF_ORDER_SEQUENCE_NUMBER,
    PRODUCER_FENCED,
    UNKNOWN_PRODUCER_ID,
    Acknowledge,
    DropConnection,
    Fail,
    Hold,
    MetadataStale,
    NeedProducerId,
    Requeue,
    Sender,
    SenderConfig,
    Unknown,
    Written,
)

TOPIC = "t"
SLOTS = [TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)]
NOT_ENOUGH_REPLICAS = 19  # retriable, no metadata refresh
MESSAGE_TOO_LARGE = 10  # not retriable


def config(**overrides: object) -> SenderConfig:
    values: dict[str, object] = dict(
        acks=-1, idempotent=True, retries=2147483647, retry_backoff_s=0.1,
        request_timeout_s=2.0, delivery_timeout_s=10.0, max_in_flight=5)
    values.update(overrides)
    return SenderConfig(**values)  # type: ignore[arg-type]  # values: the config's fields by name


class World:
    """A sender, an accumulator, and the outcome of every message, as the engine keeps it."""

    def __init__(self, **overrides: object) -> None:
        self.acc = Accumulator(SLOTS, 1024)
        self.sender = Sender(SLOTS, config(**overrides))
        if self.sender.config.idempotent:
            assert not self.sender.ready  # nothing goes before the producer id
            self.sender.on_producer_id(1000, 0)
        self.outcome: dict[int, str] = {}
        self.generated = 0
        self.closed: list[int] = []
        self.refreshes = 0
        self.init_requests = 0

    def batch(self, slot: int = 0, n: int = 3, now: float = 0.0) -> ProducerBatch:
        for _ in range(n):
            self.acc.append(slot, self.generated, None, b"v", now, now, 0)
            self.generated += 1
        queue = self.acc.queues[slot]
        queue[-1].closed = True
        return self.acc.pop_head(slot, now)

    def send(self, batches: list[ProducerBatch], now: float, broker: int = 1) -> int:
        outgoing, actions = self.sender.build(broker, batches, now)
        self.apply(actions)
        assert outgoing is not None
        return outgoing.request_id

    def apply(self, actions: list[object]) -> None:
        for action in actions:
            if isinstance(action, Acknowledge):
                self._settle([b for b, _ in action.batches], "acknowledged")
            elif isinstance(action, Written):
                self._settle(action.batches, "sent_unacknowledged")
            elif isinstance(action, Fail):
                self._settle(action.batches, f"failed:{action.reason}")
            elif isinstance(action, Unknown):
                self._settle(action.batches, f"unknown:{action.reason}")
            elif isinstance(action, Hold):
                self.acc.hold(action.slot)
            elif isinstance(action, Requeue):
                self.acc.requeue_front(action.batch)
                if action.release:
                    self.acc.release(action.batch.slot)
            elif isinstance(action, DropConnection):
                self.closed.append(action.broker)
            elif isinstance(action, MetadataStale):
                self.refreshes += 1
            elif isinstance(action, NeedProducerId):
                self.init_requests += 1

    def _settle(self, batches: list[ProducerBatch], what: str) -> None:
        for batch in batches:
            for message_id in batch.ids:
                assert message_id not in self.outcome, "a message settled twice"
                self.outcome[message_id] = what

    def respond(self, request_id: int, codes: dict[int, int], now: float) -> bool:
        errors = {(TOPIC, slot): (code, 0 if code == 0 else -1) for slot, code in codes.items()}
        actions, all_ok = self.sender.on_response(request_id, errors, now)
        self.apply(actions)
        return all_ok

    def poll(self, now: float) -> None:
        self.apply(self.sender.poll(now))

    def resend_queued(self, slot: int, now: float, broker: int = 1) -> int:
        batch = self.acc.pop_head(slot, now)
        return self.send([batch], now, broker)

    def assert_every_message_settled(self) -> None:
        """The invariant: every generated message has exactly one outcome."""
        assert sorted(self.outcome) == list(range(self.generated))
        assert self.sender.pending == 0 and self.acc.empty


def header(batch: ProducerBatch) -> tuple[int, int, int]:
    record_batch = DefaultRecordBatch(bytearray(batch.seal()))
    assert record_batch.validate_crc()
    return record_batch.producer_id, record_batch.producer_epoch, record_batch.base_sequence


def test_acknowledged_batches_carry_consecutive_sequences_per_partition():
    w = World()
    a, b, c = w.batch(0, 3), w.batch(0, 2), w.batch(1, 4)
    first = w.send([a, c], 0.0)
    second = w.send([b], 0.0)
    assert header(a) == (1000, 0, 0) and header(b) == (1000, 0, 3) and header(c) == (1000, 0, 0)
    assert w.sender.free_slots([1]) == {1: 3}
    assert w.respond(first, {0: 0, 1: 0}, 0.1) and w.respond(second, {0: 0}, 0.1)
    assert set(w.outcome.values()) == {"acknowledged"}
    w.assert_every_message_settled()


def test_without_idempotence_batches_are_not_stamped():
    w = World(idempotent=False, acks=1)
    a = w.batch()
    w.respond(w.send([a], 0.0), {0: 0}, 0.1)
    assert header(a) == (-1, -1, -1)
    w.assert_every_message_settled()


def test_acks_zero_is_written_not_acknowledged():
    w = World(idempotent=False, acks=0)
    a = w.batch()
    actions, _ = w.sender.on_response(w.send([a], 0.0), None, 0.0)
    w.apply(actions)
    assert set(w.outcome.values()) == {"sent_unacknowledged"}
    w.assert_every_message_settled()


def test_retriable_error_retries_after_backoff_with_the_same_sequence():
    w = World()
    a = w.batch()
    assert not w.respond(w.send([a], 0.0), {0: NOT_ENOUGH_REPLICAS}, 0.1)
    assert w.outcome == {} and w.sender.pending == 1 and w.refreshes == 0
    assert w.sender.next_wakeup() == pytest.approx(0.2)
    later = w.batch(0, now=0.12)
    w.acc.requeue_front(later)  # a newer batch queued meanwhile must not overtake it
    w.poll(0.15)
    assert w.acc.head(0) is None  # held: retry.backoff.ms
    w.poll(0.2)
    assert list(w.acc.queues[0]) == [a, later]
    w.respond(w.resend_queued(0, 0.2), {0: 0}, 0.3)
    w.respond(w.resend_queued(0, 0.3), {0: 0}, 0.4)
    assert header(a)[2] == 0 and a.attempts == 2 and header(later)[2] == 3
    w.assert_every_message_settled()


def test_not_leader_refreshes_metadata_and_retries():
    w = World()
    a = w.batch()
    w.respond(w.send([a], 0.0), {0: NOT_LEADER_OR_FOLLOWER}, 0.1)
    assert w.refreshes == 1 and w.sender.pending == 1
    w.poll(0.2)
    w.respond(w.resend_queued(0, 0.2, broker=2), {0: 0}, 0.3)  # the new leader
    assert set(w.outcome.values()) == {"acknowledged"}
    w.assert_every_message_settled()


def test_non_retriable_error_fails_without_retry():
    w = World()
    a = w.batch()
    w.respond(w.send([a], 0.0), {0: MESSAGE_TOO_LARGE}, 0.1)
    assert set(w.outcome.values()) == {"failed:MessageSizeTooLargeError"}
    w.assert_every_message_settled()


def test_retries_are_bounded_by_the_retries_setting():
    w = World(idempotent=False, retries=1)
    a = w.batch()
    w.respond(w.send([a], 0.0), {0: NOT_ENOUGH_REPLICAS}, 0.1)
    w.poll(0.2)
    w.respond(w.resend_queued(0, 0.2), {0: NOT_ENOUGH_REPLICAS}, 0.3)
    assert set(w.outcome.values()) == {"failed:NotEnoughReplicasError (retries exhausted)"}
    w.assert_every_message_settled()


def test_request_timeout_closes_the_connection_and_retries_everything_on_it():
    w = World()
    a, b, c = w.batch(0), w.batch(0), w.batch(1)
    w.send([a], 0.0)
    w.send([b, c], 0.5)
    other = w.send([w.batch(1)], 0.5, broker=2)
    assert w.sender.next_wakeup() == pytest.approx(2.0)
    w.poll(1.99)
    assert w.closed == []
    w.poll(2.0)  # a's request timed out
    assert w.closed == [1] and w.refreshes >= 1
    assert all(batch.maybe_written for batch in (a, b, c))
    assert w.sender.free_slots([1]) == {1: 5}
    w.poll(2.1)  # retries go back in sequence order
    assert list(w.acc.queues[0]) == [a, b] and list(w.acc.queues[1]) == [c]
    request = w.send([w.acc.pop_head(0, 2.1), w.acc.pop_head(1, 2.1)], 2.1)
    w.respond(request, {0: DUPLICATE_SEQUENCE_NUMBER, 1: 0}, 2.2)  # a had been written
    w.respond(w.resend_queued(0, 2.2), {0: 0}, 2.3)
    w.respond(other, {1: 0}, 2.3)
    assert set(w.outcome.values()) == {"acknowledged"}
    assert [header(x)[2] for x in (a, b, c)] == [0, 3, 0]
    w.assert_every_message_settled()


def test_connection_lost_retries_what_was_in_flight():
    w = World()
    a = w.batch()
    request = w.send([a], 0.0)
    w.apply(w.sender.on_request_failed(request, "connection_lost", 0.3))
    assert w.closed == [1] and a.maybe_written
    w.poll(0.4)
    w.respond(w.resend_queued(0, 0.4), {0: 0}, 0.5)
    w.assert_every_message_settled()


def test_send_error_means_not_written_and_is_not_counted_as_an_attempt():
    w = World(delivery_timeout_s=1.0)
    a = w.batch()
    outgoing, _ = w.sender.build(1, [a], 0.0)
    assert outgoing is not None
    w.apply(w.sender.on_send_error(outgoing.request_id, "connection_lost", 0.0))
    assert a.attempts == 0 and not a.maybe_written and w.refreshes == 1
    w.poll(0.1)
    outgoing, _ = w.sender.build(1, [w.acc.pop_head(0, 0.95)], 0.95)
    assert outgoing is not None
    w.apply(w.sender.on_send_error(outgoing.request_id, "connection_lost", 0.95))
    assert w.outcome == {i: "failed:connection_lost (delivery.timeout.ms)" for i in range(3)}
    w.assert_every_message_settled()


def test_delivery_timeout_expires_queued_batches_as_failed():
    w = World(delivery_timeout_s=1.0)
    a = w.batch(now=0.0)
    outgoing, actions = w.sender.build(1, [a], 1.0)
    w.apply(actions)
    assert outgoing is None
    assert set(w.outcome.values()) == {"failed:delivery.timeout.ms"}
    w.assert_every_message_settled()


def test_delivery_timeout_of_an_in_flight_batch_is_unknown_and_bumps_the_epoch():
    w = World(delivery_timeout_s=1.0, request_timeout_s=30.0)
    a = w.batch(0, now=0.0)
    later = w.batch(1, now=0.5)
    hung = w.send([a], 0.6)
    w.send([later], 0.6)
    assert w.sender.next_wakeup() == pytest.approx(1.0)
    w.poll(1.0)  # a's delivery.timeout.ms passed while in flight
    assert {w.outcome[i] for i in a.ids} == {"unknown:delivery.timeout.ms"}
    assert w.closed == [1]  # the request is given up: its connection goes
    w.respond(hung, {0: 0}, 1.05)  # a late answer changes nothing
    assert {w.outcome[i] for i in a.ids} == {"unknown:delivery.timeout.ms"}
    assert w.init_requests == 1 and not w.sender.ready  # unresolved sequence: new epoch
    assert w.acc.head(1) is later
    w.apply(w.sender.on_producer_id(1000, 1))
    assert w.sender.id.epoch_bumps == 1
    w.respond(w.resend_queued(1, 1.1), {1: 0}, 1.2)
    assert header(later) == (1000, 1, 0)  # re-stamped under the new epoch
    w.assert_every_message_settled()


def test_retry_that_would_end_past_the_delivery_timeout_is_settled():
    w = World(delivery_timeout_s=1.0)
    a = w.batch()
    w.respond(w.send([a], 0.0), {0: NOT_ENOUGH_REPLICAS}, 0.95)
    assert set(w.outcome.values()) == {"failed:NotEnoughReplicasError (delivery.timeout.ms)"}
    w.assert_every_message_settled()


def test_out_of_order_behind_a_retried_batch_is_retried_in_order():
    w = World()
    a, b = w.batch(0), w.batch(0)
    first, second = w.send([a], 0.0), w.send([b], 0.0)
    w.respond(first, {0: NOT_LEADER_OR_FOLLOWER}, 0.1)
    w.respond(second, {0: OUT_OF_ORDER_SEQUENCE_NUMBER}, 0.1)  # a was not written
    assert w.init_requests == 0 and w.outcome == {}
    w.poll(0.2)
    assert list(w.acc.queues[0]) == [a, b]
    w.respond(w.resend_queued(0, 0.2), {0: 0}, 0.3)
    w.respond(w.resend_queued(0, 0.3), {0: 0}, 0.4)
    assert [header(x)[2] for x in (a, b)] == [0, 3]
    assert set(w.outcome.values()) == {"acknowledged"}
    w.assert_every_message_settled()


def test_out_of_order_of_the_first_unsettled_batch_bumps_the_epoch():
    w = World()
    a = w.batch(0)
    w.respond(w.send([a], 0.0), {0: OUT_OF_ORDER_SEQUENCE_NUMBER}, 0.1)
    assert w.sender.pending == 1
    w.poll(0.1)
    assert w.init_requests == 1 and not w.sender.ready
    assert w.acc.head(0) is a  # back in the queue at once, to be re-stamped in order
    w.apply(w.sender.on_producer_id(1000, 1))
    w.respond(w.resend_queued(0, 0.2), {0: 0}, 0.3)
    assert header(a) == (1000, 1, 0)
    w.assert_every_message_settled()


def test_batches_drained_while_the_producer_id_is_fetched_wait_bounded_by_delivery_timeout():
    w = World(delivery_timeout_s=1.0)
    a = w.batch(0)
    w.respond(w.send([a], 0.0), {0: UNKNOWN_PRODUCER_ID}, 0.1)
    w.poll(0.1)
    assert w.init_requests == 1
    b, c = w.acc.pop_head(0, 0.2), w.batch(1, now=0.5)
    outgoing, _ = w.sender.build(1, [b, c], 0.6)
    assert outgoing is None and w.sender.pending == 2  # parked, not sent
    assert w.sender.next_wakeup() == pytest.approx(1.0)
    w.poll(1.0)  # the broker never answers InitProducerId: a expires, never written
    assert {w.outcome[i] for i in a.ids} == {"failed:delivery.timeout.ms"}
    w.apply(w.sender.on_producer_id(1000, 1))
    assert w.acc.head(1) is c  # back in its queue, to be sent under the new epoch
    w.respond(w.resend_queued(1, 1.1), {1: 0}, 1.2)
    assert header(c) == (1000, 1, 0)
    w.assert_every_message_settled()


def test_duplicate_sequence_is_an_acknowledgement():
    w = World()
    a = w.batch()
    w.respond(w.send([a], 0.0), {0: DUPLICATE_SEQUENCE_NUMBER}, 0.1)
    assert set(w.outcome.values()) == {"acknowledged"}
    w.assert_every_message_settled()


def test_unknown_producer_id_gets_a_new_epoch_and_retries():
    w = World()
    a = w.batch()
    w.respond(w.send([a], 0.0), {0: UNKNOWN_PRODUCER_ID}, 0.1)
    w.poll(0.1)
    assert w.init_requests == 1
    w.apply(w.sender.on_producer_id(2000, 0))
    w.respond(w.resend_queued(0, 0.2), {0: 0}, 0.3)
    assert header(a) == (2000, 0, 0) and w.sender.id.epoch_bumps == 1
    w.assert_every_message_settled()


@pytest.mark.parametrize("code", [INVALID_PRODUCER_EPOCH, PRODUCER_FENCED])
def test_fencing_fails_everything_that_is_left(code):
    w = World()
    a, b, c = w.batch(0), w.batch(1), w.batch(0)
    first = w.send([a], 0.0)
    w.respond(w.send([b], 0.0), {1: NOT_ENOUGH_REPLICAS}, 0.05)  # b waits for a retry
    w.respond(first, {0: code}, 0.1)
    assert w.acc.head(1) is b  # back in its queue, released: it fails when drained
    outgoing, actions = w.sender.build(1, [c, w.acc.pop_head(1, 0.2)], 0.2)
    w.apply(actions)
    assert outgoing is None
    assert all(v.startswith("failed:") and "another producer" in v for v in w.outcome.values())
    w.assert_every_message_settled()


def test_stop_settles_in_flight_as_unknown_and_retrying_by_what_may_be_written():
    w = World()
    a, b = w.batch(0), w.batch(1)
    w.send([a], 0.0)
    w.respond(w.send([b], 0.0), {1: NOT_ENOUGH_REPLICAS}, 0.05)
    w.apply(w.sender.stop("interrupted"))
    assert {w.outcome[i] for i in a.ids} == {"unknown:interrupted"}
    assert {w.outcome[i] for i in b.ids} == {"failed:interrupted"}
    assert w.sender.free_slots([1]) == {}
    w.assert_every_message_settled()


def test_retries_without_idempotence_go_back_in_first_send_order():
    w = World(idempotent=False, acks=1)
    a, b, c = w.batch(0), w.batch(0), w.batch(0)
    first, second, third = w.send([a], 0.0), w.send([b], 0.0), w.send([c], 0.0)
    for request in (first, second, third):
        w.respond(request, {0: NOT_LEADER_OR_FOLLOWER}, 0.1)
    w.poll(0.2)
    assert list(w.acc.queues[0]) == [a, b, c]


def test_requeue_keeps_sequence_order_ahead_of_new_batches():
    acc = Accumulator(SLOTS, 1024)
    batches = []
    for i in range(3):
        acc.append(0, i, None, b"v", 0.0, 0.0, 0)
        acc.queues[0][-1].closed = True
        batches.append(acc.pop_head(0, 0.0))
    for sequence, batch in enumerate(batches):
        batch.stamp(1, 0, sequence)
        batch.order = sequence
    acc.append(0, 9, None, b"new", 0.0, 0.0, 0)
    acc.requeue_front(batches[2])
    acc.requeue_front(batches[0])
    acc.requeue_front(batches[1])
    assert [b.sequence for b in acc.queues[0]] == [0, 1, 2, -1]


class RestartedBroker:
    """A broker's sequence check per (producer id, epoch, partition), starting empty, as a
    broker that lost its state (Tansu is in memory) does: it writes a batch only when its
    base sequence is the next one expected, and records the order of what it wrote."""

    def __init__(self) -> None:
        self.expected: dict[tuple[int, int, int], int] = {}
        self.written: list[int] = []

    def produce(self, batch: ProducerBatch) -> int:
        producer_id, epoch, sequence = header(batch)
        key = (producer_id, epoch, batch.slot)
        if sequence != self.expected.get(key, 0):
            return OUT_OF_ORDER_SEQUENCE_NUMBER
        self.expected[key] = sequence + batch.record_count
        self.written.extend(batch.ids)
        return 0


def test_after_a_producer_id_reset_older_batches_are_written_before_a_newer_one():
    """Issue #14: batches in flight when the broker went away, then a new producer id that
    happens to equal the old one (a restarted in-memory broker hands out id 1000, epoch 0
    again), then a newer batch of the same partition: the older batches are re-stamped
    from sequence 0 and the newer one follows them, never goes first."""
    w = World()
    a, b, c = w.batch(0), w.batch(0), w.batch(0)
    w.respond(w.send([a], 0.0), {0: 0}, 0.05)
    second, third = w.send([b], 0.1), w.send([c], 0.1)
    w.apply(w.sender.on_request_failed(second, "connection_lost", 0.2))  # the broker died
    assert third not in w.sender.in_flight  # the same connection: retried too
    w.poll(0.4)
    assert list(w.acc.queues[0]) == [b, c]
    broker = RestartedBroker()  # a new broker, with an empty log and no producer state
    w.respond(w.resend_queued(0, 0.5), {0: UNKNOWN_PRODUCER_ID}, 0.55)
    w.respond(w.resend_queued(0, 0.5), {0: OUT_OF_ORDER_SEQUENCE_NUMBER}, 0.55)
    w.poll(0.7)
    assert w.init_requests == 1
    w.apply(w.sender.on_producer_id(1000, 0))  # the same id and epoch as before
    for _ in range(3):  # a newer batch of the same partition
        w.acc.append(0, w.generated, None, b"v", 0.7, 0.7, 0)
        w.generated += 1
    w.acc.queues[0][-1].closed = True
    now = 0.8
    for _ in range(100):  # drain up to max.in.flight requests, then the broker answers
        w.poll(now)
        if w.init_requests > 1 and not w.sender.ready:  # another reset: a new id this time
            w.apply(w.sender.on_producer_id(2000, 0))
        sent = []
        while w.acc.head(0) is not None and w.sender.free_slots([1]):
            batch = w.acc.pop_head(0, now)
            sent.append((w.send([batch], now), batch))
        for request, batch in sent:
            w.respond(request, {0: broker.produce(batch)}, now + 0.01)
        if not sent and not w.sender.pending:
            break
        now += 0.05
    assert broker.written == sorted(broker.written)  # no record ahead of an older one
    assert broker.written == list(range(3, w.generated))
    assert [header(x)[2] for x in (b, c)] == [0, 3]
    assert set(w.outcome.values()) == {"acknowledged"}
    w.assert_every_message_settled()
