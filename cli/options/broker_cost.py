"""``--broker-metrics``: the Prometheus endpoints of an external cluster's brokers."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from producer_core.errors import UsageError

if TYPE_CHECKING:  # the scraper brings urllib's HTTP client: only for a run that uses it
    from producer_core.measure.metrics_endpoint import Endpoint

BROKER_METRICS_HELP = (
    "Prometheus endpoints of the brokers of --bootstrap-servers' cluster, one URL per "
    "broker (the JMX exporter's /metrics), comma-separated: scraped before, during and "
    "after each run for Kafka's own figures and the brokers' JVM CPU (results JSON "
    "`broker_cost`). Brokers kbatch starts are measured without it. Secrets in the URLs "
    "are never shown.")


def broker_metrics_option(command: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--broker-metrics", "broker_metrics", default=None,
                        metavar="URL[,URL...]", help=BROKER_METRICS_HELP)(command)


def broker_endpoints(flags: dict[str, Any], bootstrap: str | None) -> list[Endpoint]:
    """Take --broker-metrics out of a command's keyword arguments; check it."""
    text = flags.pop("broker_metrics", None)
    if text is None:
        return []
    if not bootstrap:
        raise UsageError(
            "--broker-metrics names the metrics endpoints of an external cluster; give its "
            "--bootstrap-servers too. Brokers kbatch starts (Tansu, --broker kafka) are "
            "measured without it.")
    from producer_core.measure.metrics_endpoint import parse_urls

    return parse_urls(text)
