"""The Prometheus text parser: what a JMX exporter answers, escapes, special values, junk."""

from __future__ import annotations

import math

import pytest

from producer_core.measure.prometheus_text import PrometheusParseError, parse, select

EXPOSITION = r'''# HELP kafka_network_requestmetrics_requests_total Attribute exposed for management
# TYPE kafka_network_requestmetrics_requests_total counter
kafka_network_requestmetrics_requests_total{request="Produce",version="7",} 160.0
kafka_network_requestmetrics_requests_total{request="Produce",version="9"} 40
kafka_network_requestmetrics_requests_total{request="Fetch",version="12"} 1.5E3
kafka_network_requestmetrics_totaltimems{quantile="0.99",request="Produce"} 128.1199999999999
weird{path="a,b}c",quote="say \"hi\"",nl="x\ny",back="c:\\d"} -Inf 1700000000000
process_cpu_seconds_total 3.3
nan_metric NaN
# EOF
'''


def test_samples_names_labels_and_values():
    samples = parse(EXPOSITION)
    assert len(samples) == 7
    produce = select(samples, "kafka_network_requestmetrics_requests_total",
                     {"request": "Produce"})
    assert [s.value for s in produce] == [160.0, 40.0]
    assert produce[0].label("version") == "7"
    assert select(samples, "kafka_network_requestmetrics_requests_total",
                  {"request": "Fetch"})[0].value == 1500.0
    assert select(samples, "process_cpu_seconds_total")[0].labels == ()


def test_escaped_label_values_commas_and_braces_and_timestamps():
    weird = select(parse(EXPOSITION), "weird")[0]
    assert weird.label("path") == "a,b}c"
    assert weird.label("quote") == 'say "hi"'
    assert weird.label("nl") == "x\ny"
    assert weird.label("back") == "c:\\d"
    assert weird.value == -math.inf


def test_nan_is_a_value():
    assert math.isnan(select(parse(EXPOSITION), "nan_metric")[0].value)


@pytest.mark.parametrize("junk", [
    "<html><body>Login</body></html>",
    'metric{label="unterminated} 1',
    "metric{label=1} 2",
    "metric",
    "metric 1 2 3",
    "metric one",
])
def test_text_that_is_not_prometheus_is_refused_with_its_line(junk):
    with pytest.raises(PrometheusParseError, match="line 2"):
        parse("ok 1\n" + junk)
