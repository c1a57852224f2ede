"""--broker-metrics as a user meets it (issue 49): bad URLs refused before any broker
starts, endpoints that never answer cost one deadline, not one each, no secret form of a
URL on the screen, in the logs or in the results, one line for what was not read, a
counter going backwards warned about, more URLs than brokers warned about."""

from __future__ import annotations

import json
import logging
import time

import pytest

from tests.cli.sweep_support import run_kbatch
from tests.metrics_server import fake_metrics
from tests.unit.test_metrics_scrape import EVERY_FORM, SECRETS

P = ["produce", "--no-progress", "--partitions", "2", "--rate", "200", "--duration", "1"]


@pytest.mark.parametrize("url", ["http://::1:9090/metrics", "http://127.0.0.1:99999/metrics",
                                 "http://[::1/metrics", "http://127.0.0.1:0/metrics"])
def test_unusable_urls_exit_2_before_any_broker_starts(url):
    outcome = run_kbatch([*P, "--bootstrap-servers", "127.0.0.1:1", "--broker-metrics", url],
                         seconds=20)
    assert outcome.exit_code == 2 and not outcome.internal_error, outcome.describe()
    assert "Error" in outcome.output and "Producing to" not in outcome.output
    assert outcome.seconds < 10


def test_no_secret_form_reaches_screen_logs_or_results(tansu_broker, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    with fake_metrics() as server:
        host = f"127.0.0.1:{server.server_address[1]}"
        urls = [form.format(host=host) for form in EVERY_FORM]
        urls.append(f"http://u:hunter2@{host}/silent?token=t0ken#fr4gment")
        out = tmp_path / "out"
        outcome = run_kbatch([*P, "--bootstrap-servers", tansu_broker.bootstrap,
                              "--broker-metrics", ",".join(urls), "--out", str(out)],
                             seconds=60)
        assert outcome.exit_code == 0, outcome.describe()
        sent = [headers.get("Authorization") for _, headers in server.seen]
    assert any(sent), "the userinfo is still used to fetch"
    written = "".join(p.read_text(errors="replace") for p in out.rglob("*")
                      if p.is_file() and p.suffix in (".json", ".md", ".txt", ".log"))
    logs = "\n".join(r.getMessage() for r in caplog.records)
    for secret in SECRETS:
        assert secret not in outcome.output, secret
        assert secret not in written, secret
        assert secret not in logs, secret
    document = json.loads((out / "results.json").read_text())
    unread = [w for w in document["warnings"] if "could not be read" in w]
    assert len(unread) == 1 and "did not answer in full" in unread[0]
    assert "[redacted]" in json.dumps(document["broker_cost"]["kafka"]["endpoints"])


def test_endpoints_that_never_answer_cost_one_deadline(tansu_broker, tmp_path):
    with fake_metrics() as server:
        urls = ",".join(server.url(f"/silent?{i}") for i in range(10))
        began = time.monotonic()
        outcome = run_kbatch([*P, "--bootstrap-servers", tansu_broker.bootstrap,
                              "--broker-metrics", urls, "--json", str(tmp_path / "r.json")],
                             seconds=90)
        took = time.monotonic() - began
    assert outcome.exit_code == 0, outcome.describe()
    # before: 10 endpoints x 2 s in turn, before and after the run, and during it (52 s)
    assert took < 25, took
    document = json.loads((tmp_path / "r.json").read_text())
    assert sum("could not be read from 10 endpoints" in w for w in document["warnings"]) == 1


def test_a_counter_going_backwards_is_warned_not_shown_as_zero(tansu_broker, tmp_path):
    with fake_metrics() as server:
        server.cpu = [500.0, 0.2, 0.4, 0.6, 0.8, 1.0]
        outcome = run_kbatch([*P, "--bootstrap-servers", tansu_broker.bootstrap,
                              "--broker-metrics", server.url("/cpu"), "--json",
                              str(tmp_path / "r.json")], seconds=60)
    assert outcome.exit_code == 0, outcome.describe()
    document = json.loads((tmp_path / "r.json").read_text())
    assert document["broker_cost"]["broker"]["cpu_s"] is None
    assert any("went backwards" in w for w in document["warnings"])
    assert "went backwards" in " ".join(outcome.output.split())


def test_more_urls_than_brokers_is_warned(tansu_broker, tmp_path):
    with fake_metrics() as server:
        urls = ",".join(server.url(f"/ok?n={i}") for i in range(3))
        outcome = run_kbatch([*P, "--bootstrap-servers", tansu_broker.bootstrap,
                              "--broker-metrics", urls, "--json", str(tmp_path / "r.json")],
                             seconds=60)
    assert outcome.exit_code == 0, outcome.describe()
    document = json.loads((tmp_path / "r.json").read_text())
    assert any("gave 3 endpoints, but the run's requests went to 1 broker" in w
               for w in document["warnings"]), document["warnings"]
