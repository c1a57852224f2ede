"""Prometheus endpoints of brokers: ``--broker-metrics URL[,URL...]``, one URL per broker.

A URL may carry a secret (``https://user:pass@host/metrics``, ``?token=...``): the
secret is used to fetch and never shown. ``shown`` is the URL with the userinfo's
password and every secret-looking query value replaced by ``[redacted]``; only it goes
to the screen, logs and results. Errors name the shown URL, never the real one.
"""

from __future__ import annotations

import base64
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field

from producer_core.errors import UsageError
from producer_core.measure.prometheus_text import PrometheusParseError, Sample, parse
from producer_core.security import REDACTED, is_secret

FETCH_TIMEOUT_S = 2.0
_SECRET_QUERY = ("key", "auth", "sig", "signature", "pass", "pwd")


def _secret_query_key(key: str) -> bool:
    lowered = key.lower()
    return is_secret(lowered) or any(word in lowered for word in _SECRET_QUERY)


def redact_url(url: str) -> str:
    """``url`` without its secrets (userinfo password, token-like query values)."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return REDACTED
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}:{REDACTED}@{host}" if ":" in userinfo else f"{REDACTED}@{host}"
    query = "&".join(
        f"{k}={REDACTED if _secret_query_key(k) else v}" if sep else k
        for k, sep, v in (item.partition("=") for item in parts.query.split("&") if item))
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


@dataclass(frozen=True)
class Endpoint:
    """One broker's metrics URL; ``node`` names it in the results (1, 2, ...)."""

    node: str
    url: str = field(repr=False)
    shown: str = ""

    @classmethod
    def of(cls, node: str, url: str) -> Endpoint:
        return cls(node, url, redact_url(url))


def parse_urls(text: str) -> list[Endpoint]:
    """``--broker-metrics`` URLs, checked (http or https with a host) before any run."""
    endpoints = []
    for index, raw in enumerate((u.strip() for u in text.split(",") if u.strip()), start=1):
        parts = urllib.parse.urlsplit(raw)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(
                f"--broker-metrics {redact_url(raw)!r} is not an http(s) URL with a host. "
                "Give one Prometheus endpoint per broker, e.g. --broker-metrics "
                "http://broker1:7071/metrics,http://broker2:7071/metrics (the JMX "
                "exporter's /metrics).")
        endpoints.append(Endpoint.of(str(index), raw))
    if not endpoints:
        raise UsageError("--broker-metrics needs at least one URL (comma-separated, one "
                         "per broker).")
    return endpoints


class ScrapeError(Exception):
    """An endpoint did not answer with Prometheus text (the message names the shown URL)."""


def scrape(endpoint: Endpoint, timeout_s: float = FETCH_TIMEOUT_S) -> list[Sample]:
    """Fetch and parse one endpoint; ScrapeError (without the secret) if that fails."""
    parts = urllib.parse.urlsplit(endpoint.url)
    url, headers = endpoint.url, {"Accept": "text/plain;version=0.0.4"}
    if parts.username is not None:  # basic auth from the userinfo, not in the request line
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
        url = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))
        pair = f"{urllib.parse.unquote(parts.username)}:" \
               f"{urllib.parse.unquote(parts.password or '')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310
            text = response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        raise ScrapeError(f"{endpoint.shown} answered HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ScrapeError(f"{endpoint.shown} is unreachable ({type(reason).__name__}: "
                          f"{str(reason).replace(endpoint.url, endpoint.shown)})") from None
    try:
        return parse(text)
    except PrometheusParseError as exc:
        raise ScrapeError(f"{endpoint.shown} did not answer in the Prometheus text format: "
                          f"{exc}") from None
