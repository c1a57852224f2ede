"""A topic larger than a KRaft controller creates in one operation is created in steps.

Apache Kafka (KRaft) refuses to create more than 10,000 partitions in one request
("Excessively large number of partitions per request"), so `kbatch produce --broker kafka
--partitions 10000` failed before the run began. The controller here is a stand-in that
refuses the same way and records what it was asked; docs/findings/partitions-scaling.md
shows the steps against a real Kafka node (10,000 and 100,000 partitions).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from producer_core.engine.transport.transport import PARTITIONS_PER_STEP, Cluster
from producer_core.errors import BrokerError

KRAFT_LIMIT = 10_000


class Reply:
    def __init__(self, errors: list[dict[str, Any]]) -> None:
        self.errors = errors

    def to_object(self) -> dict[str, Any]:
        return {"topic_errors": self.errors}


class Controller:
    """Creates topics and partitions like a KRaft controller, up to its limit per request."""

    def __init__(self, limit: int = KRAFT_LIMIT) -> None:
        self.limit = limit
        self.partitions: dict[str, int] = {}
        self.asked: list[tuple[str, int]] = []

    async def send(self, request: Any) -> Reply:
        if request.API_KEY == 19:  # CreateTopics
            (topic, count, *_), = request.create_topic_requests
            self.asked.append(("create", count))
            if count > self.limit:
                return Reply([{"topic": topic, "error_code": 42, "error_message":
                               "Excessively large number of partitions per request"}])
            if topic in self.partitions:
                return Reply([{"topic": topic, "error_code": 36, "error_message": None}])
            self.partitions[topic] = count
            return Reply([{"topic": topic, "error_code": 0, "error_message": None}])
        (topic, (total, _)), = request._topic_partitions  # CreatePartitions
        self.asked.append(("grow", total))
        if total - self.partitions[topic] > self.limit:
            return Reply([{"topic": topic, "error_code": 42, "error_message": "too many"}])
        self.partitions[topic] = total
        return Reply([{"topic": topic, "error_code": 0, "error_message": None}])


def create(controller: Controller, partitions: int) -> bool:
    cluster = Cluster("127.0.0.1:9")
    return asyncio.run(cluster.create_topic(controller, "t", partitions, 1, 1000))


def test_a_topic_within_the_limit_is_one_request() -> None:
    controller = Controller()
    assert create(controller, KRAFT_LIMIT)
    assert controller.asked == [("create", KRAFT_LIMIT)]


@pytest.mark.parametrize("partitions", [10_001, 12_345, 100_000])
def test_a_larger_topic_is_created_then_grown_in_steps(partitions: int) -> None:
    controller = Controller()
    assert create(controller, partitions)
    assert controller.partitions["t"] == partitions
    assert controller.asked[0] == ("create", partitions)  # refused, then in steps
    assert controller.asked[1] == ("create", PARTITIONS_PER_STEP)
    totals = [total for kind, total in controller.asked[2:]]
    assert totals == sorted(totals) and totals[-1] == partitions
    steps = [b - a for a, b in zip([PARTITIONS_PER_STEP, *totals], totals, strict=False)]
    assert all(0 < step <= PARTITIONS_PER_STEP for step in steps)


def test_a_refusal_for_another_reason_is_reported() -> None:
    controller = Controller(limit=1)  # refuses every step as well
    with pytest.raises(BrokerError, match="refused to create topic 't'"):
        create(controller, 20_000)
