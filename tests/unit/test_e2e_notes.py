"""End-to-end figures explained where they would mislead (issue 49): the consumers' fetch
wait named when it is most of the gap above ack latency; read_uncommitted on a
transactional run said."""

from __future__ import annotations

from producer_core.measure.e2e_notes import fetch_wait_note, isolation_note


def test_a_large_gap_at_the_default_fetch_wait_is_named():
    note = fetch_wait_note(3.0, 118.0, {})
    assert note is not None and "115.0 ms above the ack p50" in note
    assert "fetch.wait.max.ms=500" in note and "--consumer-config fetch.wait.max.ms=10" in note


def test_no_note_for_a_small_gap_or_a_wait_the_user_chose():
    assert fetch_wait_note(3.0, 20.0, {}) is None
    assert fetch_wait_note(3.0, 300.0, {"fetch.wait.max.ms": "100"}) is None


def test_read_uncommitted_on_a_transactional_run_is_said():
    assert "aborted records" in isolation_note(True, "read_uncommitted")
    assert isolation_note(True, "read_committed") is None
    assert isolation_note(False, "read_uncommitted") is None
