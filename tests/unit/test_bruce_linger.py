"""Mode `bruce`, driven with synthetic time and a real Accumulator: per-topic thresholds,
combined batches, the combining sender, late partition choice, rate limiting."""

from __future__ import annotations

from collections import Counter

import pytest

from producer_core.config import build_settings
from producer_core.engine.core.accumulator import (
    PARTITION_OVERHEAD_BYTES,
    REQUEST_OVERHEAD_BYTES,
    Accumulator,
    TopicPartition,
)
from producer_core.engine.core.linger.base import PollContext, RequestLimits
from producer_core.engine.core.linger.bruce_policy import (
    BruceConfig,
    BrucePolicy,
    RateLimit,
    Thresholds,
    largest_record_batch,
)
from producer_core.engine.drivers.generator import Generator
from producer_core.engine.modes import make_policy, mode
from producer_core.errors import ConfigError
from producer_core.results.metrics import RunMetrics
from producer_core.workload.workload import KeySpec, RateSpec, SizeSpec, TopicSpec, Workload

VALUE = bytes(10)
RECORD_BYTES = 17
"""Record bytes of one VALUE record (no key) in a batch."""
FREE = {1: 5, 2: 5}
BUSY = {1: 0, 2: 0}
TEN_MS = Thresholds(max_delay_s=0.010)


class Rig:
    """A policy and accumulator fed the way the generator feeds them."""

    def __init__(self, topics: list[tuple[str, int]], own: dict[int, Thresholds] | None = None,
                 combined: Thresholds = TEN_MS,
                 limits: dict[int, RateLimit] | None = None, leaders: list[int] | None = None,
                 max_request_size: int = 1 << 20, keyless: tuple[bool, ...] = ()) -> None:
        slots = [TopicPartition(name, p) for name, count in topics for p in range(count)]
        self.first = []
        for name, _ in topics:
            self.first.append(next(i for i, tp in enumerate(slots) if tp.topic == name))
        self.partitions = [count for _, count in topics]
        # as the engine builds it in mode bruce (`ModeSpec.batch_size`)
        self.acc = Accumulator(slots, largest_record_batch(16384, max_request_size))
        config = BruceConfig(
            combined,
            tuple((own or {}).get(i) for i in range(len(topics))),
            tuple((limits or {}).get(i) for i in range(len(topics))),
        )
        self.policy = BrucePolicy(self.acc, leaders or [1] * len(slots),
                                  RequestLimits(max_request_size), config, keyless)
        self.sequence = [0] * len(topics)
        self.flushing = False
        self.memory_exhausted = False
        """The engine's state each poll hands the policy (`PollContext`)."""

    def feed(self, topic: int, count: int, now: float, partitions: list[int] | None = None
             ) -> int:
        """One generator pass for a topic: admit, choose slots, append, report events.
        `partitions` (one per message) makes the messages keyed; otherwise keyless."""
        admitted = self.policy.admit(topic, count, now)
        seqs = range(self.sequence[topic], self.sequence[topic] + admitted)
        self.sequence[topic] += count
        if not admitted:
            return 0
        first = self.first[topic]
        if partitions is None:
            slots = self.policy.keyless_slots(topic, first, self.partitions[topic], seqs, now)
        else:  # keyed: the policy only sees where they go (no key bytes, to keep sizes even)
            slots = [first + p for p in partitions[:admitted]]
        ids = range((topic << 40) + seqs.start, (topic << 40) + seqs.stop)
        for slot, event in self.acc.append_many(slots, ids, None, [VALUE] * admitted,
                                                [now] * admitted, now, 0):
            self.policy.on_append(slot, event, now)
        return admitted

    def poll(self, now: float, free=FREE):
        return self.policy.poll(now, PollContext(free, flushing=self.flushing,
                                                 memory_exhausted=self.memory_exhausted))


def records(plan) -> int:
    return sum(batch.record_count for batch in plan.batches)


def partitions_of(plan) -> list[int]:
    return [batch.slot for batch in plan.batches]


# ------------------------------------------------------------ per-topic thresholds
def test_max_delay_fires_when_the_oldest_message_is_old_enough():
    rig = Rig([("a", 4)], own={0: Thresholds(max_delay_s=0.020)})
    rig.feed(0, 3, now=1.000, partitions=[0, 1, 2])
    rig.feed(0, 2, now=1.015, partitions=[1, 3])
    assert rig.poll(1.015) == []
    assert rig.policy.next_wakeup() == pytest.approx(1.020)  # from the oldest, not extended
    assert rig.poll(1.019) == []
    [plan] = rig.poll(1.020)
    assert plan.reason == "max_delay"
    assert records(plan) == 5 and sorted(partitions_of(plan)) == [0, 1, 2, 3]
    assert rig.acc.empty and rig.policy.next_wakeup() is None
    stats = rig.policy.stats()
    assert stats["batches_by_reason"]["max_delay"] == 1 and stats["topic_batches"] == 1
    assert stats["batch_age"]["max_ms"] == pytest.approx(20.0)


def test_max_messages_fires_at_the_count():
    rig = Rig([("a", 2)], own={0: Thresholds(max_messages=5)})
    rig.feed(0, 4, now=0.0, partitions=[0, 1, 0, 1])
    assert rig.poll(0.0) == []
    assert rig.policy.next_wakeup() is None  # no delay threshold: only appends can complete it
    rig.feed(0, 1, now=0.5, partitions=[0])
    [plan] = rig.poll(0.5)
    assert plan.reason == "max_messages" and records(plan) == 5


def test_max_bytes_fires_at_the_record_bytes():
    rig = Rig([("a", 2)], own={0: Thresholds(max_bytes=3 * RECORD_BYTES)})
    rig.feed(0, 2, now=0.0, partitions=[0, 1])
    assert rig.poll(0.0) == []
    rig.feed(0, 1, now=0.1, partitions=[1])
    [plan] = rig.poll(0.1)
    assert plan.reason == "max_bytes" and records(plan) == 3


def test_any_combination_the_first_threshold_reached_completes_the_batch():
    rig = Rig([("a", 1)], own={0: Thresholds(max_delay_s=0.050, max_messages=10)})
    rig.feed(0, 3, now=0.0, partitions=[0, 0, 0])
    [plan] = rig.poll(0.050)
    assert plan.reason == "max_delay" and records(plan) == 3
    rig.feed(0, 10, now=0.060, partitions=[0] * 10)
    [plan] = rig.poll(0.060)
    assert plan.reason == "max_messages" and records(plan) == 10


def test_each_topic_batches_on_its_own_thresholds():
    rig = Rig([("fast", 2), ("slow", 2)],
              own={0: Thresholds(max_delay_s=0.005), 1: Thresholds(max_delay_s=0.100)})
    rig.feed(0, 2, now=0.0, partitions=[0, 1])
    rig.feed(1, 2, now=0.0, partitions=[0, 1])
    [plan] = rig.poll(0.005)
    assert partitions_of(plan) == [0, 1]  # only topic fast
    assert rig.poll(0.099) == []
    [plan] = rig.poll(0.100)
    assert partitions_of(plan) == [2, 3]


# --------------------------------------------------------------- combined batches
def test_topics_without_thresholds_share_the_combined_batch_per_broker():
    rig = Rig([("own", 2), ("x", 2), ("y", 2)], own={0: Thresholds(max_delay_s=1.0)},
              combined=Thresholds(max_delay_s=0.010, max_messages=100))
    rig.feed(1, 2, now=0.000, partitions=[0, 1])
    rig.feed(2, 1, now=0.008, partitions=[1])  # joins the running batch, does not extend it
    rig.feed(0, 1, now=0.008, partitions=[0])  # has its own thresholds: not in the combined
    assert rig.policy.next_wakeup() == pytest.approx(0.010)
    [plan] = rig.poll(0.010)
    assert plan.reason == "max_delay"
    assert sorted(partitions_of(plan)) == [2, 3, 5]  # topics x and y in one batch
    stats = rig.policy.stats()
    assert stats["batches_per_request"] == {"mean": 1.0, "max": 1.0}
    assert stats["combined_batches"] == 1 and stats["topic_batches"] == 0
    assert rig.acc.queued_records == 1  # topic own waits for its own delay


def test_combined_count_threshold_counts_every_topic():
    rig = Rig([("x", 1), ("y", 1)], combined=Thresholds(max_messages=4))
    rig.feed(0, 2, now=0.0, partitions=[0, 0])
    rig.feed(1, 1, now=0.0, partitions=[0])
    assert rig.poll(0.0) == []
    rig.feed(1, 1, now=0.1, partitions=[0])
    [plan] = rig.poll(0.1)
    assert plan.reason == "max_messages" and records(plan) == 4


def test_combined_batches_are_per_broker():
    rig = Rig([("x", 4)], combined=Thresholds(max_delay_s=0.010), leaders=[1, 2, 1, 2])
    rig.feed(0, 1, now=0.000, partitions=[1])  # broker 2
    rig.feed(0, 1, now=0.005, partitions=[0])  # broker 1: its own window
    [plan] = rig.poll(0.010)
    assert plan.broker == 2 and partitions_of(plan) == [1]
    [plan] = rig.poll(0.015)
    assert plan.broker == 1 and partitions_of(plan) == [0]


# -------------------------------------------------- the sender combines queued batches
def test_queued_batches_go_together_in_the_next_request():
    rig = Rig([("a", 2), ("b", 2), ("c", 2)],
              own={0: Thresholds(max_messages=2), 1: Thresholds(max_delay_s=0.010)},
              combined=Thresholds(max_delay_s=0.020))
    rig.feed(0, 2, now=0.000, partitions=[0, 1])
    rig.feed(1, 1, now=0.000, partitions=[0])
    rig.feed(2, 1, now=0.000, partitions=[1])
    assert rig.poll(0.000, BUSY) == []  # a completes, but the sender has no request slot
    assert rig.poll(0.010, BUSY) == []  # b completes too
    assert rig.poll(0.020, BUSY) == []  # and the combined batch
    [plan] = rig.poll(0.021, {1: 1})
    assert partitions_of(plan) == [0, 1, 2, 5]  # completion order: a, b, combined
    assert plan.reason == "max_messages"  # the oldest batch it carries
    assert rig.policy.stats()["batches_per_request"] == {"mean": 3.0, "max": 3.0}
    assert rig.acc.empty
    assert rig.policy.stats()["requests_combining_batches"] == 1


def one_record_request(batches: int) -> int:
    """A max.request.size that fits exactly `batches` one-record batches."""
    return REQUEST_OVERHEAD_BYTES + batches * (78 + PARTITION_OVERHEAD_BYTES)


def test_the_request_limit_leaves_the_rest_for_the_next_request():
    rig = Rig([("a", 3), ("b", 2)], own={0: Thresholds(max_messages=3)},
              combined=Thresholds(max_delay_s=0.010), max_request_size=one_record_request(2))
    rig.feed(0, 3, now=0.000, partitions=[0, 1, 2])
    rig.feed(1, 2, now=0.000, partitions=[0, 1])
    assert rig.poll(0.000, BUSY) == []
    assert rig.poll(0.010, BUSY) == []
    first = rig.poll(0.010, {1: 1})
    assert [partitions_of(p) for p in first] == [[0, 1]]  # two fit; the rest waits, in order
    assert rig.policy.stats()["requests_with_carry_over"] == 0
    rest = rig.poll(0.011, {1: 5})
    assert [partitions_of(p) for p in rest] == [[2, 3], [4]]
    assert rest[0].reason == "max_messages"  # the oldest batch it carries
    assert rig.acc.empty
    stats = rig.policy.stats()
    assert stats["requests_with_carry_over"] == 2  # both carry what the first left over
    # completed batches per request: a's first two partitions, then the rest of a with
    # the combined batch, then the rest of the combined batch
    assert stats["batches_per_request"] == {"mean": pytest.approx(1.333), "max": 2.0}
    assert stats["requests_combining_batches"] == 1


def test_with_free_request_slots_the_remainder_goes_at_once():
    rig = Rig([("a", 3)], combined=Thresholds(max_delay_s=0.010),
              max_request_size=one_record_request(1))
    rig.feed(0, 3, now=0.0, partitions=[0, 1, 2])
    plans = rig.poll(0.010)
    assert [partitions_of(p) for p in plans] == [[0], [1], [2]]


def test_messages_after_completion_start_the_next_batch():
    rig = Rig([("a", 1)], own={0: Thresholds(max_messages=3, max_delay_s=0.050)})
    rig.feed(0, 3, now=0.000, partitions=[0, 0, 0])
    assert rig.poll(0.000, BUSY) == []  # complete, waiting for a request slot
    rig.feed(0, 2, now=0.010, partitions=[0, 0])  # same partition, next batch
    [plan] = rig.poll(0.011, {1: 5})
    assert records(plan) == 3  # only the completed batch
    assert rig.acc.queued_records == 2
    assert rig.policy.next_wakeup() == pytest.approx(0.060)  # aged from its own first message
    [plan] = rig.poll(0.060)
    assert records(plan) == 2 and plan.reason == "max_delay"


def test_flush_completes_everything_and_a_retry_goes_at_once():
    rig = Rig([("a", 2), ("b", 2)], own={0: Thresholds(max_delay_s=10.0)},
              combined=Thresholds(max_delay_s=10.0))
    rig.feed(0, 1, now=0.0, partitions=[0])
    rig.feed(1, 1, now=0.0, partitions=[1])
    rig.flushing = True
    [plan] = rig.poll(0.1)
    assert plan.reason == "flush" and partitions_of(plan) == [0, 3]
    batch = plan.batches[0]
    rig.acc.requeue_front(batch)
    rig.policy.on_requeue(batch.slot, 0.2)
    [plan] = rig.poll(0.2)
    assert plan.reason == "retry" and plan.batches == [batch]


def test_memory_exhausted_completes_open_batches():
    rig = Rig([("a", 1)], combined=Thresholds(max_bytes=1 << 30))
    rig.feed(0, 5, now=0.0, partitions=[0] * 5)
    assert rig.poll(0.0) == []
    rig.memory_exhausted = True
    [plan] = rig.poll(0.1)
    assert plan.reason == "memory" and records(plan) == 5


def test_a_partition_batch_grows_up_to_the_request_limit():
    rig = Rig([("a", 1)], own={0: Thresholds(max_messages=3000)})
    largest = (1 << 20) - REQUEST_OVERHEAD_BYTES - PARTITION_OVERHEAD_BYTES
    assert mode("bruce").accumulator_batch_size(build_settings(mode="bruce")) == largest
    assert mode("partition").accumulator_batch_size(build_settings()) == 16384
    assert rig.acc.batch_size == largest
    rig.feed(0, 3000, now=0.0, partitions=[0] * 3000)  # ~60 KB: one record batch
    [plan] = rig.poll(0.0)
    assert len(plan.batches) == 1 and records(plan) == 3000


# ------------------------------------------------------------ late partition choice
def test_keyless_messages_of_a_request_share_one_partition_then_round_robin():
    rig = Rig([("k", 4)], own={0: Thresholds(max_delay_s=0.010)})
    chosen = []
    for round_index in range(6):
        start = round_index * 0.010
        rig.feed(0, 3, now=start)
        rig.feed(0, 2, now=start + 0.004)  # several passes, one request
        [plan] = rig.poll(start + 0.010)
        assert len(plan.batches) == 1 and records(plan) == 5
        chosen.append(plan.batches[0].slot)
    assert chosen == [0, 1, 2, 3, 0, 1]
    assert rig.policy.stats()["keyless_partition_changes"] == 6


def test_keyless_choice_cycles_over_the_partitions_the_broker_leads():
    rig = Rig([("k", 4)], own={0: Thresholds(max_delay_s=0.010)}, leaders=[1, 2, 1, 2])
    seen = []
    for round_index in range(4):
        start = round_index * 0.010
        rig.feed(0, 4, now=start)
        [plan] = rig.poll(start + 0.010)
        seen.append((plan.broker, plan.batches[0].slot))
    # a topic's batches go to brokers in proportion to the partitions they lead; on each
    # broker the partition moves round-robin over that broker's partitions of the topic
    assert seen == [(1, 0), (2, 1), (1, 2), (2, 3)]


def test_combined_keyless_topics_each_get_one_partition_per_request():
    rig = Rig([("k1", 3), ("k2", 3), ("keyed", 3)], combined=Thresholds(max_delay_s=0.010))
    for round_index in range(3):
        start = round_index * 0.010
        rig.feed(0, 4, now=start)
        rig.feed(1, 2, now=start)
        rig.feed(2, 3, now=start, partitions=[0, 1, 2])
        [plan] = rig.poll(start + 0.010)
        slots = partitions_of(plan)
        assert [s for s in slots if s < 3] == [round_index]
        assert [s for s in slots if 3 <= s < 6] == [3 + round_index]
        assert sorted(s for s in slots if s >= 6) == [6, 7, 8]  # keyed: their key's partition


def test_keyless_partition_is_kept_until_a_request_empties_it():
    rig = Rig([("k", 3)], own={0: Thresholds(max_messages=2)})
    rig.feed(0, 2, now=0.0)
    assert rig.poll(0.0, BUSY) == []  # complete; the sender is busy
    rig.feed(0, 1, now=0.001)  # next batch: still partition 0 (its data is unsent)
    [plan] = rig.poll(0.002)
    assert partitions_of(plan) == [0] and records(plan) == 2
    rig.feed(0, 1, now=0.003)  # partition 0 still holds keyless data: keep it
    [plan] = rig.poll(0.004)
    assert partitions_of(plan) == [0] and records(plan) == 2
    rig.feed(0, 2, now=0.005)  # now partition 0 was emptied: the next one
    [plan] = rig.poll(0.005)
    assert partitions_of(plan) == [1]


# ------------------------------------------------------------------- rate limiting
def test_rate_limit_admits_at_most_max_messages_per_window():
    rig = Rig([("limited", 1), ("free", 1)], limits={0: RateLimit(1.0, 10)})
    assert rig.feed(0, 25, now=0.0, partitions=[0] * 25) == 10
    assert rig.feed(0, 5, now=0.5, partitions=[0] * 5) == 0
    assert rig.feed(1, 50, now=0.5, partitions=[0] * 50) == 50  # other topics unlimited
    assert rig.feed(0, 7, now=1.0, partitions=[0] * 7) == 7  # a new window
    assert rig.feed(0, 5, now=1.2, partitions=[0] * 5) == 3
    assert rig.feed(0, 4, now=2.5, partitions=[0] * 4) == 4  # window from the first arrival
    assert rig.policy.stats()["rate_limit_discards"] == {"limited": 15 + 5 + 2}


def test_rate_limit_zero_discards_everything():
    rig = Rig([("zero", 1)], limits={0: RateLimit(0.001, 0)})
    assert rig.feed(0, 5, now=0.0, partitions=[0] * 5) == 0
    assert rig.feed(0, 5, now=1.0, partitions=[0] * 5) == 0


def test_generator_reports_exactly_the_excess_per_topic_and_reason():
    """Through the real Generator: 100 msg/s for 3 s, 30 admitted per second."""
    topics = (
        TopicSpec("limited", 2, RateSpec("constant", 100.0), KeySpec(), SizeSpec("fixed", 10),
                  rate_limit=(1000, 30)),
        TopicSpec("other", 2, RateSpec("constant", 100.0), KeySpec("uniform", 5),
                  SizeSpec("fixed", 10)),
    )
    workload = Workload(duration_s=3.0, topics=topics)
    slots = [TopicPartition(t.name, p) for t in topics for p in range(t.partitions)]
    acc = Accumulator(slots, 16384)
    policy = make_policy("bruce", acc, [1] * 4, build_settings({}, mode="bruce"), topics)
    metrics = RunMetrics()
    generator = Generator(workload, [0, 2], acc, policy, metrics)
    generator.begin(0.0)
    sent = 0
    for step in range(12):  # passes at 0, 0.25, ..., 2.75 and one at 2.999
        generator.generate(step * 0.25)
        sent += sum(records(p) for p in policy.poll(step * 0.25, PollContext(FREE)))
    generator.generate(2.999)
    limited, other = metrics.topics["limited"], metrics.topics["other"]
    assert limited.generated == 300 and other.generated == 300
    assert limited.discarded == 300 - 3 * 30  # windows start at 0, 1.0 and 2.0
    assert limited.discard_reasons == Counter({"rate_limit (limited)": 210})
    assert other.discarded == 0
    assert metrics.messages_discarded == 210
    assert metrics.discard_reasons == Counter({"rate_limit (limited)": 210})
    sent += sum(records(p) for p in policy.poll(3.0, PollContext(FREE, flushing=True)))
    assert sent == 3 * 30 + 300 and acc.empty  # every admitted message is sent
    assert policy.stats()["rate_limit_discards"] == {"limited": 210}


# ------------------------------------------------------------------ configuration
def settings(**values: str):
    return build_settings(values, mode="bruce")


TOPICS = (
    TopicSpec("orders", 4, batching=(("max_delay_ms", 20), ("max_bytes", 1000))),
    TopicSpec("clicks.v2", 4, rate_limit=(1000, 50)),
    TopicSpec("misc", 4),
)


def policy_for(topics, **values: str) -> BrucePolicy:
    slots = [TopicPartition(t.name, p) for t in topics for p in range(t.partitions)]
    acc = Accumulator(slots, 16384)
    policy = make_policy("bruce", acc, [1] * len(slots),
                         build_settings(values.items(), mode="bruce"), topics)
    assert isinstance(policy, BrucePolicy)
    return policy


def test_file_thresholds_and_x_overrides():
    policy = policy_for(TOPICS, **{
        "bruce.topic.orders.max.messages": "100",
        "bruce.topic.orders.max.bytes": "-1",  # off
        "bruce.topic.clicks.v2.max.delay.ms": "0",  # names may contain dots; 0: at once
        "bruce.topic.clicks.v2.rate.limit.max.messages": "70",
        "bruce.combined.max.delay.ms": "30",
    })
    config = policy.config
    assert config.topics[0] == Thresholds(max_delay_s=0.020, max_messages=100)
    assert config.topics[1] == Thresholds(max_delay_s=0.0)
    assert config.topics[2] is None  # the combined batch
    assert config.combined == Thresholds(max_delay_s=0.030, max_bytes=262144)
    assert config.rate_limits == (None, RateLimit(1.0, 70), None)


def test_a_topic_with_every_threshold_off_joins_the_combined_batch():
    policy = policy_for(TOPICS, **{"bruce.topic.orders.max.delay.ms": "-1",
                                   "bruce.topic.orders.max.bytes": "-1"})
    assert policy.config.topics[0] is None


def test_unknown_topic_names_are_refused_clearly():
    with pytest.raises(ConfigError, match=r"names topic 'order'.*not a topic of this workload"
                                          r".*orders, clicks.v2, misc"):
        policy_for(TOPICS, **{"bruce.topic.order.max.delay.ms": "5"})


def test_half_a_rate_limit_is_refused():
    with pytest.raises(ConfigError, match=r"'misc' has half a rate limit.*"
                                          r"bruce.topic.misc.rate.limit.max.messages"):
        policy_for(TOPICS, **{"bruce.topic.misc.rate.limit.interval.ms": "100"})


def test_per_topic_settings_are_validated_when_parsed():
    with pytest.raises(ConfigError, match="Malformed setting 'bruce.topic.orders.linger'"):
        settings(**{"bruce.topic.orders.linger": "5"})
    with pytest.raises(ConfigError, match="out of range"):
        settings(**{"bruce.topic.orders.max.delay.ms": "-5"})
    with pytest.raises(ConfigError, match="at least one threshold for the combined batch"):
        settings(**{"bruce.combined.max.delay.ms": "-1", "bruce.combined.max.bytes": "-1"})
    assert "ignored in mode bruce" in settings(**{"linger.ms": "5"}).warnings[0]
    assert "apply to mode bruce only" in build_settings(
        {"bruce.combined.max.delay.ms": "5"}, mode="partition").warnings[0]


def test_per_topic_settings_follow_compare_modes_topic_suffix():
    renamed = settings(**{"bruce.topic.clicks.v2.max.delay.ms": "5"}).with_topic_suffix(
        "-bruce-1")
    assert renamed["bruce.topic.clicks.v2-bruce-1.max.delay.ms"] == 5
    assert "bruce.topic.clicks.v2-bruce-1.max.delay.ms" in renamed.explicit


def test_compare_modes_linger_ms_sets_the_combined_delay():
    from producer_core.analysis.compare import parse_mode_configs

    [run] = parse_mode_configs(["bruce"], [], [], linger_ms=250)
    assert run.settings["bruce.combined.max.delay.ms"] == 250
    assert run.settings.warnings == ()


def test_leader_change_moves_open_and_completed_batches_to_the_new_leader():
    rig = Rig([("a", 2), ("b", 2)], own={0: Thresholds(max_messages=2)},
              combined=Thresholds(max_delay_s=0.010), leaders=[1, 1, 1, 1])
    rig.feed(0, 2, now=0.000, partitions=[0, 1])  # completes, sender busy
    rig.feed(1, 1, now=0.002, partitions=[0])  # combined batch open since 0.002
    assert rig.poll(0.002, BUSY) == []
    rig.policy.set_leaders([2, 2, 2, 2])
    plans = rig.poll(0.003, {1: 5, 2: 5})
    assert [(p.broker, partitions_of(p)) for p in plans] == [(2, [0, 1])]
    assert rig.policy.next_wakeup() == pytest.approx(0.012)  # keeps its age
    [plan] = rig.poll(0.012, {2: 5})
    assert plan.broker == 2 and partitions_of(plan) == [2]


def test_every_per_topic_key_suffix_has_a_spec_and_keys_parse_longest_suffix_first():
    from producer_core.engine.modes.bruce_topics import BRUCE_TOPIC_SETTINGS
    from producer_core.topic_setting_keys import BRUCE_TOPIC_SUFFIXES, bruce_topic_key

    assert tuple(BRUCE_TOPIC_SETTINGS) == BRUCE_TOPIC_SUFFIXES
    assert bruce_topic_key("bruce.topic.a.b.rate.limit.max.messages") == (
        "a.b", "rate.limit.max.messages")
    assert bruce_topic_key("bruce.topic.max.bytes") is None
    assert bruce_topic_key("linger.ms") is None
