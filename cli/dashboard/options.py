"""`--dashboard [HOST:]PORT`, the option alone: the commands' `--help` reads it without
importing the server (http.server, rich, the charts' state) in cli.dashboard.server, which
re-exports it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click


def dashboard_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """The `--dashboard [HOST:]PORT` option (keyword argument `dashboard`)."""
    return click.option(
        "--dashboard", "dashboard", default=None, metavar="[HOST:]PORT",
        help="Serve a live page of the run at http://HOST:PORT/ (charts redrawn every "
             "interval, progress, warnings, the HTML report at the end) and Prometheus "
             "metrics at /metrics. HOST defaults to 127.0.0.1; PORT 0 picks a free port "
             "(the URL is printed). Another host (e.g. 0.0.0.0) exposes the run to the "
             "network: only when given explicitly, with a warning.")(func)
