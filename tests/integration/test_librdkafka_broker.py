"""Mode librdkafka-broker against real brokers (issue 45): the real librdkafka with the
project's patches, built on first use into the per-user cache (and reused after: the
first test here pays the build, about 1-2 minutes, once per machine and patch series).

On the embedded broker behind a counting proxy: several partitions per ProduceRequest,
`requests_sent` equal to the Produce frames on the wire, the collector's statistics in
the results, and `--verify`'s read-back clean. On the session's 3-node Kafka cluster: a
leader killed mid-run, with idempotence, loses, duplicates and reorders nothing."""

from __future__ import annotations

import pytest

from producer_core.config import build_settings
from producer_core.engine.drivers.engine import run
from producer_core.engine.drivers.librdkafka_patched import base_name, cached_label, ensure_build
from producer_core.engine.drivers.librdkafka_patches import patch_series, series_digest
from producer_core.engine.drivers.librdkafka_source import find_cargo
from producer_core.measure.verify_read import VerifyingRun
from producer_core.workload.workload import Workload
from tests.kafka_fixtures import fresh_topic
from tests.librdkafka_tree import skip_without_cargo
from tests.wire_proxy import produce_frames_of

MODE = "librdkafka-broker"
BUILD_TIMEOUT_S = 1500
"""The first test may build the library (configure and make) on a loaded machine."""

pytestmark = [pytest.mark.broker, pytest.mark.timeout(BUILD_TIMEOUT_S)]


@pytest.fixture(scope="module", autouse=True)
def _built() -> None:
    """The patched build, made here if it is not cached (so no test's timing includes
    it). Skipped without cargo unless the build is cached already; without patches the
    mode is stock librdkafka, which refuses the collector's settings: nothing to test."""
    if not patch_series():
        pytest.skip("the librdkafka patch series (clients/librdkafka/patches) is empty")
    if cached_label(series_digest(patch_series(), base_name())) is None and not find_cargo():
        skip_without_cargo("needs cargo for the first build (librdkafka's sources come in "
                           "the rdkafka-sys crate)")
    ensure_build(lambda text: print(text, flush=True))


def test_many_partitions_per_request_counted_on_the_wire_and_read_back_clean(counted_broker):
    broker, proxy = counted_broker
    partitions, total = 36, 3 * 1500
    workload = Workload(topic="rdk-broker", partitions=partitions, rate=1500, duration_s=3)
    settings = build_settings({"broker.linger.ms": "100"}.items(), mode=MODE)
    results = VerifyingRun(run)(workload, settings, MODE, proxy.address)
    doc = results.to_dict()
    assert doc["mode"] == MODE
    assert doc["messages"]["acknowledged"] == total and doc["messages"]["failed"] == 0
    verify = doc["verify"]
    assert verify["present"] == total, verify
    assert verify["missing"] == verify["duplicated"] == verify["out_of_order"] == 0, verify
    # the library's own count of Produce requests is the wire's
    assert produce_frames_of(results) == proxy.produce_requests
    # one request carries many partitions: one per 100 ms window (150 messages, round
    # robin: every partition), not one per partition and linger.ms
    ideal = 3.0 / 0.100
    assert doc["partitions_per_request"]["mean"] >= partitions / 2
    assert results.requests_sent <= 1.2 * ideal + 3, results.requests_sent
    section = doc["librdkafka"]
    assert section["config"]["broker.linger.ms"] == "100"
    assert section["config"]["broker.batch.max.partitions"] == "-1"
    assert section["version"].startswith("2.12.1")
    assert section["patches"] == [p.name for p in patch_series()]
    assert len(section["client_build"]["sha256"]) == 64  # the patched tree's content
    collector = doc["collector"]
    assert collector["sends"] > 0
    assert sum(collector["sends_by_reason"].values()) == collector["sends"]
    assert collector["sends_by_reason"]["broker_linger"] > 0
    assert collector["sends_by_reason"]["max_partitions"] == 0  # off: -1
    assert collector["partitions_per_send"]["mean"] >= partitions / 2
    # the collector's sends are the requests (one fits max.request.size)
    assert collector["sends"] * collector["requests_per_send"]["mean"] == pytest.approx(
        results.requests_sent, abs=1)


@pytest.mark.faults
def test_a_leader_kill_loses_and_duplicates_nothing_with_idempotence(kafka_cluster, tmp_path):
    """As the Go clients' test (tests/integration/test_go_clients.py) and the engine's
    (test_faults_verify.py): SIGKILL the leader of partition 0 of a 3-replica topic mid-run;
    with acks=all and idempotence (kbatch's defaults), --verify finds no loss, no duplicate
    and nothing out of order."""
    from tests.integration.test_faults_verify import run_with_leader_killed

    result, stdout, stderr, returncode = run_with_leader_killed(
        kafka_cluster, fresh_topic("rdk-broker-leader"), tmp_path / "run.json",
        "--mode", MODE, "-X", "broker.linger.ms=50")
    v, m = result["verify"], result["messages"]
    assert "Traceback" not in stderr
    assert result["mode"] == MODE and result["idempotence"]["enabled"] is True
    assert v["missing"] == 0 and v["duplicated"] == 0 and v["out_of_order"] == 0, v
    assert m["acknowledged"] > 0
    assert returncode == (3 if m["failed"] + m["unknown"] else 0), stderr
    assert "--verify" in stdout
