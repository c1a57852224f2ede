"""`--verify` against the embedded Tansu broker: clean runs verify clean, and records a
plain aiokafka producer slips into the topic (a duplicate, one out of order) are reported."""

from __future__ import annotations

import asyncio
import json

import pytest
from aiokafka import AIOKafkaProducer
from click.testing import CliRunner

import producer_core.engine.drivers.engine as engine_module
from cli.main import cli
from producer_core.config import build_settings
from producer_core.engine.drivers.engine import Delivery, run
from producer_core.measure.verify_read import VerifyingRun, end_offsets, verify_run
from producer_core.workload.workload import ID_BYTES, Workload

pytestmark = pytest.mark.broker


def workload(topic: str, messages: int = 600, partitions: int = 3) -> Workload:
    return Workload(topic=topic, partitions=partitions, rate=3000.0, messages=messages,
                    message_size=32)


async def _inject(bootstrap: str, topic: str, partition: int, ids: list[int]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        for message_id in ids:
            await producer.send_and_wait(topic, message_id.to_bytes(ID_BYTES, "big") + b"x",
                                         partition=partition)
    finally:
        await producer.stop()


def inject(bootstrap: str, topic: str, partition: int, ids: list[int]) -> None:
    asyncio.run(_inject(bootstrap, topic, partition, ids))


def test_clean_run_verifies_clean_from_its_start_offsets(tansu_broker) -> None:
    settings = build_settings([("linger.ms", "5")])
    topic = "verify-clean"
    # earlier data; Tansu lists the end offset of a partition as its last batch's base
    run(workload(topic, 300), settings, "partition", tansu_broker.bootstrap)
    results = VerifyingRun(run)(workload(topic), settings, "partition",
                                tansu_broker.bootstrap)
    verify = results.to_dict()["verify"]
    assert verify["read_complete"] is True
    # only this run's records: the 300 before its start offsets are not read
    assert verify["acknowledged"] == verify["records_read"] == verify["present"] == 600
    assert (verify["missing"], verify["duplicated"], verify["out_of_order"]) == (0, 0, 0)
    assert verify["unacknowledged_found"] == 0
    assert verify["problems"] == []
    assert list(verify["topics"]) == [topic]


def test_injected_duplicate_and_reorder_are_reported(tansu_broker) -> None:
    settings = build_settings([("linger.ms", "5")])
    topic = "verify-injected"
    spec = workload(topic)
    starts = end_offsets(tansu_broker.bootstrap, {topic: spec.partitions})
    deliveries: list[Delivery] = []
    results = run(spec, settings, "partition", tansu_broker.bootstrap, deliveries=deliveries)
    assert results.metrics.messages_acked == 600
    in_p0 = [d for d in deliveries if d.partition == 0]
    acked_p0 = sorted(i for d in in_p0 for i in d.message_ids)
    top = max(i for d in deliveries for i in d.message_ids)
    # a duplicate of an acknowledged id; then two ids nobody acknowledged, the second lower
    inject(tansu_broker.bootstrap, topic, 0, [acked_p0[5], top + 100, top + 50])
    document = {"idempotence": {"enabled": True}}
    verify = verify_run(tansu_broker.bootstrap, starts, deliveries, document)
    assert verify["acknowledged"] == verify["present"] == 600
    assert verify["records_read"] == 603
    assert verify["missing"] == 0
    assert verify["duplicated"] == 1
    assert verify["out_of_order"] == 1
    assert verify["unacknowledged_found"] == 2
    assert len(verify["problems"]) == 2  # idempotence on: both are problems

    # an acknowledged message the topic does not hold: a missing one
    lost = Delivery(topic, 1, 0, [top + 7])
    verify = verify_run(tansu_broker.bootstrap, starts, [*deliveries, lost], {})
    assert verify["missing"] == 1
    assert verify["problems"] == ["1 acknowledged messages missing"]


@pytest.mark.parametrize("settings,idempotence,code", [
    ((), True, 4),  # the default: idempotence on, so a duplicate is a problem
    (("-X", "enable.idempotence=false", "-X", "acks=1"), False, 0),  # counted, shown, no fail
])
def test_cli_verify_reports_a_duplicate_in_json_and_exit_code(
        tansu_broker, tmp_path, monkeypatch, settings, idempotence, code) -> None:
    """The whole `produce --verify` path, with a duplicate slipped in after the run."""
    real_run = engine_module.run

    def run_then_duplicate(workload, settings, mode, bootstrap, on_progress=None,
                           deliveries=None, **kwargs):
        results = real_run(workload, settings, mode, bootstrap, on_progress,
                           deliveries=deliveries, **kwargs)
        first = next(d for d in deliveries if d.message_ids)
        inject(bootstrap, first.topic, first.partition, [first.message_ids[0]])
        return results

    monkeypatch.setattr(engine_module, "run", run_then_duplicate)
    out = tmp_path / "run.json"
    result = CliRunner().invoke(cli, [
        "produce", "--bootstrap-servers", tansu_broker.bootstrap, *settings,
        "--topic", f"verify-cli-{code}",
        "--partitions", "2", "--messages", "400", "--rate", "2000", "--verify",
        "--json", str(out), "--no-progress"])
    document = json.loads(out.read_text())
    verify = document["verify"]
    assert verify["duplicated"] == 1 and verify["missing"] == 0
    assert verify["present"] == document["messages"]["acknowledged"] == 400
    assert "duplicated" in result.output and f"verify-cli-{code}" in result.output
    assert verify["idempotence"] is idempotence
    assert result.exit_code == code, result.output
    if idempotence:
        assert "1 duplicate records with idempotence on" in result.output


def test_verify_refuses_values_too_short_for_an_id() -> None:
    result = CliRunner().invoke(cli, ["produce", "--message-size", "4", "--messages", "10",
                                      "--verify"])
    assert result.exit_code == 2
    assert "--message-size 8 or more" in result.output
