"""Prometheus endpoints of brokers: ``--broker-metrics URL[,URL...]``, one URL per broker.

A URL may carry a secret (``https://user:pass@host/metrics``, ``?token=...``,
``?pa%73s=...``, ``#fragment``): the secret is used to fetch and never shown. ``shown`` is
the URL with the userinfo's password, every query value of a secret-like name (the name
percent-decoded first, so no spelling hides it) and the fragment replaced by
``[redacted]``; only it goes to the screen, logs and results. Errors name the shown URL,
never the real one. URLs are checked before any broker starts (scheme, host, port, IPv6
brackets, duplicates); fetching them is ``metrics_fetch``'s job.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass, field

from producer_core.errors import UsageError
from producer_core.security import REDACTED, is_secret

#: Query names containing one of these (after percent-decoding, any case) carry secrets.
_SECRET_QUERY = ("key", "auth", "sig", "pass", "pwd", "session", "sess", "sid", "cookie",
                 "cred", "jwt", "bearer", "ticket", "code", "nonce", "otp", "private")
EXAMPLE = ("e.g. --broker-metrics http://broker1:7071/metrics,http://broker2:7071/metrics "
           "(the JMX exporter's /metrics; an IPv6 address in brackets: http://[::1]:7071/"
           "metrics)")


def _secret_query_key(key: str) -> bool:
    lowered = urllib.parse.unquote_plus(key).lower()
    return is_secret(lowered) or any(word in lowered for word in _SECRET_QUERY)


def _redact_query(query: str) -> str:
    """Each ``name=value`` (split on ``&`` and ``;``) with a secret-like name's value
    replaced; a bare item without ``=`` could be a token by itself: replaced too."""
    items = []
    for item in query.replace(";", "&").split("&"):
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep:
            items.append(REDACTED)
        else:
            items.append(f"{key}={REDACTED if _secret_query_key(key) else value}")
    return "&".join(items)


def redact_url(url: str) -> str:
    """``url`` without its secrets (userinfo password, secret-like query values, fragment)."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return REDACTED
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}:{REDACTED}@{host}" if ":" in userinfo else f"{REDACTED}@{host}"
    fragment = REDACTED if parts.fragment else ""
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path,
                                    _redact_query(parts.query), fragment))


@dataclass(frozen=True)
class Endpoint:
    """One broker's metrics URL; ``node`` names it in the results (1, 2, ...)."""

    node: str
    url: str = field(repr=False)
    shown: str = ""

    @classmethod
    def of(cls, node: str, url: str) -> Endpoint:
        return cls(node, url, redact_url(url))


def check_url(raw: str) -> None:
    """UsageError unless ``raw`` is an http(s) URL with a host and a usable port."""
    shown = redact_url(raw)
    netloc = re.split(r"[/?#]", raw.partition("//")[2], maxsplit=1)[0].rpartition("@")[2]
    if netloc.count(":") > 1 and not netloc.startswith("["):
        raise UsageError(f"--broker-metrics {shown!r} has an IPv6 address without brackets: "
                         f"write it as http://[ADDRESS]:PORT/metrics ({EXAMPLE}).")
    try:
        parts = urllib.parse.urlsplit(raw)
        port = parts.port
    except ValueError as exc:
        reason = str(exc).replace(raw, shown)
        raise UsageError(f"--broker-metrics {shown!r} is not a usable URL ({reason}). "
                         f"Give one Prometheus endpoint per broker, {EXAMPLE}.") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"--broker-metrics {shown!r} is not an http(s) URL with a host. "
                         f"Give one Prometheus endpoint per broker, {EXAMPLE}.")
    if port == 0:
        raise UsageError(f"--broker-metrics {shown!r} names port 0; a metrics endpoint "
                         f"listens on a port from 1 to 65535 ({EXAMPLE}).")


def parse_urls(text: str) -> list[Endpoint]:
    """``--broker-metrics`` URLs, checked before any run (see ``check_url``); the same URL
    twice would count one broker twice: refused."""
    endpoints: list[Endpoint] = []
    for index, raw in enumerate((u.strip() for u in text.split(",") if u.strip()), start=1):
        check_url(raw)
        if any(e.url == raw for e in endpoints):
            raise UsageError(f"--broker-metrics names {redact_url(raw)!r} twice: each URL is "
                             "one broker, and its figures would be counted twice. Give each "
                             "broker's endpoint once.")
        endpoints.append(Endpoint.of(str(index), raw))
    if not endpoints:
        raise UsageError("--broker-metrics needs at least one URL (comma-separated, one "
                         "per broker).")
    return endpoints
