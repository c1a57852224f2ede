"""Settings and workload validation: bad input is refused with what is allowed."""

import pytest

from producer_core.config import build_settings, parse_assignment
from producer_core.errors import ConfigError, UsageError
from producer_core.workload.message_source import TopicSource
from producer_core.workload.workload import Workload, message_id_of


def test_defaults_follow_kafka_names() -> None:
    s = build_settings()
    assert s["linger.ms"] == 5 and s["batch.size"] == 16384
    assert s.acks == -1 and s.max_in_flight == 5
    assert s.max_partitions_per_request is None


def test_delivery_defaults_are_javas_since_3_0() -> None:
    s = build_settings()
    assert s.idempotent and s["acks"] == "all"
    assert s["retries"] == 2147483647 and s["delivery.timeout.ms"] == 120000
    assert s.warnings == ()


@pytest.mark.parametrize("pairs", [
    [("enable.idempotence", "true"), ("acks", "1")],
    [("enable.idempotence", "true"), ("acks", "0")],
    [("enable.idempotence", "true"), ("max.in.flight.requests.per.connection", "6")],
])
def test_explicit_idempotence_with_a_conflicting_setting_is_an_error(pairs) -> None:
    with pytest.raises(ConfigError, match="enable.idempotence=true needs acks=all"):
        build_settings(pairs)


@pytest.mark.parametrize(("pairs", "cause"), [
    ([("acks", "1")], "acks=1"),
    ([("max.in.flight.requests.per.connection", "10")],
     "max.in.flight.requests.per.connection=10"),
])
def test_default_idempotence_gives_way_to_a_conflicting_setting_with_a_warning(
        pairs, cause) -> None:
    s = build_settings(pairs)
    assert not s.idempotent
    assert any("idempotence is off" in w and cause in w for w in s.warnings)


def test_idempotence_off_and_acks_1_is_the_old_behaviour_without_warnings() -> None:
    s = build_settings([("enable.idempotence", "false"), ("acks", "1")])
    assert not s.idempotent and s.acks == 1 and s.warnings == ()


def test_overrides_are_converted() -> None:
    s = build_settings([("acks", "all"), ("linger.ms", "500"),
                        ("produce.request.max.partitions", "1")])
    assert s.acks == -1 and s.linger_s == 0.5 and s.max_partitions_per_request == 1
    assert s.explicit == {"acks", "linger.ms", "produce.request.max.partitions"}


@pytest.mark.parametrize(("pairs", "fragment"), [
    ([("lingr.ms", "5")], "Unknown setting 'lingr.ms'"),
    ([("linger.ms", "abc")], "not a whole number"),
    ([("linger.ms", "-1")], "out of range"),
    ([("acks", "2")], "Allowed: 0, 1, all"),
    ([("compression.type", "brotli")], "Allowed: none, gzip"),
    ([("batch.size", "2000000")], "larger than max.request.size"),
])
def test_bad_settings_say_what_is_allowed(pairs, fragment) -> None:
    with pytest.raises(ConfigError, match=fragment):
        build_settings(pairs)


def test_unknown_mode_lists_modes() -> None:
    with pytest.raises(ConfigError, match="Allowed modes: partition"):
        build_settings(mode="fast")


@pytest.mark.parametrize("text", ["linger.ms", "=5", "linger.ms=", ""])
def test_malformed_assignment(text: str) -> None:
    with pytest.raises(ConfigError, match="expected key=value"):
        parse_assignment(text)


@pytest.mark.parametrize(("kwargs", "fragment"), [
    ({"rate": 0}, "--rate must be 0.001 to 10,000,000"),
    ({"rate": -5}, "--rate must be 0.001 to 10,000,000"),
    ({"rate": 1e308}, "--rate must be 0.001 to 10,000,000"),
    ({"duration_s": 1e308}, "--duration must be more than 0 and at most 604,800"),
    ({"seed": -5}, "--seed must be 0 to"),
    ({"keys": 100_000_000}, "--keys must be 0"),
    ({"warmup_s": float("nan")}, "--warmup must be 0 to"),
    ({"topic": ".."}, "not allowed as a topic name"),
    ({"topic": "a b"}, "characters Kafka does not allow"),
    ({"topic": ""}, "cannot be empty"),
    ({"partitions": 0}, "--partitions"),
    ({"duration_s": None, "messages": None}, "give --duration or --messages"),
    ({"warmup_s": 20, "duration_s": 10}, "--warmup must be shorter"),
])
def test_bad_workloads(kwargs, fragment) -> None:
    with pytest.raises(UsageError, match=fragment):
        Workload(**kwargs)


def test_total_messages() -> None:
    assert Workload(rate=1000, duration_s=2).total_messages == 2000
    assert Workload(rate=1000, duration_s=2, messages=500).total_messages == 500
    assert Workload(rate=None, duration_s=2).total_messages is None


def test_values_carry_their_id_and_size() -> None:
    spec = Workload(message_size=100).topic_specs()[0]
    value = TopicSource(spec, 0, seed=1).values(range(123456, 123457))[0]
    assert len(value) == 100 and message_id_of(value) == 123456
    tiny = Workload(message_size=3).topic_specs()[0]
    assert len(TopicSource(tiny, 0, seed=1).values(range(5, 6))[0]) == 3


def test_shares_split_rates_and_caps_and_tag_ids() -> None:
    from producer_core.workload.message_source import SHARE_ID_SHIFT, TopicSource

    workload = Workload(rate=1000, messages=1001, duration_s=None, partitions=4)
    shares = [workload.share(i, 3, start_at=100.0) for i in range(3)]
    assert sum(s.messages for s in shares) == 1001
    assert sum(s.topics[0].rate.rate for s in shares) == pytest.approx(1000)
    assert len({s.seed for s in shares}) == 3 and {s.start_at for s in shares} == {100.0}
    bases = [TopicSource(s.topics[0], 0, s.seed, s.share_index).id_base for s in shares]
    assert bases == [0, 1 << SHARE_ID_SHIFT, 2 << SHARE_ID_SHIFT]
