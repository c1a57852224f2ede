"""Mode kafka-java's outcome accounting, from the driver's result line: each generated
message ends in exactly one outcome, as in kbatch's engine."""

from __future__ import annotations

from typing import Any

from producer_core.config import build_settings
from producer_core.engine.drivers.kafka_java.run import NO_CALLBACK, KafkaJavaRun
from producer_core.workload.workload import Workload


def settled_run(result: dict[str, Any], generated: int) -> KafkaJavaRun:
    workload = Workload(topic="t", partitions=4, rate=100, duration_s=1.0)
    run = KafkaJavaRun(workload, build_settings(mode="kafka-java"), "127.0.0.1:9",
                       driver=None)  # type: ignore[arg-type]  # never started
    run.metrics.messages_generated = generated
    run.metrics.topics["t"].generated = generated
    run._settle(result)
    return run


def result_line(**counts: Any) -> dict[str, Any]:
    line = {"acked": 0, "failed": 0, "failed_reasons": {}, "unacked": 0, "unknown": 0,
            "unknown_reasons": {}}
    line.update(counts)
    for name in ("acked", "failed", "unacked", "unknown"):
        line[f"topic_{name}"] = [line[name]]
    return line


def test_acknowledged_failed_unknown_and_unacknowledged_are_taken_as_the_driver_counts():
    run = settled_run(result_line(acked=50, failed=7, failed_reasons={"TimeoutException": 7},
                                  unknown=3, unknown_reasons={"TimeoutException": 3},
                                  unacked=0), generated=60)
    m = run.metrics
    assert (m.messages_acked, m.messages_failed, m.messages_unknown) == (50, 7, 3)
    assert m.unknown_reasons == {"TimeoutException": 3} and m.settled() == 60
    topic = m.topics["t"]
    assert (topic.acknowledged, topic.failed, topic.unknown) == (50, 7, 3)


def test_acks_zero_messages_are_sent_unacknowledged():
    run = settled_run(result_line(unacked=40), generated=40)
    m = run.metrics
    assert m.messages_sent_unacknowledged == 40 == m.topics["t"].sent_unacknowledged
    assert m.messages_acked == 0 and m.settled() == 40


def test_a_message_without_a_callback_is_unknown_not_dropped():
    run = settled_run(result_line(acked=90, failed=4), generated=100)
    m = run.metrics
    assert m.messages_unknown == 6 and m.unknown_reasons == {NO_CALLBACK: 6}
    assert m.topics["t"].unknown == 6 and m.settled() == 100
