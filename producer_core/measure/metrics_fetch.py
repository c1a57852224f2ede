"""Reading brokers' metrics endpoints with bounds: an overall deadline, a size cap, all
endpoints at once, and a stop event that ends the wait at once.

A socket timeout bounds each read, not a scrape: an endpoint that sends a byte a second
never ends it, and one that never answers costs the timeout per endpoint, in turn. Here
every endpoint of a round is fetched on its own thread; the caller waits at most
``deadline_s`` for all of them together (less if ``stop`` is set), then closes the
sockets of those still reading, so their threads end too. A body over ``MAX_BYTES`` is
refused as it arrives, not after it filled the memory. Plain ``http.client``: no proxy
from the environment sits between kbatch and a broker it measures.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass, field

from producer_core.measure.metrics_endpoint import Endpoint
from producer_core.measure.prometheus_text import PrometheusParseError, Sample, parse

DEADLINE_S = 2.0
"""How long one round of scrapes (all endpoints together) may take."""
MAX_BYTES = 64 * 1024 * 1024
"""A Kafka broker's JMX exporter answers a few MB even with thousands of partitions."""
_CHUNK = 64 * 1024
_POLL_S = 0.05


class ScrapeError(Exception):
    """An endpoint did not answer with Prometheus text (the message names the shown URL)."""


@dataclass
class _Fetch:
    """One endpoint's fetch in flight: its connection (to close on abort) and outcome."""

    endpoint: Endpoint
    conn: http.client.HTTPConnection | None = None
    samples: list[Sample] | None = None
    error: str | None = None
    done: threading.Event = field(default_factory=threading.Event)

    def abort(self) -> None:
        conn = self.conn
        sock = getattr(conn, "sock", None) if conn is not None else None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


def _request(endpoint: Endpoint) -> tuple[str, int | None, str, str, dict[str, str]]:
    """scheme, host, port, request target and headers (basic auth from the userinfo)."""
    parts = urllib.parse.urlsplit(endpoint.url)
    headers = {"Accept": "text/plain;version=0.0.4"}
    if parts.username is not None:
        pair = f"{urllib.parse.unquote(parts.username)}:" \
               f"{urllib.parse.unquote(parts.password or '')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return parts.scheme, parts.port, parts.hostname or "", target, headers


def _late(endpoint: Endpoint, deadline_s: float) -> str:
    return f"{endpoint.shown} did not answer in full within {deadline_s:g} s"


def _fetch(job: _Fetch, deadline: float, deadline_s: float, max_bytes: int) -> None:
    """Runs on its own thread: fetch and parse, the outcome into ``job``."""
    endpoint = job.endpoint
    try:
        scheme, port, host, target, headers = _request(endpoint)
        timeout = max(0.01, deadline - time.monotonic())
        if scheme == "https":
            job.conn = http.client.HTTPSConnection(
                host, port, timeout=timeout, context=ssl.create_default_context())
        else:
            job.conn = http.client.HTTPConnection(host, port, timeout=timeout)
        job.conn.request("GET", target, headers=headers)
        response = job.conn.getresponse()
        if response.status != 200:
            job.error = f"{endpoint.shown} answered HTTP {response.status}"
            return
        body = bytearray()
        while chunk := response.read(_CHUNK):
            body += chunk
            if len(body) > max_bytes:
                job.error = (f"{endpoint.shown} answered more than {max_bytes // 1_000_000} "
                             "MB: not read further (a broker's metrics are a few MB)")
                return
        job.samples = parse(body.decode("utf-8", "replace"))
    except PrometheusParseError as exc:
        job.error = f"{endpoint.shown} did not answer in the Prometheus text format: {exc}"
    except TimeoutError:
        job.error = _late(endpoint, deadline_s)
    except (OSError, http.client.HTTPException, ValueError) as exc:
        if not job.error:
            text = str(exc).replace(endpoint.url, endpoint.shown)
            job.error = f"{endpoint.shown} is unreachable ({type(exc).__name__}: {text})"
    finally:
        if job.conn is not None:
            job.conn.close()
        job.done.set()


def scrape_all(endpoints: Sequence[Endpoint], deadline_s: float = DEADLINE_S,
               stop: threading.Event | None = None, max_bytes: int = MAX_BYTES
               ) -> dict[str, list[Sample] | ScrapeError]:
    """node -> its samples, or a ScrapeError (without the secret): every endpoint at once,
    all within ``deadline_s`` (or until ``stop`` is set)."""
    deadline = time.monotonic() + deadline_s
    jobs = [_Fetch(e) for e in endpoints]
    for job in jobs:
        threading.Thread(target=_fetch, args=(job, deadline, deadline_s, max_bytes), daemon=True,
                         name=f"kbatch-scrape-{job.endpoint.node}").start()
    for job in jobs:
        while not job.done.is_set():
            left = deadline - time.monotonic()
            if left <= 0 or (stop is not None and stop.is_set()):
                break
            job.done.wait(min(_POLL_S, left))
    out: dict[str, list[Sample] | ScrapeError] = {}
    for job in jobs:
        if not job.done.is_set():
            job.abort()
            stopped = stop is not None and stop.is_set()
            out[job.endpoint.node] = ScrapeError(
                f"{job.endpoint.shown} was not read: the run was stopped" if stopped
                else _late(job.endpoint, deadline_s))
        elif job.samples is not None:
            out[job.endpoint.node] = job.samples
        else:
            out[job.endpoint.node] = ScrapeError(job.error or f"{job.endpoint.shown} failed")
    return out


def scrape(endpoint: Endpoint, deadline_s: float = DEADLINE_S) -> list[Sample]:
    """One endpoint's samples; ScrapeError if it cannot be read within ``deadline_s``."""
    result = scrape_all([endpoint], deadline_s)[endpoint.node]
    if isinstance(result, ScrapeError):
        raise result
    return result
