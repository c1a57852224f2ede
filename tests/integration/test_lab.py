"""The multi-broker lab: metadata names every node and the advertised leaders, topics are
created on every backend, the delay is applied, bad shapes are refused, and shutdown
leaves nothing running. (Clients producing through it: test_multi_broker.py.)"""

from __future__ import annotations

import asyncio
import socket
import statistics
import time

import pytest
from aiokafka.conn import create_conn
from aiokafka.protocol.metadata import MetadataRequest

from producer_core.brokers.lab import MAX_BROKERS, Lab
from producer_core.errors import BrokerError, UsageError

pytestmark = pytest.mark.broker


@pytest.fixture(scope="module")
def lab():
    with Lab(brokers=3) as running:
        yield running
        assert running.errors() == []


def test_metadata_shows_every_node_and_the_advertised_leaders(lab):
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": lab.nodes[2].address})
    for future in admin.create_topics([NewTopic("layout", 7, 1)],
                                      operation_timeout=10).values():
        future.result()
    metadata = admin.list_topics(timeout=10)
    assert {b.id: (b.host, b.port) for b in metadata.brokers.values()} == {
        n.node_id: (n.host, n.port) for n in lab.nodes}
    partitions = metadata.topics["layout"].partitions
    assert {p: partitions[p].leader for p in partitions} == {p: p % 3 + 1 for p in range(7)}
    assert all(partitions[p].replicas == [partitions[p].leader] == partitions[p].isrs
               for p in partitions)
    cluster = admin.describe_cluster().result()
    assert sorted(n.id for n in cluster.nodes) == [1, 2, 3] and cluster.controller.id == 1

    async def aiokafka_view():
        conn = await create_conn(lab.nodes[1].host, lab.nodes[1].port)
        try:
            return (await conn.send(MetadataRequest(["layout"], False))).to_object()
        finally:
            conn.close()

    view = asyncio.run(aiokafka_view())
    assert [b["node_id"] for b in view["brokers"]] == [1, 2, 3]
    assert view["controller_id"] == 1
    leaders = {p["partition"]: p["leader"] for p in view["topics"][0]["partitions"]}
    assert leaders == {p: lab.leader("layout", p) for p in range(7)}
    # the topic was created on every backend, with the same partitions
    for backend in lab.backends:
        assert len(asyncio.run(_backend_partitions(backend.host, backend.port, "layout"))) == 7


async def _backend_partitions(host: str, port: int, topic: str) -> list[int]:
    conn = await create_conn(host, port)
    try:
        response = (await conn.send(MetadataRequest([topic], False))).to_object()
    finally:
        conn.close()
    return [p["partition"] for p in response["topics"][0]["partitions"]]


def _round_trips(lab: Lab, count: int, pipelined: bool = False) -> list[float]:
    async def measure() -> list[float]:
        node = lab.nodes[0]
        conn = await create_conn(node.host, node.port)
        try:
            if pipelined:
                started = time.perf_counter()
                await asyncio.gather(*(conn.send(MetadataRequest([], False))
                                       for _ in range(count)))
                return [time.perf_counter() - started]
            times = []
            for _ in range(count):
                started = time.perf_counter()
                await conn.send(MetadataRequest([], False))
                times.append(time.perf_counter() - started)
            return times
        finally:
            conn.close()

    return [t * 1000 for t in asyncio.run(measure())]


def test_delay_is_applied_per_response_and_requests_in_flight_overlap():
    with Lab(brokers=2, rtt_ms=40) as lab:
        times = _round_trips(lab, 10)
        assert min(times) >= 40 and statistics.median(times) <= 40 + 10, times
        # ten requests in flight at once take about one round trip, not ten
        (together,) = _round_trips(lab, 10, pipelined=True)
        assert 40 <= together <= 2 * 40, together
    with Lab(brokers=1, rtt_ms=30, jitter_ms=20, seed=7) as lab:
        times = _round_trips(lab, 30)
        assert min(times) >= 10 and max(times) <= 50 + 10, times
        assert max(times) - min(times) > 10  # the jitter shows
    with Lab(brokers=2) as lab:  # no delay asked: none added
        assert statistics.median(_round_trips(lab, 10)) < 10


@pytest.mark.parametrize(("kwargs", "fragment"), [
    ({"brokers": 0}, f"a lab has 1 to {MAX_BROKERS} brokers"),
    ({"brokers": MAX_BROKERS + 1}, f"a lab has 1 to {MAX_BROKERS} brokers"),
    ({"brokers": 3, "rtt_ms": -1}, "out of range"),
    ({"brokers": 3, "rtt_ms": 5, "jitter_ms": 6}, "must be between 0 and --rtt-ms"),
    ({"brokers": 3, "base_port": 65534}, "ports go from 1 to 65535"),
])
def test_bad_shapes_are_refused_before_anything_starts(kwargs, fragment):
    with pytest.raises(UsageError, match=fragment):
        Lab(**kwargs)


def test_ports_in_use_are_named_and_nothing_is_left_running():
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        lab = Lab(brokers=2, base_port=taken)
        with pytest.raises(BrokerError, match="already in use") as failure:
            lab.start()
        message = str(failure.value)
        assert f" {taken}" in message and "--base-port" in message
        assert lab.backends == [] and lab.pids == []
        if f"{taken + 1}" not in message:  # the node that did bind was released again
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", taken + 1))


@pytest.mark.parametrize("facade", ["process", "thread"])
def test_stop_leaves_no_process_and_no_listener(facade):
    lab = Lab(brokers=3, facade=facade).start()
    pids, nodes = lab.pids, lab.nodes
    assert len(pids) == 3 and lab.running
    if facade == "process":
        assert lab.facade_pid is not None
        pids.append(lab.facade_pid)
    else:
        assert lab.facade_pid is None
    lab.stop()
    lab.stop()  # idempotent
    assert not lab.running
    time.sleep(0.2)
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            _signal_zero(pid)
    for node in nodes:
        with pytest.raises(OSError), socket.create_connection((node.host, node.port), 1):
            pass


def _signal_zero(pid: int) -> None:
    import os

    os.kill(pid, 0)
