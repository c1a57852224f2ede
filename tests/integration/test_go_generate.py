"""The Go driver's own generator (kbatch.generate.*, benchmarks/client_throughput.py's Go
rows) against the embedded Tansu broker: every generated message is acknowledged once,
counted on the wire, and read back from the topic exactly once."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from producer_core.engine.drivers.go_clients.generate import generate
from producer_core.engine.transport.transport import Cluster
from producer_core.errors import ConfigError
from tests.kafka_fixtures import fresh_topic
from tests.readback import read_all

pytestmark = [pytest.mark.broker, pytest.mark.timeout(900)]
"""900 s: the first test may build the Go driver (cached afterwards)."""

MESSAGES = 3000
PARTITIONS = 8


async def _create(bootstrap: str, topic: str) -> None:
    cluster = Cluster(bootstrap, client_id="kbatch-test")
    try:
        await cluster.connect()
        await cluster.ensure_topic(topic, PARTITIONS, timeout_s=30)
    finally:
        await cluster.close()


@pytest.mark.parametrize("client", ["franz-go", "sarama", "kafka-go"])
def test_a_generated_run_acknowledges_every_message_once_and_reads_back(client,
                                                                       counted_broker):
    broker, proxy = counted_broker
    topic = fresh_topic(f"go-gen-{client}")
    asyncio.run(_create(proxy.address, topic))
    properties = {"bootstrap.servers": proxy.address, "acks": "all"}
    if client != "kafka-go":
        properties["enable.idempotence"] = "true"
    if client == "kafka-go":
        properties["linger.ms"] = "10"  # its default 1 s holds the last batches back
    run = generate(client, topic, MESSAGES, 64, properties, ids=True, timeout_s=120)
    result = run.result
    assert result["acked"] == MESSAGES and result["submitted"] == MESSAGES
    assert result["failed"] == result["unknown"] == result["unacked"] == 0
    assert result["topic_acked"] == [MESSAGES]
    generated = result["generated"]
    assert generated["messages"] == MESSAGES and generated["size"] == 64
    assert generated["ids"] is True and generated["partitioner"]
    assert 0 < generated["first_send_ns"] <= result["last_ack_ns"] and run.seconds > 0
    assert result["requests"] == proxy.produce_requests >= 1, "counted on the wire"
    assert sum(result["requests_by_node"].values()) == result["requests"]
    found = asyncio.run(read_all(broker.bootstrap, topic, PARTITIONS, MESSAGES))
    ids = Counter(message_id for records in found.values() for _, message_id, _ in records)
    assert sorted(ids) == list(range(MESSAGES)), "every generated message is in the topic"
    assert max(ids.values()) == 1, "and none twice"
    keys = {key for records in found.values() for _, _, key in records}
    assert keys == {None}, "keyless"
    # the client's default partitioner: keyless records spread over the partitions
    assert sum(1 for records in found.values() if records) > 1


def test_a_bad_generate_key_is_a_config_error(tansu_broker):
    with pytest.raises(ConfigError, match="kbatch.generate.ids"):
        generate("franz-go", "unused", 10, 4, {"bootstrap.servers": tansu_broker.bootstrap},
                 ids=True)
