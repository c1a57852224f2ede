"""broker_cost on real brokers: Kafka's own Produce count equals kbatch's requests_sent in
every engine mode on 1 and 3 Apache Kafka nodes (one cluster per node count, a topic per
run), the Kafka nodes' and Tansu's process CPU is measured, and the CLI shows it."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from cli.main import cli
from producer_core.analysis.sweep import window_assignments
from producer_core.brokers import BrokerTarget
from producer_core.brokers.target import broker_target
from producer_core.config import build_settings
from producer_core.engine.drivers.engine import run
from producer_core.measure.cost_run import measured
from producer_core.workload.workload import Workload
from tests.kafka_fixtures import fresh_topic, skip_kafka_reason

pytestmark = pytest.mark.broker

ENGINE_MODES = ("partition", "java", "broker", "adaptive", "aimd", "bruce")


@pytest.fixture(scope="module", params=[1, 3], ids=["1-node", "3-nodes"])
def kafka_target(request: pytest.FixtureRequest) -> Iterator[BrokerTarget]:
    reason = skip_kafka_reason()
    if reason:
        pytest.skip(reason)
    with broker_target(None, brokers=request.param, broker="kafka") as target:
        yield target


def _run(target: BrokerTarget, mode: str, partitions: int = 20, rate: float = 1500.0,
         duration_s: float = 2.0, warmup_s: float = 0.5) -> dict:
    workload = Workload(topic=fresh_topic(f"cost-{mode}"), partitions=partitions, rate=rate,
                        duration_s=duration_s, warmup_s=warmup_s)
    settings = build_settings(window_assignments(mode, 5), mode=mode)
    results = measured(run, target, sample_s=0.5)(workload, settings, mode, target.bootstrap)
    return results.to_dict()


@pytest.mark.parametrize("mode", ENGINE_MODES)
def test_kafka_counts_every_produce_request_kbatch_sent(kafka_target, mode):
    doc = _run(kafka_target, mode)
    cost = doc["broker_cost"]
    kafka = cost["kafka"]
    assert doc["messages"]["acknowledged"] == doc["messages"]["sent"] > 2000
    assert kafka["available"] is True, cost
    assert kafka["produce_requests_run"] == doc["requests_sent"] > 0, (mode, kafka, cost)
    assert cost["missing"] == []
    nodes = cost["broker"]["nodes"]
    assert sorted(nodes) == [str(i) for i in range(1, len(kafka["nodes"]) + 1)]
    assert all(v["cpu_s"] > 0 and v["peak_rss_mb"] > 50 for v in nodes.values())
    assert cost["client"]["cpu_s"] > 0
    assert kafka["request_handler_idle_pct"] is not None
    assert 0 < kafka["request_handler_idle_pct"] <= 100
    assert kafka["produce_time_ms"]["total"]["p99"] is not None
    assert kafka["messages_in"] > 0


def test_kafka_java_and_librdkafka_counts_match_too(kafka_target):
    for mode in ("kafka-java", "librdkafka"):
        doc = _run(kafka_target, mode, duration_s=2.0)
        kafka = doc["broker_cost"]["kafka"]
        assert kafka["produce_requests_run"] == doc["requests_sent"] > 0, (mode, kafka)
        assert doc["broker_cost"]["client"]["cpu_s"] > 0


def test_interval_rows_carry_broker_figures(kafka_target):
    class Sink:
        report_interval_s = 0.5

        def __call__(self, progress) -> None:
            pass

    workload = Workload(topic=fresh_topic("cost-iv"), partitions=8, rate=2000.0,
                        duration_s=2.0)
    results = measured(run, kafka_target, sample_s=0.25)(
        workload, build_settings([], mode="partition"), "partition", kafka_target.bootstrap,
        Sink())
    rows = results.to_dict()["intervals"]["run"]
    assert len(rows) >= 3
    assert all(r["broker_cpu_s"] is not None and r["broker_cpu_s"] >= 0 for r in rows)
    # interpolated between samples 0.25 s apart: close to, never above, Kafka's whole count
    in_rows = sum(r["broker_produce_requests"] for r in rows)
    assert 0.7 * results.requests_sent <= in_rows <= results.requests_sent + len(rows)


def test_tansu_process_cpu_and_no_kafka_metrics_in_compare_modes(tmp_path):
    out = tmp_path / "cmp.json"
    proc = CliRunner().invoke(cli, [
        "compare-modes", "--modes", "partition,broker", "--partitions", "50", "--rate", "2000",
        "--duration", "3", "--warmup", "1", "--linger-ms", "20", "--no-progress",
        "--json", str(out)])
    assert proc.exit_code == 0, proc.output
    assert "broker_cpu_s" in proc.output and "broker_produce_requests" not in proc.output
    assert "Kafka's own metrics not available: Tansu has no Kafka request metrics" in (
        " ".join(proc.output.split()))
    document = json.loads(out.read_text())
    for run_doc in document["runs"]:
        cost = run_doc["broker_cost"]
        assert cost["implementation"] == "tansu"
        assert cost["broker"]["cpu_s"] > 0 and cost["broker"]["nodes"]["1"]["pid"] > 0
        assert cost["kafka"]["available"] is False and "Tansu" in cost["kafka"]["reason"]
        assert cost["window"]["warmup_s"] == 1.0


def test_unreachable_broker_metrics_warn_once_and_the_run_goes_on(tansu_broker):
    proc = CliRunner().invoke(cli, [
        "produce", "--bootstrap-servers", tansu_broker.bootstrap, "--partitions", "4",
        "--rate", "500", "--duration", "1", "--no-progress", "--json", "-",
        "--broker-metrics", "http://admin:hunter2@127.0.0.1:9/metrics?token=abc"])
    assert proc.exit_code == 0, proc.output
    assert "hunter2" not in proc.output and "token=abc" not in proc.output
    document = json.loads(proc.stdout[proc.stdout.index("{"):])
    cost = document["broker_cost"]
    assert cost["kafka"]["available"] is False
    assert any("unreachable" in m for m in cost["missing"])
    warnings = [w for w in document["warnings"] if "broker metrics" in w]
    assert len(warnings) == 1 and "[redacted]" in warnings[0]
