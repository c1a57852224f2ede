"""Each run of a comparison or sweep on Tansu gets its own broker (producer_core.measure.per_run).

Why: Tansu's cost per idempotent batch grows with every producer it has seen, so a shared
broker made later runs slower than earlier ones (see the module docstring)."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from producer_core.measure.per_run import fresh_per_run, run_targets

TANSU = {"brokers": 1, "rtt_ms": 0.0, "jitter_ms": 0.0, "broker": "tansu", "kafka_home": None}


def topics_at(bootstrap: str) -> set[str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return set(admin.list_topics(timeout=10).topics)


def create_topic(bootstrap: str, name: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, 1, 1)]).values():
        future.result(timeout=10)


def test_each_run_sees_a_broker_without_the_previous_runs_topics():
    seen: list[tuple[str, set[str]]] = []

    def run(workload, settings, mode, bootstrap, progress=None, **extra):
        seen.append((bootstrap, topics_at(bootstrap)))
        create_topic(bootstrap, f"left-by-{mode}")
        return mode, extra

    with run_targets(None, TANSU) as (target, on_its_broker):
        assert target.embedded and target.bootstrap == ""
        assert "started afresh for each run" in target.description
        wrapped = on_its_broker(run)
        assert wrapped(None, None, "first", "ignored") == ("first", {})
        assert wrapped(None, None, "second", "ignored", None, stop=None) == ("second",
                                                                             {"stop": None})
    assert len(seen) == 2
    assert all(bootstrap.startswith("127.0.0.1:") for bootstrap, _ in seen)
    assert "left-by-first" not in seen[1][1]
    # and the broker of a run is stopped with it: nothing answers there afterwards
    for bootstrap, _ in seen:
        admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 500,
                             "socket.connection.setup.timeout.ms": 1000})
        with pytest.raises(KafkaException):
            admin.list_topics(timeout=1.5)


def test_a_lab_is_started_per_run_too():
    shape = dict(TANSU, brokers=2)
    with run_targets(None, shape) as (target, on_its_broker):
        assert target.description.startswith("a lab of 2 embedded Tansu brokers")
        counts = [on_its_broker(lambda w, s, m, b, p=None: len(
            AdminClient({"bootstrap.servers": b}).list_topics(timeout=10).brokers))(
            None, None, "m", "") for _ in range(2)]
    assert counts == [2, 2]


def test_external_clusters_and_kafka_are_shared_by_every_run():
    assert fresh_per_run(None, broker="tansu")
    assert not fresh_per_run("127.0.0.1:1", broker="tansu")
    assert not fresh_per_run(None, broker="kafka")
    calls = []
    with run_targets("127.0.0.1:9", TANSU) as (target, on_its_broker):
        assert target.bootstrap == "127.0.0.1:9" and not target.embedded
        on_its_broker(lambda *args, **kwargs: calls.append(args))(None, None, "m", "given")
    assert calls == [(None, None, "m", "given")]  # the run's own bootstrap, untouched
