"""Priming against a fake cluster (issue 47): which partitions, how many rounds and
requests, a padded first record, a refused size, and errors that are final or not."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from producer_core.engine.transport.priming import PAD_HEADER, prime_topic
from producer_core.errors import BrokerError


class FakeCluster:
    """Two leaders; `ends`: partition -> log end; `answers`: per written request, the
    error code every partition of it gets (then 0)."""

    def __init__(self, ends: list[int], answers: list[int] | None = None) -> None:
        self.leaders = [1 + p % 2 for p in range(len(ends))]
        self.ends = ends
        self.answers = list(answers or [])
        self.requests: list[tuple[int, list[int], int]] = []  # leader, partitions, bytes
        self.batches: list[bytes] = []

    async def refresh_metadata(self, topics: list[str]) -> SimpleNamespace:
        return SimpleNamespace(leaders={topics[0]: self.leaders})

    async def connection(self, leader: int) -> SimpleNamespace:
        async def send(request):
            parts = request._topics[0][1]
            listed = [{"partition": p, "error_code": 0, "offset": self.ends[p]}
                      for p, _ in parts]
            return SimpleNamespace(to_object=lambda: {"topics": [{"partitions": listed}]})
        return SimpleNamespace(send=send)

    def send(self, leader: int, request):
        topic, parts = request._topics[0]
        self.requests.append((leader, [p for p, _ in parts], len(parts[0][1])))
        self.batches.append(parts[0][1])
        code = self.answers.pop(0) if self.answers else 0
        future = asyncio.get_event_loop().create_future()
        future.set_result(SimpleNamespace(topics=[(topic, [(p, code, 0, -1, 0)
                                                           for p, _ in parts])]))
        return future


def prime(cluster: FakeCluster, **kwargs):
    return asyncio.run(prime_topic(cluster, "t", timeout_s=kwargs.pop("timeout_s", 5.0),
                                   **kwargs))


def test_empty_partitions_get_a_padded_round_then_a_small_one() -> None:
    cluster = FakeCluster(ends=[0, 0, 7, 0])
    notes: list[str] = []
    priming = prime(cluster, on_note=notes.append, pad=5000)
    assert (priming.primed, priming.already_written, priming.requests) == (3, 1, 4)
    rounds = [(leader, parts) for leader, parts, _ in cluster.requests]
    assert rounds == [(1, [0]), (2, [1, 3]), (1, [0]), (2, [1, 3])]
    sizes = [size for _, _, size in cluster.requests]
    assert sizes[0] > 5000 and sizes[2] < 200  # padded, then small
    assert notes and "3 empty partitions" in notes[0]


def test_a_warm_topic_is_not_written() -> None:
    cluster = FakeCluster(ends=[3, 9])
    priming = prime(cluster)
    assert (priming.primed, priming.requests) == (0, 0) and cluster.requests == []


def test_a_refused_size_falls_back_to_the_small_record() -> None:
    cluster = FakeCluster(ends=[0, 0], answers=[10])  # MESSAGE_TOO_LARGE for the padded
    priming = prime(cluster)
    assert priming.primed == 2
    assert [size < 200 for _, _, size in cluster.requests[-2:]] == [True, True]


def test_a_retriable_refusal_is_asked_again_and_a_final_one_is_an_error() -> None:
    retried = FakeCluster(ends=[0], answers=[6])  # NOT_LEADER_OR_FOLLOWER once
    assert prime(retried).primed == 1 and len(retried.requests) == 3
    refused = FakeCluster(ends=[0], answers=[29])  # TOPIC_AUTHORIZATION_FAILED
    with pytest.raises(BrokerError, match="TopicAuthorizationFailedError.*--no-prime"):
        prime(refused)


def test_the_padding_is_a_header_of_the_record() -> None:
    cluster = FakeCluster(ends=[0])
    prime(cluster, pad=4224)
    padded, small = cluster.batches
    assert PAD_HEADER.encode() in padded and PAD_HEADER.encode() not in small
