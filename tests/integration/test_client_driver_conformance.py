"""The conformance test of the client-driver pipe protocol (docs/architecture/client-drivers.md):
every driver (the Java producer's, and the Go driver for franz-go, sarama and kafka-go) is
spoken to directly over the protocol, against a broker behind a wire proxy, and must

- say hello with the protocol version and its client's version, and answer pings;
- settle every message it was handed exactly once (acknowledged, failed, unknown or
  written unacknowledged), reporting each acknowledged one once with its offset;
- count Produce requests exactly: one request line per Produce request the proxy saw;
- on a stop (end of input without 'E') exit 3 at once, and in kbatch's run a stop mid-run
  ends with partial results in which every generated message has its outcome;
- answer settings it cannot take with a config_error line (and a non-zero exit).
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter

import pytest

from producer_core.config import build_settings
from producer_core.engine.drivers.client_pipe.protocol import PROTOCOL_VERSION, RESULT_FIELDS
from producer_core.engine.drivers.engine import run
from producer_core.engine.transport.transport import ensure_topics
from producer_core.workload.workload import Workload
from tests.pipe_driver import DRIVERS, PipeSession, base_settings
from tests.wire_proxy import produce_frames_of

pytestmark = [pytest.mark.broker, pytest.mark.timeout(900)]
"""900 s: the first test may build the Go driver (2 min from a cold Go cache at load 10)."""

PARTITIONS = 4


def _topic(bootstrap: str, name: str) -> str:
    workload = Workload(topic=name, partitions=PARTITIONS, rate=1, duration_s=1)
    asyncio.run(ensure_topics(bootstrap, build_settings(mode="partition"),
                              workload.topic_specs()))
    return name


@pytest.mark.parametrize("mode", DRIVERS)
def test_every_message_gets_one_outcome_and_every_produce_request_is_counted(
        mode, counted_broker):
    _, proxy = counted_broker
    topic = _topic(proxy.address, f"conf-{mode}")
    before = proxy.produce_requests  # kbatch's priming of the new topic
    session = PipeSession.start(mode)
    try:
        hello = session.wait_for("hello")[0]
        assert hello["protocol"] == PROTOCOL_VERSION and hello["client_version"]
        session.header([topic], base_settings(mode, proxy.address))
        session.write(b"P")
        assert isinstance(session.wait_for("pong")[0]["ns"], int)
        total = 0
        for _ in range(5):  # a few passes, as kbatch's generator writes them
            session.send(200, PARTITIONS, first_id=total)
            total += 200
        assert session.end() == 0, session.stderr_text()[-2000:]
    finally:
        session.close()
    result = session.of("result")
    assert len(result) == 1 and session.lines[-1]["type"] == "result"
    result = result[0]
    assert set(RESULT_FIELDS) <= set(result)
    assert result["submitted"] == total
    settled = result["acked"] + result["failed"] + result["unacked"] + result["unknown"]
    assert settled == total and result["acked"] == total, result
    assert sum(result["topic_acked"]) == total
    deliveries = session.of("delivery")
    assert sorted(d["id"] for d in deliveries) == list(range(total))  # each once
    offsets = Counter((d["partition"], d["offset"]) for d in deliveries)
    assert max(offsets.values()) == 1
    requests = session.of("request")
    assert len(requests) == result["requests"] == proxy.produce_requests - before > 0
    assert sum(r["records"] for r in requests) == total  # no retries on a healthy broker
    assert all(1 <= r["partitions"] <= PARTITIONS for r in requests)
    assert sum(result["requests_by_node"].values()) == len(requests)


@pytest.mark.parametrize("mode", DRIVERS)
def test_end_of_input_without_end_frame_stops_the_driver_at_once(mode, tansu_broker):
    topic = _topic(tansu_broker.bootstrap, f"conf-eof-{mode}")
    session = PipeSession.start(mode)
    try:
        session.wait_for("hello")
        session.header([topic], base_settings(mode, tansu_broker.bootstrap))
        session.send(50, PARTITIONS)
        assert session.stop(timeout=30) == 3
    finally:
        session.close()
    assert session.of("result") == []


@pytest.mark.parametrize("mode", DRIVERS)
def test_bad_settings_give_a_config_error(mode, tansu_broker):
    session = PipeSession.start(mode)
    try:
        session.wait_for("hello")
        session.header(["any"], {**base_settings(mode, tansu_broker.bootstrap),
                                 "linger.ms": "soon"})
        errors = session.wait_for("config_error")
        assert session.finish(30) not in (0, 3)
    finally:
        session.close()
    assert "linger.ms" in errors[0]["message"] or "soon" in errors[0]["message"], errors


@pytest.mark.parametrize("mode", DRIVERS)
def test_a_stop_mid_run_ends_with_partial_results(mode, counted_broker):
    _, proxy = counted_broker
    workload = Workload(topic=f"conf-stop-{mode}", partitions=PARTITIONS, rate=1000,
                        duration_s=30)
    settings = build_settings({"linger.ms": "5"}.items(), mode=mode)
    stop = threading.Event()
    timer = threading.Timer(6.0, stop.set)  # the JVM's start takes a few seconds
    timer.start()
    try:
        results = run(workload, settings, mode, proxy.address, stop=stop)
    finally:
        timer.cancel()
    m = results.metrics
    assert m.complete is False
    assert 0 < m.messages_generated < workload.total_messages
    assert m.settled() == m.messages_generated
    assert m.messages_acked > 0
    assert produce_frames_of(results) == proxy.produce_requests  # (priming on it too)
