"""Outcomes in the results JSON and on screen: unknown apart from failed, acks=0 as sent."""

from __future__ import annotations

from rich.console import Console

from cli.render.tables import summary_table
from producer_core.results.results_io import validate_document
from tests.results_fakes import fake_results


def rendered(document: dict) -> str:
    console = Console(width=200, record=True)
    console.print(summary_table(document))
    return console.export_text()


def test_unknown_and_failed_are_separate_in_json_and_on_screen():
    results = fake_results("partition")
    m = results.metrics
    m.messages_acked -= 30
    m.fail(10, "delivery.timeout.ms")
    m.unknown(20, "request_timeout (delivery.timeout.ms)")
    m.complete = False
    m.idempotence = {"enabled": True, "producer_id": 7, "producer_epoch": 1, "epoch_bumps": 1}
    document = results.to_dict()
    validate_document(document)
    assert m.settled() == m.messages_generated
    assert document["messages"]["unknown"] == 20 and document["messages"]["failed"] == 10
    assert document["complete"] is False and document["idempotence"]["epoch_bumps"] == 1
    text = rendered(document)
    assert "acknowledged / failed / unknown" in text and "/ 10 / 20" in text
    assert "request_timeout (delivery.timeout.ms): 20" in text
    assert "7 / 1 (1)" in text and "stopped before its end" in text


def test_acks_zero_says_sent_not_acknowledged():
    results = fake_results("partition")
    m = results.metrics
    m.messages_sent_unacknowledged, m.messages_acked = m.messages_acked, 0
    results.settings = {"acks": "0"}
    document = results.to_dict()
    validate_document(document)
    text = rendered(document)
    assert "sent (acks=0) / failed / unknown" in text
    assert "acknowledged / failed" not in text
