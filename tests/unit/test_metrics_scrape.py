"""Scraping brokers' metrics endpoints with bounds (issue 49): an overall deadline, a size
cap, all endpoints at once, a stop that ends the wait; URLs checked before any run, every
secret form redacted; counters that go backwards left out, not read as 0."""

from __future__ import annotations

import threading
import time

import pytest

from producer_core.errors import UsageError
from producer_core.measure.broker_cost import RunWindow, Snapshot, Watched, WindowCounts, section
from producer_core.measure.kafka_metrics import KafkaReading
from producer_core.measure.metrics_endpoint import Endpoint, parse_urls, redact_url
from producer_core.measure.metrics_fetch import ScrapeError, scrape, scrape_all
from tests.metrics_server import fake_metrics

SECRETS = ("hunter2", "s3ss10n", "fr4gment", "t0ken", "pa55w0rd", "c00kie", "pr1vate")
EVERY_FORM = (
    "http://admin:hunter2@{host}/ok?pa%73s=pa55w0rd&session=s3ss10n&x=1#fr4gment",
    "http://{host}/ok?PASSWORD=pa55w0rd;Cookie=c00kie&access_token=t0ken",
    "http://{host}/ok?%70%61%73%73%77%6f%72%64=pa55w0rd&private_key=pr1vate",
    "http://t0ken@{host}/ok?t0ken",
)


@pytest.mark.parametrize("form", EVERY_FORM)
def test_every_secret_form_is_redacted(form):
    shown = redact_url(form.format(host="h:1"))
    assert not any(secret in shown for secret in SECRETS), shown
    assert shown.startswith("http://") and "h:1/ok" in shown


def test_harmless_query_values_stay_readable():
    assert redact_url("http://h:1/metrics?name[]=x&format=text") == \
        "http://h:1/metrics?name[]=x&format=text"


@pytest.mark.parametrize("url, words", [
    ("http://::1:9090/metrics", "IPv6 address without brackets"),
    ("http://fe80::1/metrics", "IPv6 address without brackets"),
    ("http://h:99999/metrics", "Port out of range"),
    ("http://h:0/metrics", "port 0"),
    ("http://h:abc/metrics", "not a usable URL"),
    ("http://[::1/metrics", "Invalid IPv6 URL"),
    ("http://u:hunter2@h:99999/m", "not a usable URL"),
    ("http://h:1/m,http://h:1/m", "twice"),
])
def test_unusable_urls_are_refused_up_front(url, words):
    with pytest.raises(UsageError) as caught:
        parse_urls(url)
    assert words in str(caught.value) and "hunter2" not in str(caught.value)


def test_a_bracketed_ipv6_url_is_accepted():
    assert parse_urls("http://[::1]:7071/metrics")[0].shown == "http://[::1]:7071/metrics"
    assert parse_urls("http://h:1?at=1:2:3")[0].url == "http://h:1?at=1:2:3"


def test_a_good_endpoint_is_read_with_basic_auth_from_the_userinfo():
    with fake_metrics() as server:
        samples = scrape(Endpoint.of("1", server.url("/ok", "u:hunter2@")))
    assert any(s.name == "process_cpu_seconds_total" for s in samples)
    path, headers = server.seen[0]
    assert path == "/ok" and headers["Authorization"].startswith("Basic ")


def test_a_dripping_endpoint_ends_at_the_deadline():
    with fake_metrics() as server:
        began = time.monotonic()
        with pytest.raises(ScrapeError, match="did not answer in full within 0.5 s"):
            scrape(Endpoint.of("1", server.url("/drip")), deadline_s=0.5)
        assert time.monotonic() - began < 3.0


def test_an_endless_body_is_refused_at_the_size_cap():
    with fake_metrics() as server:
        out = scrape_all([Endpoint.of("1", server.url("/endless"))], deadline_s=20,
                         max_bytes=2_000_000)
    assert isinstance(out["1"], ScrapeError) and "more than 2 MB" in str(out["1"])


def test_silent_endpoints_are_waited_for_together_not_in_turn():
    with fake_metrics() as server:
        endpoints = [Endpoint.of(str(i), server.url(f"/silent?{i}")) for i in range(10)]
        began = time.monotonic()
        out = scrape_all(endpoints, deadline_s=0.5)
        took = time.monotonic() - began
    assert all(isinstance(v, ScrapeError) for v in out.values())
    assert took < 4.0  # one deadline, not ten (in turn it was 10 x the timeout)


def test_a_stop_ends_the_wait_at_once():
    stop = threading.Event()
    threading.Timer(0.2, stop.set).start()
    with fake_metrics() as server:
        began = time.monotonic()
        out = scrape_all([Endpoint.of("1", server.url("/drip"))], deadline_s=30, stop=stop)
        assert time.monotonic() - began < 5.0
    assert "the run was stopped" in str(out["1"])


def _snap(t: float, cpu: float) -> Snapshot:
    snap = Snapshot(t)
    snap.kafka["1"] = KafkaReading(process_cpu_s=cpu)
    return snap


def test_a_counter_that_goes_backwards_is_left_out_not_read_as_zero():
    snaps = [_snap(0.0, 50.0), _snap(1.0, 51.0), _snap(2.0, 0.5), _snap(3.0, 1.0)]
    watched = Watched("external", endpoints={"1": "http://h:1/m"})
    cost = section(snaps, watched, RunWindow(0.0, 3.0, 0.0), [],
                   WindowCounts(3.0, 10, 100, 1000), 10)
    assert cost["broker"]["cpu_s"] is None and cost["broker"]["measured"] is False
    assert any("process_cpu_seconds_total went backwards" in m for m in cost["missing"])


def test_a_counter_that_grows_is_differenced():
    snaps = [_snap(0.0, 50.0), _snap(1.0, 51.0), _snap(2.0, 52.5)]
    watched = Watched("external", endpoints={"1": "http://h:1/m"})
    cost = section(snaps, watched, RunWindow(0.0, 2.0, 0.0), [],
                   WindowCounts(2.0, 10, 100, 1000), 10)
    assert cost["broker"]["cpu_s"] == 2.5
    assert not any("backwards" in m for m in cost["missing"])
