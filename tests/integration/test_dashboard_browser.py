"""`--dashboard` during a real compare-modes on the embedded broker: the URL is printed, the
page in headless chromium shows numbers that change between two intervals and charts that
grow, `/metrics` parses as Prometheus text, and at the end the page links the HTML report.
A port in use is refused before any broker starts."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.browser import charts_drawn, chromium, console_errors, leaving_requests, requested_urls
from tests.cli.test_produce_cli import KBATCH, ROOT

SCREENSHOTS = os.environ.get("KBATCH_SCREENSHOTS")
"""A directory to save the page's screenshot in (docs/figures when refreshing the docs)."""


def read_url(proc: subprocess.Popen, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    seen = []
    assert proc.stderr is not None
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        seen.append(line)
        match = re.search(r"Dashboard: (http://127\.0\.0\.1:\d+/)", line)
        if match:
            return match.group(1)
    raise AssertionError("no dashboard URL printed: " + "".join(seen))


def numbers(driver) -> dict[str, dict[str, str]]:
    """The page's runs table: run label -> column header -> text."""
    return driver.execute_script("""
        const heads = [...document.querySelectorAll('#numbers thead th')].map(t => t.textContent);
        const out = {};
        for (const tr of document.querySelectorAll('#numbers tbody tr')) {
          const cells = [...tr.children].map(td => td.textContent);
          out[tr.dataset.run] = Object.fromEntries(heads.map((h, i) => [h, cells[i]]));
        }
        return out;""")


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}")


def count(text: str) -> int:
    return int(text.replace(",", "") or 0)


def scrape(url: str) -> dict:
    with urllib.request.urlopen(url + "metrics", timeout=10) as answer:
        assert answer.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = answer.read().decode()
    return {f.name: f for f in text_string_to_metric_families(text)}


@pytest.mark.broker
def test_live_page_updates_every_interval_and_metrics_answer(tmp_path) -> None:
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [*KBATCH, "compare-modes", "--modes", "partition,broker", "--partitions", "20",
         "--rate", "2000", "--duration", "10", "--linger-ms", "50", "--report-interval", "1",
         "--no-progress", "--dashboard", "127.0.0.1:0", "--out", str(out)],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        url = read_url(proc)
        with chromium() as driver:
            driver.get(url)
            # the second mode's run, caught as it starts: it has 10 s to go
            first = wait_for(lambda: (row := numbers(driver).get("broker")) and count(
                row["acknowledged"]) > 0 and row, 90, "the broker run's first acknowledgements")
            drawn_before = wait_for(lambda: driver.execute_script(
                "const d = document.getElementById('chart-over-msgs_per_s');"
                "return d && d.data && d.data.length > 1") and charts_drawn(driver), 30,
                "the broker run's first interval")
            points_before = driver.execute_script(
                "return document.getElementById('chart-over-msgs_per_s').data[1].x.length")
            time.sleep(2.5)  # two more 1 s intervals
            second = numbers(driver)["broker"]
            assert count(second["acknowledged"]) > count(first["acknowledged"])
            assert second["elapsed s"] != first["elapsed s"]
            # the chart grows by the new intervals (redrawn at most a fifth of the time)
            wait_for(lambda: driver.execute_script(
                "return document.getElementById('chart-over-msgs_per_s').data[1].x.length")
                > points_before, 15, "the chart to grow")
            assert all(charts_drawn(driver).values()) and drawn_before
            families = scrape(url)
            acked = [s.value for s in families["kbatch_messages_acknowledged"].samples
                     if s.name.endswith("_total")]
            assert acked and acked[0] > 0
            assert families["kbatch_up"].samples[0].value == 1
            assert {s.labels["quantile"] for s in families["kbatch_ack_latency_seconds"].samples
                    } >= {"0.5", "0.99"}
            assert console_errors(driver) == []
            # the end: both modes ran, the page says finished and links the HTML report
            wait_for(lambda: driver.find_elements("css selector", "#report-link a"), 90,
                     "the report link")
            assert set(numbers(driver)) == {"partition", "broker"}
            assert "finished" in driver.find_element("id", "status").text
            if SCREENSHOTS:
                driver.set_window_size(1360, min(driver.execute_script(
                    "return document.body.scrollHeight") + 40, 4000))
                time.sleep(1)
                driver.save_screenshot(str(Path(SCREENSHOTS) / "dashboard.png"))
            assert leaving_requests(requested_urls(driver)) == []
        assert proc.wait(timeout=60) == 0
        assert (out / "report.html").is_file()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_dashboard_port_in_use_exits_2_before_any_broker_starts() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        started = time.monotonic()
        proc = subprocess.run([*KBATCH, "produce", "--messages", "10",
                               "--dashboard", f"127.0.0.1:{port}"],
                              cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert f"--dashboard 127.0.0.1:{port}: port {port} on 127.0.0.1 is in use" in proc.stderr
    assert "Started" not in proc.stderr and "Traceback" not in proc.stderr
    assert time.monotonic() - started < 60


@pytest.mark.broker
def test_a_sweep_s_dashboard_counts_cells_and_ends_with_the_report(tmp_path) -> None:
    import json

    out = tmp_path / "sweep"
    proc = subprocess.Popen(
        [*KBATCH, "sweep", "--modes", "partition", "--windows", "5,50", "--partitions", "10",
         "--rate", "1000", "--duration", "3", "--no-progress", "--no-chart",
         "--dashboard", "0", "--out", str(out)],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        url = read_url(proc)
        seen: set[int] = set()

        def progress() -> bool:
            try:
                with urllib.request.urlopen(url + "state.json", timeout=10) as answer:
                    state = json.loads(answer.read())
            except OSError:  # kbatch has exited
                return True
            if state["sweep"]:
                assert state["sweep"]["total"] == 2
                seen.add(state["sweep"]["done"])
            return state["finished"]

        wait_for(progress, 120, "the sweep to finish")
        assert seen & {0, 1}  # watched while it ran
        assert proc.wait(timeout=60) == 0
        assert (out / "report.html").stat().st_size > 1_000_000
        assert json.loads((out / "results.json").read_text())["kind"] == "sweep"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
