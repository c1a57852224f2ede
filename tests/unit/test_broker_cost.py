"""broker_cost arithmetic on synthetic snapshots: windows, interpolation, per-request and
per-message costs, Kafka's figures, what is missing, redaction, the bottleneck warning."""

from __future__ import annotations

import pytest

from cli.render.broker_cost import broker_cost_rows
from producer_core.analysis.compare import summarise
from producer_core.errors import UsageError
from producer_core.measure.broker_cost import (
    RunWindow,
    Snapshot,
    Watched,
    WindowCounts,
    counter_in,
    delta,
    gauge_at,
    interval_figures,
    section,
    value_at,
)
from producer_core.measure.cost_run import bottleneck_warning, measured_rtt_p99_ms
from producer_core.measure.kafka_metrics import KafkaReading, TimeHistogram, reading
from producer_core.measure.metrics_endpoint import parse_urls, redact_url
from producer_core.measure.process_cost import CpuReading
from producer_core.measure.prometheus_text import parse
from producer_core.results.histogram import LatencyHistogram
from producer_core.results.metrics import RequestRecord
from tests.results_fakes import WORKLOAD, fake_results, with_broker_cost


def _cpu(s: float) -> CpuReading:
    return CpuReading(s * 0.75, s * 0.25, 0.0)


def _kafka(requests: float, idle_ns: float, time_count: float, time_mean: float,
           p99: float) -> KafkaReading:
    return KafkaReading(produce_requests=requests, handler_idle_ns=idle_ns, network_idle=0.5,
                        messages_in=requests * 10, bytes_in=requests * 1000,
                        times={"total": TimeHistogram(time_count, time_mean, 1.0, p99)})


def test_value_at_interpolates_between_snapshots_and_holds_outside():
    snaps = [Snapshot(10.0, {"1": _cpu(1.0)}), Snapshot(12.0, {"1": _cpu(3.0)})]
    get = lambda s: s.broker_cpu["1"].total_s  # noqa: E731
    assert value_at(snaps, 11.0, get) == pytest.approx(2.0)
    assert value_at(snaps, 9.0, get) == 1.0
    assert value_at(snaps, 99.0, get) == 3.0
    assert delta(snaps, 10.5, 11.5, get) == pytest.approx(1.0)
    assert gauge_at(snaps, 10.5, get) == 3.0  # the first snapshot at or after


def test_counter_in_spreads_each_interval_row_evenly():
    rows = [{"start_s": 0.0, "end_s": 5.0, "requests": 100},
            {"start_s": 5.0, "end_s": 10.0, "requests": 50}]
    assert counter_in(rows, "requests", 0.0, 10.0) == 150
    assert counter_in(rows, "requests", 2.5, 7.5) == pytest.approx(50 + 25)


def _run_snaps() -> list[Snapshot]:
    """A 10 s run starting at t=100 with a 2 s warm-up: broker node 1 burns 0.5 s CPU per
    s, node 2 0.25; Kafka counts 10 Produce requests per s on each node."""
    snaps = []
    for t in range(99, 111):
        s = max(0, t - 100)
        snaps.append(Snapshot(
            float(t), {"1": _cpu(0.5 * s), "2": _cpu(0.25 * s)}, _cpu(0.1 * s),
            {"1": _kafka(10 * s, 0.8e9 * s, 10 * s, 2.0 if s < 5 else 4.0, 7.0),
             "2": _kafka(10 * s, 0.6e9 * s, 10 * s, 2.0, 3.0)}))
    return snaps


def _section() -> dict:
    rows = [{"start_s": 0.0, "end_s": 5.0, "requests": 100, "acknowledged": 50_000,
             "wire_bytes": 5_000_000},
            {"start_s": 5.0, "end_s": 10.0, "requests": 100, "acknowledged": 50_000,
             "wire_bytes": 5_000_000}]
    watched = Watched("kafka", {"1": 11, "2": 12}, {"1": "http://h:1/m", "2": "http://h:2/m"})
    return section(_run_snaps(), watched, RunWindow(100.0, 110.0, 2.0), rows,
                   WindowCounts(10, 200, 100_000, 10_000_000), 200)


def test_section_costs_over_the_measured_window():
    cost = _section()
    window = cost["window"]
    assert (window["start_s"], window["end_s"], window["seconds"]) == (2.0, 10.0, 8.0)
    assert window["requests"] == 160 and window["messages"] == 80_000
    broker = cost["broker"]
    assert broker["nodes"]["1"]["cpu_s"] == pytest.approx(4.0)
    assert broker["nodes"]["2"]["cpu_s"] == pytest.approx(2.0)
    assert broker["cpu_s"] == pytest.approx(6.0)
    assert broker["cpu_pct_of_core"] == pytest.approx(75.0)
    assert broker["cpu_ms_per_1k_requests"] == pytest.approx(6.0 / 160 * 1e6)
    assert broker["cpu_s_per_million_msgs"] == pytest.approx(6.0 / 80_000 * 1e6)
    assert broker["cpu_s_per_mb"] == pytest.approx(6.0 / 8.0)
    assert cost["client"]["cpu_s"] == pytest.approx(0.8)
    assert cost["broker_cpu_s_per_million_msgs"] == broker["cpu_s_per_million_msgs"]


def test_kafka_figures_add_over_nodes_and_idle_is_the_window_share():
    kafka = _section()["kafka"]
    assert kafka["available"] is True
    assert kafka["produce_requests"] == 160  # 8 s x 10/s x 2 nodes
    assert kafka["produce_requests_run"] == 200 and kafka["requests_sent_run"] == 200
    assert kafka["nodes"]["1"]["request_handler_idle_pct"] == pytest.approx(80.0)
    assert kafka["request_handler_idle_pct"] == pytest.approx(70.0)  # mean of 80 and 60
    assert kafka["messages_in"] == 1600
    total = kafka["produce_time_ms"]["total"]
    assert total["p99"] == 7.0  # the worst node's
    # node 1's mean moves from 2 to 4 ms at 5 s: the window mean comes from mean*count
    node1 = kafka["nodes"]["1"]["produce_time_ms"]["total"]["mean"]
    assert node1 == pytest.approx((4.0 * 100 - 2.0 * 20) / 80)


def test_interval_rows_get_broker_figures():
    rows = [{"start_s": 0.0, "end_s": 5.0}, {"start_s": 5.0, "end_s": 10.0}]
    watched = Watched("kafka", {"1": 11, "2": 12}, {"1": "u", "2": "u"})
    interval_figures(_run_snaps(), watched, RunWindow(100.0, 110.0, 2.0), rows)
    assert rows[0]["broker_cpu_s"] == pytest.approx(3.75)
    assert rows[1]["broker_cpu_s_by_node"] == {"1": pytest.approx(2.5), "2": pytest.approx(1.25)}
    assert rows[0]["broker_produce_requests"] == 100
    assert rows[0]["client_cpu_s"] == pytest.approx(0.5)


def test_tansu_says_kafka_metrics_are_not_available():
    snaps = [Snapshot(0.0, {"1": _cpu(0)}, _cpu(0)), Snapshot(4.0, {"1": _cpu(2)}, _cpu(1))]
    cost = section(snaps, Watched("tansu", {"1": 5}), RunWindow(0.0, 4.0, 0.0), [],
                   WindowCounts(4, 40, 4000, 400_000), 40)
    assert cost["broker"]["cpu_s"] == pytest.approx(2.0)
    assert cost["kafka"] == {"available": False, "reason": cost["kafka"]["reason"]}
    assert "Tansu" in cost["kafka"]["reason"]
    assert any("not available" in value for _, value in broker_cost_rows({"broker_cost": cost}))


def test_an_external_cluster_uses_the_endpoints_jvm_cpu_and_names_what_is_missing():
    text = ("process_cpu_seconds_total {cpu}\n"
            'kafka_network_requestmetrics_requests_total{{request="Produce",version="9"}} {n}\n')
    snaps = []
    for t, cpu, n in ((0.0, 10.0, 0), (5.0, 12.5, 50)):
        snap = Snapshot(t, client_cpu=_cpu(t))
        snap.kafka["1"] = reading(parse(text.format(cpu=cpu, n=n)))
        snap.errors["2"] = "http://b2:7071/metrics is unreachable"
        snaps.append(snap)
    cost = section(snaps, Watched("external", {}, {"1": "http://b1", "2": "http://b2"}),
                   RunWindow(0.0, 5.0, 0.0), [], WindowCounts(5, 50, 5000, 1e6), 50)
    assert cost["broker"]["source"] == "process_cpu_seconds_total"
    assert cost["broker"]["cpu_s"] == pytest.approx(2.5)
    assert cost["kafka"]["produce_requests_run"] == 50
    missing = " ".join(cost["missing"])
    assert "RequestHandlerAvgIdlePercent" in missing and "unreachable" in missing


def test_reading_accepts_the_exporter_spellings_and_sums_versions():
    samples = parse('kafka_network_requestmetrics_requestspersec_count{request="Produce",'
                    'version="7"} 3\nkafka_network_requestmetrics_requestspersec_count'
                    '{request="Produce",version="9"} 4\nkafka_server_kafkarequesthandlerpool'
                    '_requesthandleravgidlepercent_count_total 9e9\n'
                    'kafka_server_brokertopicmetrics_messagesin_total{topic="t"} 5\n')
    r = reading(samples)
    assert r.produce_requests == 7
    assert r.handler_idle_ns == 9e9
    assert r.messages_in is None  # only a per-topic series: not the broker's total
    assert "MessagesInPerSec" in r.missing


@pytest.mark.parametrize("url, shown", [
    ("http://user:s3cret@h:7071/metrics", "http://user:[redacted]@h:7071/metrics"),
    ("https://h/metrics?token=abc&x=1", "https://h/metrics?token=[redacted]&x=1"),
    ("http://h/m?api_key=zz", "http://h/m?api_key=[redacted]"),
    ("http://h:1/metrics", "http://h:1/metrics"),
])
def test_secrets_in_urls_are_redacted(url, shown):
    assert redact_url(url) == shown


def test_bad_broker_metrics_urls_are_refused_without_their_secret():
    with pytest.raises(UsageError) as caught:
        parse_urls("ftp://u:hunter2@h/metrics")
    assert "hunter2" not in str(caught.value)
    endpoints = parse_urls("http://a:1/m, http://u:pw@b:2/m")
    assert [e.node for e in endpoints] == ["1", "2"]
    assert "pw" not in endpoints[1].shown and "pw" not in repr(endpoints[1])


def test_summaries_skip_broker_figures_a_run_lacks():
    runs = [with_broker_cost(fake_results("partition")).to_dict(),
            fake_results("broker").to_dict()]
    summary = summarise(runs, ["partition", "broker"])
    assert "broker_cpu_s" in summary["partition"]
    assert "broker_cpu_s" not in summary["broker"]
    assert summary["broker"]["requests_sent"]["median"] > 0


def _late_results(lag_s: float, rtt_s: float):
    results = fake_results("partition")
    m = results.metrics
    m.latency.record_seconds([rtt_s * 1.2] * 100)
    m.rtt.record_seconds([rtt_s] * 100)
    m.generator_lag.record_seconds([lag_s] * 100)
    return results


def test_the_broker_is_named_when_round_trips_make_messages_late():
    results = with_broker_cost(_late_results(0.001, 5.0), broker_cpu_s=26.0)
    warning = bottleneck_warning(results)
    assert warning is not None and "broker is the likely bottleneck" in warning
    assert "Kafka used 26.0 s of CPU" in warning
    assert "a saturated core" in warning  # 26 s in a run of ~1-2 s: more than a core
    idle = bottleneck_warning(with_broker_cost(_late_results(0.001, 5.0), broker_cpu_s=0.01))
    assert idle is not None and "no broker core was saturated" in idle


def test_no_bottleneck_warning_when_the_generator_is_late_or_round_trips_short():
    assert bottleneck_warning(_late_results(3.0, 5.0)) is None
    assert bottleneck_warning(_late_results(0.0001, 0.002)) is None


def _stalled_warm_up(warmup_s: float):
    """A run whose first requests (inside 1 s) stalled for 16 s, as a new topic's can on
    Kafka, and whose later requests answered in 20 ms: latency p99 490 ms."""
    results = fake_results("broker", workload={**WORKLOAD, "warmup_s": warmup_s})
    m = results.metrics
    m.requests.clear()
    for index in range(100):
        send_time = index * 0.05
        m.record_request(RequestRecord(send_time_s=send_time, broker=1, partitions=8,
                                       records=100, bytes=14_000, reason="broker_linger",
                                       linger_ms=475.0, attempt=1,
                                       rtt_ms=16_000.0 if send_time < 1.0 else 20.0))
    m.rtt = LatencyHistogram()
    m.rtt.record_seconds([r.rtt_ms / 1000 for r in m.requests])
    m.latency = LatencyHistogram()
    m.latency.record_seconds([0.49] * 1000)
    m.generator_lag = LatencyHistogram()
    m.generator_lag.record_seconds([0.002] * 1000)
    return results


def test_round_trips_of_the_warm_up_do_not_make_a_broker_bottleneck():
    """The latency leaves the warm-up out: the round trips it is judged against must too."""
    assert bottleneck_warning(_stalled_warm_up(warmup_s=1.0)) is None
    assert measured_rtt_p99_ms(_stalled_warm_up(warmup_s=1.0)) == 20.0
    whole_run = bottleneck_warning(_stalled_warm_up(warmup_s=0.0))  # no warm-up: they count
    assert whole_run is not None and "round trip p99 16,0" in whole_run


def test_report_chart_of_broker_cpu_per_mode_and_node(tmp_path):
    from cli.charts.broker_cost import broker_cost_chart

    runs = [("partition", "partition", _section()), ("broker", "broker", _section())]
    path = broker_cost_chart(runs, tmp_path / "broker_cost.png")
    assert path is not None and path.read_bytes().startswith(b"\x89PNG")
    tansu_unmeasured = {"broker": {"cpu_s": None}}
    assert broker_cost_chart([("x", "partition", tansu_unmeasured)], tmp_path / "n.png") is None


def test_broker_metrics_needs_an_external_cluster_and_a_url():
    from click.testing import CliRunner

    from cli.main import cli

    proc = CliRunner().invoke(cli, ["produce", "--broker-metrics", "http://h:1/metrics",
                                    "--duration", "1"])
    assert proc.exit_code == 2 and "--bootstrap-servers" in proc.output
    proc = CliRunner().invoke(cli, ["produce", "--bootstrap-servers", "127.0.0.1:9",
                                    "--broker-metrics", "h:1/m", "--duration", "1"])
    assert proc.exit_code == 2 and "not an http(s) URL" in proc.output
    assert "Traceback" not in proc.output


def test_the_cost_model_fit_recovers_known_costs_and_compares_request_shapes():
    from producer_core.measure.cost_model import fit

    a, b, c = 0.002, 0.0001, 0.05  # s per request, per partition batch, per MB
    shapes = [(3000, 3000, 1.5), (10, 5000, 1.5), (50, 900, 2.0), (100, 150, 1.0),
              (800, 4000, 3.0), (20, 20, 0.5)]
    rows = [{"requests": r, "partition_batches": p, "mb": m, "broker_cpu_s": a * r + b * p + c * m}
            for r, p, m in shapes]
    model = fit(rows)
    assert model["a_ms_per_request"] == pytest.approx(2.0)
    assert model["b_ms_per_partition_batch"] == pytest.approx(0.1)
    assert model["c_s_per_mb"] == pytest.approx(0.05)
    assert model["rms_error_s"] == pytest.approx(0.0, abs=1e-9) and model["r2"] == pytest.approx(1)
    assert model["one_1000_partition_request_ms"] == pytest.approx(2.0 + 100.0)
    assert model["thousand_1_partition_requests_ms"] == pytest.approx(2100.0)
    assert model["ratio"] == pytest.approx(2100 / 102)
