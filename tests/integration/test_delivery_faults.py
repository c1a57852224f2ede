"""Delivery under faults against a real broker (embedded Tansu on loopback), read back.

A hung broker is a Tansu process this test started and paused with SIGSTOP; it is always
continued and stopped again, whatever happens. Every claim is checked against the topic.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator

import pytest

from producer_core.brokers.embedded import EmbeddedBroker
from producer_core.config import build_settings
from producer_core.engine.drivers.engine import Delivery, run
from producer_core.results.metrics import Results
from producer_core.workload.workload import Workload
from tests.kafka_fixtures import own_embedded_broker
from tests.readback import read_all

pytestmark = pytest.mark.broker

PARTITIONS = 6


@pytest.fixture()
def broker() -> Iterator[EmbeddedBroker]:
    """A broker of this test alone: pausing it must not disturb any other test."""
    with own_embedded_broker() as broker:
        yield broker


def pause(broker: EmbeddedBroker, at_s: float, for_s: float | None) -> threading.Timer:
    """SIGSTOP the broker `at_s` from now, and SIGCONT it `for_s` later (None: never)."""
    pid = broker.pid
    assert pid is not None

    def stop_then_continue() -> None:
        os.kill(pid, signal.SIGSTOP)
        if for_s is not None:
            time.sleep(for_s)
            os.kill(pid, signal.SIGCONT)

    timer = threading.Timer(at_s, stop_then_continue)
    timer.start()
    return timer


def produce(broker: EmbeddedBroker, topic: str, settings: dict[str, str], *,
            rate: int = 4000, duration_s: float = 4.0, mode: str = "partition",
            stop: threading.Event | None = None) -> tuple[Results, list[Delivery]]:
    workload = Workload(topic=topic, partitions=PARTITIONS, rate=rate, duration_s=duration_s,
                        keys=40)
    deliveries: list[Delivery] = []
    results = run(workload, build_settings(settings.items(), mode=mode), mode,
                  broker.bootstrap, deliveries=deliveries, stop=stop)
    return results, deliveries


def stored(broker: EmbeddedBroker, topic: str, expected: int) -> dict[int, list[int]]:
    """Message ids per partition, in offset order."""
    found = asyncio.run(read_all(broker.bootstrap, topic, PARTITIONS, expected, timeout_s=20))
    return {p: [mid for _, mid, _ in records] for p, records in found.items()}


def assert_outcomes_exact(results: Results, by_partition: dict[int, list[int]],
                          deliveries: list[Delivery]) -> Counter[int]:
    """Every message has one outcome; every acknowledged one is in the topic; what is in
    the topic beyond them is only what may have been written (unknown)."""
    m = results.metrics
    assert m.settled() == m.messages_generated
    counts = Counter(mid for ids in by_partition.values() for mid in ids)
    acknowledged = {mid for d in deliveries for mid in d.message_ids}
    assert len(acknowledged) == m.messages_acked
    assert acknowledged <= set(counts), "an acknowledged message is missing"
    assert len(set(counts) - acknowledged) <= m.messages_unknown + m.messages_sent_unacknowledged
    return counts


def reordered(by_partition: dict[int, list[int]]) -> int:
    """Records stored after a record of a later message of the same partition."""
    late = 0
    for ids in by_partition.values():
        highest = -1
        for mid in ids:
            late += mid < highest
            highest = max(highest, mid)
    return late


def test_paused_broker_with_idempotence_writes_no_duplicate_and_keeps_order(broker):
    timer = pause(broker, 1.0, 6.0)
    try:
        results, deliveries = produce(broker, "pause-idem", {"request.timeout.ms": "2000"})
    finally:
        timer.join()
    idempotence = results.metrics.idempotence
    assert idempotence["enabled"] and idempotence["producer_id"] >= 0
    by_partition = stored(broker, "pause-idem", results.metrics.messages_generated)
    counts = assert_outcomes_exact(results, by_partition, deliveries)
    assert results.metrics.retried_requests > 0  # the pause did cost retries
    assert max(counts.values()) == 1, "a duplicate with idempotence on"
    assert reordered(by_partition) == 0
    assert results.metrics.messages_acked == results.metrics.messages_generated


def test_paused_broker_without_idempotence_counts_its_outcomes_exactly(broker):
    timer = pause(broker, 1.0, 6.0)
    try:
        results, deliveries = produce(broker, "pause-plain", {
            "request.timeout.ms": "2000", "enable.idempotence": "false", "acks": "1"})
    finally:
        timer.join()
    assert not results.metrics.idempotence["enabled"]
    by_partition = stored(broker, "pause-plain", results.metrics.messages_generated)
    assert_outcomes_exact(results, by_partition, deliveries)


def test_hung_broker_run_ends_within_delivery_timeout_with_exact_outcomes(broker):
    timer = pause(broker, 1.5, None)
    began = time.monotonic()
    try:
        results, deliveries = produce(broker, "hung", {"delivery.timeout.ms": "3000"},
                                      duration_s=3.0)
    finally:
        timer.cancel()
        timer.join()
        os.kill(broker.pid, signal.SIGCONT)  # type: ignore[arg-type]  # the broker ran: it has a pid
    took = time.monotonic() - began
    # the last intended send is at 3 s; delivery.timeout.ms=3000 bounds the rest
    assert took < 3.0 + 3.0 + 2.5, f"the run took {took:.1f} s"
    m = results.metrics
    assert m.messages_failed + m.messages_unknown > 0
    assert set(m.failed_reasons) | set(m.unknown_reasons) <= {
        "delivery.timeout.ms", "connection_lost (delivery.timeout.ms)",
        "request_timeout (delivery.timeout.ms)"}
    by_partition = stored(broker, "hung", m.messages_generated)
    assert_outcomes_exact(results, by_partition, deliveries)


def test_acks_zero_is_sent_not_acknowledged_and_tolerates_answers(broker, capfd):
    results, deliveries = produce(broker, "acks0", {"acks": "0"}, duration_s=2.0)
    m = results.metrics
    assert m.messages_acked == 0 and not deliveries
    assert m.messages_sent_unacknowledged == m.messages_generated > 0
    assert any("idempotence is off" in w for w in results.warnings)
    by_partition = stored(broker, "acks0", m.messages_generated)
    counts = assert_outcomes_exact(results, by_partition, deliveries)
    assert len(counts) == m.messages_generated and max(counts.values()) == 1
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.parametrize("mode", ["partition", "librdkafka"])
def test_stop_event_ends_the_run_early_with_partial_results(broker, mode):
    stop = threading.Event()
    timer = threading.Timer(3.0, stop.set)  # librdkafka first waits for its producer id
    timer.start()
    began = time.monotonic()
    try:
        results, deliveries = produce(broker, "stopped", {}, duration_s=20.0, stop=stop,
                                      mode=mode)
    finally:
        timer.cancel()
    assert time.monotonic() - began < 9.0
    m = results.metrics
    assert not m.complete and results.to_dict()["complete"] is False
    assert 0 < m.messages_generated < 4000 * 20
    by_partition = stored(broker, "stopped", m.messages_generated)
    assert_outcomes_exact(results, by_partition, deliveries)


def test_stop_while_the_broker_hangs_settles_in_flight_as_unknown(broker):
    stop = threading.Event()
    timer = pause(broker, 1.0, None)
    stopper = threading.Timer(2.0, stop.set)
    stopper.start()
    began = time.monotonic()
    try:
        results, deliveries = produce(broker, "stopped-hung", {}, duration_s=20.0, stop=stop)
    finally:
        stopper.cancel()
        timer.join()
        os.kill(broker.pid, signal.SIGCONT)  # type: ignore[arg-type]  # the broker ran: it has a pid
    assert time.monotonic() - began < 8.0  # 2 s, the 2 s grace, setup and slack
    m = results.metrics
    assert not m.complete
    assert m.unknown_reasons.get("interrupted", 0) > 0
    by_partition = stored(broker, "stopped-hung", m.messages_generated)
    assert_outcomes_exact(results, by_partition, deliveries)


def test_unresolved_sequences_get_a_new_producer_id_and_delivery_resumes(broker):
    # in-flight batches run out of delivery.timeout.ms during the pause: their outcome is
    # unknown, so the producer needs a new epoch (Tansu refuses a bump: a new producer id)
    timer = pause(broker, 1.0, 4.0)
    try:
        results, deliveries = produce(broker, "bump", {
            "delivery.timeout.ms": "2500", "request.timeout.ms": "1000"}, duration_s=6.0)
    finally:
        timer.join()
    m = results.metrics
    assert m.messages_unknown > 0 and m.idempotence["epoch_bumps"] >= 1
    # messages created after the pause were acknowledged under the new producer id
    late = {mid for d in deliveries for mid in d.message_ids if mid > 4000 * 5.5}
    assert late
    by_partition = stored(broker, "bump", m.messages_generated)
    counts = assert_outcomes_exact(results, by_partition, deliveries)
    assert max(counts.values()) == 1 and reordered(by_partition) == 0
