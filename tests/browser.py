"""Headless Debian chromium through selenium and /usr/bin/chromedriver, for the tests of the
HTML report and the live dashboard (tests/cli/test_html_report_browser.py,
tests/integration/test_dashboard_browser.py).

Without chromium the tests skip on a workstation but FAIL on CI (CI=true): .ci/run installs
`chromium chromium-driver` with apt-get, and a browser test that silently skips proves
nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

CHROMIUM_FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--window-size=1360,1000")


def _find(names: tuple[str, ...]) -> str | None:
    for name in names:
        path = shutil.which(name) or (f"/usr/bin/{name}" if Path(f"/usr/bin/{name}").exists()
                                      else None)
        if path:
            return path
    return None


def require_chromium() -> tuple[str, str]:
    """(chromium, chromedriver) paths; skip without them, or fail when CI=true."""
    browser = _find(("chromium", "chromium-browser"))
    driver = _find(("chromedriver",))
    try:
        import selenium  # noqa: F401
    except ImportError:
        browser = None
    if browser and driver:
        return browser, driver
    message = ("headless chromium, chromedriver and selenium are needed: apt-get install "
               "chromium chromium-driver; pip install -e '.[test]'")
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message + " (CI=true: browser tests must not skip)")
    pytest.skip(message)


@contextmanager
def chromium() -> Iterator[Any]:
    """A fresh headless chromium (its own profile directory) logging console and network."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser, driver_path = require_chromium()
    profile = tempfile.mkdtemp(prefix="kbatch-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def console_errors(driver: Any) -> list[str]:
    """The page's console messages at level SEVERE (errors, failed loads)."""
    return [entry["message"] for entry in driver.get_log("browser")
            if entry.get("level") == "SEVERE"]


def requested_urls(driver: Any) -> list[str]:
    """Every URL the page asked the network stack for (DevTools performance log)."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def leaving_requests(urls: list[str]) -> list[str]:
    """The URLs that would leave this machine: anything but file:, data:, blob:, about:
    and loopback addresses."""
    leaving = []
    for url in urls:
        parts = urlsplit(url)
        if parts.scheme in ("file", "data", "blob", "about", "chrome", "devtools"):
            continue
        host = parts.hostname or ""
        if host in ("localhost", "::1") or host.startswith("127."):
            continue
        leaving.append(url)
    return leaving


def charts_drawn(driver: Any) -> dict[str, int]:
    """Each chart div's id -> how many of its traces are drawn as non-empty SVG paths."""
    return driver.execute_script("""
        const out = {};
        for (const div of document.querySelectorAll('.js-plotly-plot')) {
          let drawn = 0;
          for (const path of div.querySelectorAll('.cartesianlayer g.trace path')) {
            const d = path.getAttribute('d') || '';
            if (d.length > 4 && d !== 'M0,0Z') drawn += 1;
          }
          out[div.id] = drawn;
        }
        return out;""")
