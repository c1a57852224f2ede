"""The distributed run's plan, without Spark: master URLs, reachability, and the shares."""

from __future__ import annotations

import pytest

from producer_core.distributed.plan import (
    Master,
    check_reachable,
    check_slots,
    default_master,
    loopback_servers,
    parse_master,
    plan_shares,
    start_instant,
)
from producer_core.errors import UsageError
from producer_core.workload.message_source import SHARE_ID_SHIFT, TopicSource
from producer_core.workload.workload import KeySpec, RateSpec, TopicSpec, Workload


@pytest.mark.parametrize(("url", "slots"), [
    ("local", 1), ("local[2]", 2), ("local[16,3]", 16), ("spark://h1:7077", None),
    ("spark://a.example.com:7077,b.example.com:7077", None), ("yarn", None),
    ("k8s://https://kube.example.com:6443", None), ("k8s://10.0.0.1:443", None),
])
def test_master_urls_of_every_form_are_accepted(url, slots):
    assert parse_master(url) == Master(url, slots)


def test_local_star_has_one_slot_per_cpu(monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 6)
    assert parse_master("local[*]").slots == 6


@pytest.mark.parametrize("url", ["", "foo", "local[]", "local[x]", "local[0]", "spark://h",
                                 "spark://:7077", "http://h:7077", "mesos://h:5050",
                                 "k8s://", "yarn-cluster"])
def test_malformed_master_urls_are_refused_with_the_allowed_forms(url):
    with pytest.raises(UsageError) as error:
        parse_master(url)
    text = str(error.value)
    assert f"--spark-master {url!r}" in text and "local[N]" in text
    assert "spark://HOST:PORT" in text or url == "local[0]"


def test_a_local_master_needs_a_slot_per_worker():
    check_slots(parse_master(default_master(3)), 3)
    check_slots(parse_master("spark://h:7077"), 64)  # a cluster's size is Spark's to check
    with pytest.raises(UsageError, match=r"runs 1 task\(s\) at a time, but --workers 2"):
        check_slots(parse_master("local"), 2)
    with pytest.raises(UsageError, match="--workers must be 1 to 128"):
        check_slots(parse_master("local[2]"), 129)


def test_loopback_servers_are_recognised():
    assert loopback_servers("localhost:9092,10.1.2.3:9092,[::1]:9093,127.0.1.1:9094") == [
        "localhost:9092", "::1:9093", "127.0.1.1:9094"]
    assert loopback_servers("kafka-1.example.com:9092,192.168.1.5:9092") == []


def test_a_cluster_master_is_refused_with_brokers_only_this_machine_reaches():
    remote = parse_master("spark://h:7077")
    check_reachable(parse_master("local[2]"), None)  # local master, embedded broker: fine
    check_reachable(parse_master("local[2]"), "127.0.0.1:9092")
    check_reachable(remote, "kafka-1.example.com:9092")
    with pytest.raises(UsageError, match="embedded broker .* loopback"):
        check_reachable(remote, None)
    with pytest.raises(UsageError, match="127.0.0.1:9092 is a loopback address"):
        check_reachable(remote, "kafka-1.example.com:9092,127.0.0.1:9092")


def test_shares_add_up_to_the_target_with_disjoint_ids_and_one_start():
    workload = Workload(topic="t", partitions=6, rate=9000.0, duration_s=4.0, keys=10)
    start = start_instant(1000.0, 5.0)
    assert start == 1005.0
    shares = plan_shares(workload, 3, start)
    assert [s.share_index for s in shares] == [0, 1, 2]
    assert {s.share_count for s in shares} == {3} and {s.start_at for s in shares} == {start}
    assert sum(s.target_rate for s in shares) == pytest.approx(workload.target_rate)
    assert {s.duration_s for s in shares} == {4.0}  # each share runs the whole duration
    assert len({s.seed for s in shares}) == 3
    # the topic layout is the workload's: every share produces to the same partitions
    assert {(s.topic_specs()[0].name, s.topic_specs()[0].partitions) for s in shares} == {
        ("t", 6)}
    # ids: share i's are i << 56 | sequence, so no two shares' ids meet
    ranges = []
    for share in shares:
        base = TopicSource(share.topic_specs()[0], 0, share.seed, share.share_index).id_base
        assert base == share.share_index << SHARE_ID_SHIFT
        ranges.append((base, base + 9000 * 4))
    for (lo_a, hi_a), (lo_b, _) in zip(ranges, ranges[1:], strict=False):
        assert hi_a < lo_b and lo_a < lo_b


def test_shares_of_a_workload_file_scale_every_profile_and_split_the_cap():
    topics = (
        TopicSpec("a", 4, RateSpec("step", None, steps=((1000.0, 2.0), (4000.0, 2.0)))),
        TopicSpec("b", 2, RateSpec("ramp", None, rate_from=100.0, rate_to=900.0, over_s=3.0),
                  KeySpec("uniform", 5)),
        TopicSpec("c", 1, RateSpec("poisson", 500.0)),
    )
    workload = Workload(topics=topics, duration_s=None, messages=10_001)
    shares = plan_shares(workload, 4, 50.0)
    assert sum(s.messages for s in shares) == 10_001
    assert sorted(s.messages for s in shares) == [2500, 2500, 2500, 2501]
    for name in ("a", "b", "c"):
        rates = [next(t for t in s.topics if t.name == name).rate for s in shares]
        whole = next(t for t in topics if t.name == name).rate
        assert sum(r.mean_rate for r in rates) == pytest.approx(whole.mean_rate)
    step = [s.topics[0].rate.steps for s in shares]
    assert step[0] == ((250.0, 2.0), (1000.0, 2.0))  # seconds unchanged, rates quartered
    ramp = shares[0].topics[1].rate
    assert (ramp.rate_from, ramp.rate_to, ramp.over_s) == (25.0, 225.0, 3.0)


def test_unthrottled_shares_stay_unthrottled():
    shares = plan_shares(Workload(rate=None, messages=5, duration_s=None), 2, 1.0)
    assert [s.rate for s in shares] == [None, None]
    assert [s.messages for s in shares] == [3, 2]
    assert all(s.target_rate is None for s in shares)


def test_bad_plans_are_refused():
    with pytest.raises(UsageError, match="--spark-start-lead"):
        start_instant(0.0, -1.0)
    with pytest.raises(UsageError, match="--workers"):
        plan_shares(Workload(), 0, 1.0)


def test_a_standalone_master_on_loopback_reaches_loopback_brokers():
    for url in ("spark://127.0.0.1:7077", "spark://localhost:7077",
                "spark://127.0.0.1:7077,127.0.0.2:7078"):
        master = parse_master(url)
        assert master.on_this_machine and not master.local
        check_reachable(master, None)  # embedded broker
        check_reachable(master, "127.0.0.1:9092")
    for url in ("spark://10.1.2.3:7077", "spark://127.0.0.1:7077,10.1.2.3:7077",
                "spark://spark-master.example.com:7077"):
        master = parse_master(url)
        assert not master.on_this_machine
        with pytest.raises(UsageError, match="other machines"):
            check_reachable(master, "127.0.0.1:9092")


def test_local_task_slots_are_bounded():
    assert parse_master("local[1024]").slots == 1024
    with pytest.raises(UsageError, match="N from 1 to 1024"):
        parse_master("local[100000000]")
