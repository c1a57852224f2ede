"""`kbatch report --html` end to end: the CLI writes one file, headless chromium opens it
offline, every chart is drawn, nothing logs an error, and the legend hides and shows a
mode. Plus the report's bad inputs (no browser involved: the report needs none)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.commands.report import report
from producer_core.results.results_io import write_results_dir
from tests.browser import (
    charts_drawn,
    chromium,
    console_errors,
    leaving_requests,
    requested_urls,
)
from tests.results_fakes import fake_comparison
from tests.unit.test_html_report import run_with_intervals

ROOT = Path(__file__).resolve().parents[2]


def comparison_dir(tmp_path: Path) -> Path:
    """A compare-modes results directory (partition, broker, none) with intervals."""
    modes = ("partition", "broker", "none")
    document, results = fake_comparison(modes, files=True)
    for run, mode in zip(document["runs"], modes, strict=True):
        run["intervals"] = run_with_intervals(mode)["intervals"]
    out = tmp_path / "cmp"
    write_results_dir(out, json.loads(json.dumps(document)), results)
    return out


def sweep_dir(tmp_path: Path) -> Path:
    from tests.unit.test_sweep import fake_runner

    fake_runner(tmp_path, []).run(resume=False)
    return tmp_path / "out"


def wait_drawn(driver, expected: int, timeout: float = 30.0) -> dict[str, int]:
    deadline = time.monotonic() + timeout
    drawn: dict[str, int] = {}
    while time.monotonic() < deadline:
        drawn = charts_drawn(driver)
        if len(drawn) >= expected and all(drawn.values()):
            return drawn
        time.sleep(0.2)
    return drawn


def trace_visibility(driver, chart: str) -> list:
    return driver.execute_script(
        "return document.getElementById(arguments[0]).data.map(t => t.visible);", chart)


def click_legend(driver, chart: str, index: int) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    div = driver.find_element(By.ID, chart)
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", div)
    toggles = div.find_elements(By.CSS_SELECTOR, "g.legend g.traces rect.legendtoggle")
    ActionChains(driver).move_to_element(toggles[index]).click().perform()
    time.sleep(0.8)  # Plotly waits out its double-click delay before acting


def test_html_report_renders_offline_with_every_chart_and_a_working_legend(tmp_path) -> None:
    page = tmp_path / "r.html"
    proc = CliRunner().invoke(report, [str(comparison_dir(tmp_path)), str(sweep_dir(tmp_path)),
                                       "--html", str(page)], catch_exceptions=False)
    assert proc.exit_code == 0, proc.output
    assert f"Report written: {page}." in proc.output.replace("\n", "")
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == ["r.html"]
    text = page.read_text()
    expected = text.count('class="plotly-graph-div"')
    assert expected == 8  # frontier, bars, percentiles, five over-time panels
    with chromium() as driver:
        driver.get(page.as_uri())
        drawn = wait_drawn(driver, expected)
        assert len(drawn) == expected and all(drawn.values()), drawn
        assert drawn["chart-frontier"] >= 4  # one line per mode group of the sweep
        assert console_errors(driver) == []
        chart = "chart-over-requests_per_s"
        before = trace_visibility(driver, chart)
        assert all(v in (True, None) for v in before), before
        click_legend(driver, chart, 1)  # the second run's entry: mode broker
        hidden = trace_visibility(driver, chart)
        assert [i for i, v in enumerate(hidden) if v == "legendonly"] == [1], hidden
        assert charts_drawn(driver)[chart] == drawn[chart] - 1
        click_legend(driver, chart, 1)
        assert all(v in (True, None) for v in trace_visibility(driver, chart))
        assert charts_drawn(driver)[chart] == drawn[chart]
        assert console_errors(driver) == []
        urls = requested_urls(driver)
        assert page.as_uri() in urls  # the log saw the page load: it does record requests
        assert leaving_requests(urls) == [], "the report asked the network for something"


def test_report_needs_no_browser(tmp_path) -> None:
    """On a machine without chromium (an empty PATH) the report is written all the same."""
    page = tmp_path / "r.html"
    proc = subprocess.run([sys.executable, "-m", "cli.main", "report",
                           str(comparison_dir(tmp_path)), "--html", str(page)],
                          cwd=ROOT, capture_output=True, text=True, timeout=240,
                          env={**os.environ, "PATH": str(tmp_path / "nothing"),
                               "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    assert page.stat().st_size > 1_000_000  # plotly.js inlined


def test_an_empty_results_directory_is_a_usage_error(tmp_path) -> None:
    (tmp_path / "empty").mkdir()
    proc = CliRunner().invoke(report, [str(tmp_path / "empty"), "--html",
                                       str(tmp_path / "r.html")])
    assert proc.exit_code == 2
    assert "is a directory without results.json" in proc.output
    assert not (tmp_path / "r.html").exists()


def test_results_of_another_schema_version_are_a_usage_error(tmp_path) -> None:
    results = comparison_dir(tmp_path) / "results.json"
    document = json.loads(results.read_text())
    document["schema_version"] = 0
    results.write_text(json.dumps(document))
    proc = CliRunner().invoke(report, [str(results), "--html", str(tmp_path / "r.html")])
    assert proc.exit_code == 2
    assert "schema_version 0; this kbatch reads schema_version 1" in proc.output
    assert "Traceback" not in proc.output


def test_an_unwritable_html_path_is_a_usage_error(tmp_path) -> None:
    proc = CliRunner().invoke(report, [str(comparison_dir(tmp_path)), "--html",
                                       str(tmp_path)])
    assert proc.exit_code == 2 and "--html" in proc.output


@pytest.mark.parametrize("extra", [["--out"], ["--markdown"]])
def test_html_beside_the_markdown_report(tmp_path, extra) -> None:
    target = tmp_path / ("rep" if extra == ["--out"] else "rep.md")
    proc = CliRunner().invoke(report, [str(comparison_dir(tmp_path)), *extra, str(target),
                                       "--html", str(tmp_path / "r.html"), "--no-charts"],
                              catch_exceptions=False)
    assert proc.exit_code == 0, proc.output
    assert (tmp_path / "r.html").is_file()
    assert (target / "report.md" if extra == ["--out"] else target).is_file()


def test_the_offline_check_sees_requests_that_would_leave() -> None:
    urls = ["file:///tmp/r.html", "data:image/png;base64,AA", "blob:null/1", "about:blank",
            "http://127.0.0.1:8080/state.json", "http://localhost/x", "chrome://newtab/",
            "https://cdn.plot.ly/plotly-2.35.2.min.js", "http://10.0.0.1/x"]
    assert leaving_requests(urls) == ["https://cdn.plot.ly/plotly-2.35.2.min.js",
                                      "http://10.0.0.1/x"]
