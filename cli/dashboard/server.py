"""`--dashboard [HOST:]PORT`: a live page and a Prometheus `/metrics` while a command runs.

A stdlib `ThreadingHTTPServer` in a daemon thread serves:

- `/`            the live page: the HTML report's charts (cli/report/html_figures.py) redrawn with
                 Plotly.react every interval, the runs' numbers (updated every second), a
                 sweep's progress and ETA, warnings as they happen and, at the end, the HTML
                 report. plotly.js is inlined: the page asks nothing of the internet.
- `/state.json`  what the page polls (figures only when an interval has ended since).
- `/metrics`     Prometheus text (cli/dashboard/prometheus_text.py).
- `/report.html` the finished run's HTML report.

The run feeds `DashboardState` (cli/dashboard/state.py) from the stream the terminal
already gets: the progress callback and `on_interval` of cli/options/output_mode.py's
ProgressSink, so nothing in the engine knows about pages.

Wiring a command (produce, compare-modes and sweep do this; `kbatch capacity` can too):

    @dashboard_option                      # the --dashboard option
    def cmd(..., dashboard: str | None):
        open_dashboard(dashboard, "kbatch cmd")   # after the input checks, before brokers
        ...  runs through runner.progress()/live_progress() are fed automatically;
        ...  a search of many runs: dashboard_progress(done, total, eta_s, current)
        finish_dashboard(document, out_dir)       # the HTML report, linked from the page

Loopback only unless a non-loopback host is asked for explicitly (then with a warning).
"""

from __future__ import annotations

import errno
import ipaddress
import json
import re
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import click

from cli.dashboard.options import dashboard_option
from cli.dashboard.state import DashboardState, LiveRun, Snapshot
from cli.render.tables import console
from producer_core.errors import UsageError

__all__ = ["Dashboard", "dashboard_option", "dashboard_progress", "dashboard_run",
           "dashboard_warn", "finish_dashboard", "open_dashboard", "parse_address",
           "sweep_hooks"]

MAX_LINES = 12
"""Runs drawn over time at once (a sweep's latest cells); the page says when older ones
are left out."""
MIN_REBUILD_S = 1.0
REBUILD_SHARE = 0.2
"""The charts are rebuilt at most once a second, and at most this share of the time."""
FETCH_GRACE_S = 3.0
"""At the end, how long kbatch waits for an open page to fetch the report (so its link
works after kbatch exits); only when a page polled within the last few seconds."""

_ADDRESS = re.compile(r"^(?:(?P<host>\[[^\]]*\]|[^:\[\]]*):)?(?P<port>\d{1,5})$")


def parse_address(text: str) -> tuple[str, int, bool]:
    """(host, port, loopback) of `[HOST:]PORT`; the host is 127.0.0.1 unless given."""
    match = _ADDRESS.match(text.strip())
    if not match or int(match["port"]) > 65535:
        raise UsageError(f"--dashboard {text!r}: give [HOST:]PORT, e.g. 8080, 127.0.0.1:0 "
                         "(0: any free port) or [::1]:8080.")
    host = (match["host"] or "127.0.0.1").strip("[]") or "127.0.0.1"
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise UsageError(f"--dashboard {text!r}: cannot resolve host {host!r} "
                         f"({exc.strerror}).") from None
    loopback = all(ipaddress.ip_address(str(info[4][0]).split("%")[0]).is_loopback
                   for info in infos)
    return host, int(match["port"]), loopback


class Dashboard:
    """The server and its state; `close()` stops serving."""

    def __init__(self, state: DashboardState, server: ThreadingHTTPServer, url: str) -> None:
        self.state = state
        self.server = server
        self.url = url
        self.last_poll = 0.0
        self.report_fetched = threading.Event()
        self._page: str | None = None
        self._figures: tuple[int, dict[str, Any]] = (-1, {})
        self._next_build = 0.0
        self._render_lock = threading.Lock()
        self._thread = threading.Thread(target=server.serve_forever, name="kbatch-dashboard",
                                        kwargs={"poll_interval": 0.2}, daemon=True)
        self._thread.start()

    def close(self) -> None:
        global _current
        if not self.state.finished:
            self.state.finish(None)
        self.server.shutdown()
        self.server.server_close()
        if _current is self:
            _current = None

    # ------------------------------------------------------------------ answers
    def page(self) -> str:
        if self._page is None:
            from cli.dashboard.page import live_page

            self._page = live_page(self.state.title)
        return self._page

    def figures(self, snapshot: Snapshot) -> tuple[int, dict[str, Any]]:
        """(version, the charts as Plotly JSON): rebuilt when an interval has ended since,
        but not sooner than REBUILD_SHARE allows (Plotly's figure objects are slow to
        build, and the build holds the GIL the run's engine needs)."""
        with self._render_lock:
            version, cached = self._figures
            now = time.monotonic()
            if version == snapshot.figures_version or (
                    now < self._next_build and not snapshot.finished and version >= 0):
                return version, cached
            from cli.dashboard.page import live_figures

            figures = live_figures(snapshot, MAX_LINES)
            took = time.monotonic() - now
            self._next_build = time.monotonic() + max(MIN_REBUILD_S, took / REBUILD_SHARE)
            self._figures = (snapshot.figures_version, figures)
            return self._figures

    def state_json(self, figures_since: int) -> bytes:
        self.last_poll = time.monotonic()
        from cli.dashboard.page import state_document

        snapshot = self.state.snapshot()
        version, figures = self.figures(snapshot)
        document = state_document(snapshot, None if figures_since == version else figures,
                                  MAX_LINES)
        document["figures_version"] = version
        return json.dumps(document).encode()

    def metrics(self) -> bytes:
        from cli.dashboard.prometheus_text import prometheus_text

        return prometheus_text(self.state.snapshot()).encode()


class _Handler(BaseHTTPRequestHandler):
    dashboard: Dashboard
    server_version = "kbatch-dashboard"

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        parts = urlsplit(self.path)
        try:
            if parts.path in ("/", "/index.html"):
                self._send(200, "text/html; charset=utf-8", self.dashboard.page().encode())
            elif parts.path == "/state.json":
                since = parse_qs(parts.query).get("figures", ["-1"])[0]
                body = self.dashboard.state_json(int(since) if since.lstrip("-").isdigit()
                                                 else -1)
                self._send(200, "application/json", body)
            elif parts.path == "/metrics":
                from cli.dashboard.prometheus_text import CONTENT_TYPE

                self._send(200, CONTENT_TYPE, self.dashboard.metrics())
            elif parts.path == "/report.html" and self.dashboard.state.snapshot().report:
                report = self.dashboard.state.snapshot().report
                assert report is not None
                self._send(200, "text/html; charset=utf-8", report.read_bytes())
                self.dashboard.report_fetched.set()
            elif parts.path == "/favicon.ico":
                self._send(204, "image/x-icon", b"")
            else:
                self._send(404, "text/plain; charset=utf-8", b"not found\n")
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _send(self, code: int, content_type: str, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass  # the run's terminal output is the user's, not an access log's


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = False


_current: Dashboard | None = None


def open_dashboard(spec: str | None, title: str) -> Dashboard | None:
    """Start serving (None without `--dashboard`); prints the URL. A port in use or a bad
    address is a usage error (exit 2), raised before any broker starts. The server stops
    when the command ends."""
    global _current
    if spec is None:
        return None
    host, port, loopback = parse_address(spec)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    handler: type[_Handler] = type("Handler", (_Handler,), {})
    server_class = type("Server", (_Server,), {"address_family": family})
    try:
        server = server_class((host, port), handler)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise UsageError(f"--dashboard {spec}: port {port} on {host} is in use; give "
                             "another port, or 0 for any free one.") from None
        raise UsageError(f"--dashboard {spec}: cannot listen on {host}:{port} "
                         f"({exc.strerror or exc}).") from None
    bound_host, bound_port = server.server_address[:2]
    shown = f"[{bound_host}]" if ":" in str(bound_host) else bound_host
    url = f"http://{shown}:{bound_port}/"
    dashboard = Dashboard(DashboardState(title), server, url)
    handler.dashboard = dashboard
    _current = dashboard
    if not loopback:
        console.print(f"[yellow]Warning:[/yellow] the dashboard listens on {host}, not "
                      "loopback: anyone who can reach this machine can see the run and its "
                      "settings (no password). Use 127.0.0.1 unless that is what you want.",
                      soft_wrap=True)
    line = f"Dashboard: {url} (Prometheus metrics: {url}metrics)"
    if console.quiet:  # --quiet: still say where the page is (port 0 is only known here)
        click.echo(line, err=True)
    else:
        console.print(line, soft_wrap=True, highlight=False)
    context = click.get_current_context(silent=True)
    if context is not None:
        context.call_on_close(dashboard.close)
    return dashboard


def current() -> Dashboard | None:
    return _current


def dashboard_run(label: str, mode: str | None = None) -> tuple[DashboardState, LiveRun] | None:
    """Register a run that starts now (None without a dashboard). `label` is the live
    view's, e.g. `[partition]`; the mode defaults to the label without brackets."""
    if _current is None:
        return None
    name = label.strip().strip("[]")
    return _current.state, _current.state.begin_run(name, mode or name.split(" ")[0])


def dashboard_warn(text: str) -> None:
    if _current is not None:
        _current.state.warn(text)


def dashboard_progress(done: int, total: int, eta_s: float | None, current_unit: str,
                       document: Path | None = None) -> None:
    """A search of many runs (sweep, capacity): units done of total, ETA, the one running;
    `document`: a results file whose sweep frontier the page draws."""
    if _current is not None:
        _current.state.sweep_progress(done, total, eta_s, current_unit, document)


class _CellSink:
    """A sweep cell's progress callback when only the dashboard listens."""

    def __init__(self, live: tuple[DashboardState, LiveRun]) -> None:
        from producer_core.results.intervals import DEFAULT_INTERVAL_S

        self.state, self.run = live
        self.report_interval_s = DEFAULT_INTERVAL_S

    def __call__(self, progress: Any) -> None:
        self.state.progress(self.run, progress)

    def on_interval(self, row: dict[str, Any]) -> None:
        self.state.interval(self.run, row)


def sweep_hooks(on_start: Callable[..., Any], on_end: Callable[..., Any], total: int,
                out_dir: Path, eta: Callable[[int], float]
                ) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """`kbatch sweep`'s on_start/on_end, also feeding the dashboard (unchanged without)."""
    if _current is None:
        return on_start, on_end
    done = [0]
    dashboard_progress(0, total, eta(total), "", out_dir / "results.json")

    def start(cell: Any, round_index: int, index: int, pending: int) -> Any:
        shown = on_start(cell, round_index, index, pending)
        dashboard_progress(done[0], total, eta(total - done[0]), f"{cell.id} round {round_index}")
        live = dashboard_run(f"{cell.id} #{round_index}", cell.mode)
        return shown if live is None else _CellSink(live)

    def end(cell: Any, round_index: int, error: str | None, seconds: float) -> None:
        on_end(cell, round_index, error, seconds)
        done[0] += 1
        if error is not None:
            dashboard_warn(f"cell {cell.id} round {round_index} failed: {error}")
        dashboard_progress(done[0], total, eta(total - done[0]), "")

    return start, end


def finish_dashboard(documents: dict[str, Any] | list[Any] | Path, out_dir: Path | None
                     ) -> Path | None:
    """The end of the command: write the HTML report (OUT/report.html, else a temporary
    file), link it from the page, and give an open page a moment to fetch it."""
    dashboard = _current
    if dashboard is None:
        return None
    from cli.report.steps import write_html_report
    from producer_core.results.results_io import RESULTS_FILE, LoadedResults, load_results

    if isinstance(documents, Path):
        loaded = [load_results(documents)]
    else:
        items = documents if isinstance(documents, list) else [documents]
        base = (out_dir / RESULTS_FILE) if out_dir is not None else Path("live-run.json")
        loaded = [item if isinstance(item, LoadedResults) else LoadedResults(base, item)
                  for item in items]
    target = (out_dir / "report.html") if out_dir is not None else Path(
        tempfile.mkdtemp(prefix="kbatch-dashboard-")) / "report.html"
    try:
        write_html_report(loaded, target)
    except Exception as exc:  # the run's results are kept; the page only lacks its report
        dashboard_warn(f"the HTML report could not be written: {type(exc).__name__}: {exc}")
        dashboard.state.finish(None)
        return None
    dashboard.state.finish(target)
    console.print(f"HTML report: {target} (linked from {dashboard.url})", soft_wrap=True,
                  highlight=False)
    if time.monotonic() - dashboard.last_poll < FETCH_GRACE_S:
        dashboard.report_fetched.wait(FETCH_GRACE_S)
    return target
