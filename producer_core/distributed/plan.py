"""The plan of a distributed run: which master, how many shares, when they start.

The driver plans; the tasks only run. The driver checks the master URL (before any JVM
starts), refuses a master whose workers could not reach the brokers, creates the topics
once (N tasks creating the same topic would race), and splits the workload into N shares
with `Workload.share`: every rate divided by N so the shares add up to the target, the
message cap split, message ids tagged with the share index (bits 56+) so they never
collide, and one common wall-clock start instant so the schedules line up. The lead time
before that instant must cover Spark's task launch (a Python worker per task, importing
the engine); a share that still starts late is reported, never hidden.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import re
from dataclasses import dataclass

from producer_core.config import ProducerSettings
from producer_core.distributed.limits import (  # noqa: F401 - re-exported
    DEFAULT_START_LEAD_S,
    MASTER_FORMS,
    MAX_WORKERS,
)
from producer_core.engine.transport.transport import Cluster, parse_bootstrap
from producer_core.errors import UsageError
from producer_core.workload.workload import Workload

MAX_LOCAL_SLOTS = 1024
"""Task slots (threads) of a local master at most."""

_LOCAL = re.compile(r"local(?:\[(?P<slots>\d+|\*)(?:,(?P<failures>\d+))?\])?")
_SPARK = re.compile(r"spark://[A-Za-z0-9._\-]+:\d{1,5}(?:,[A-Za-z0-9._\-]+:\d{1,5})*")
_PORT = re.compile(r":(\d+)(?=,|/|$)")
_K8S = re.compile(r"k8s://(?:https?://)?[A-Za-z0-9._\-]+(?::\d{1,5})?/?")


@dataclass(frozen=True)
class Master:
    """A Spark master URL, checked. `slots`: concurrent tasks of a local master."""

    url: str
    slots: int | None  # None: a cluster, whose size is known only once Spark runs

    @property
    def local(self) -> bool:
        return self.url.startswith("local")

    @property
    def on_this_machine(self) -> bool:
        """A local master, or a standalone master (spark://) whose every host is a
        loopback address: its workers run here and reach loopback brokers."""
        if self.local:
            return True
        if not self.url.startswith("spark://"):
            return False
        hosts = [item.rpartition(":")[0] for item in self.url[len("spark://"):].split(",")]
        return all(is_loopback_host(host) for host in hosts)


def default_master(workers: int) -> str:
    """One machine, one task slot per worker: no cluster needed."""
    return f"local[{workers}]"


def parse_master(url: str) -> Master:
    """Check a master URL's form before Spark starts (Spark's own error is a stack trace)."""
    text = url.strip()
    local = _LOCAL.fullmatch(text)
    if local:
        slots = local.group("slots")
        if slots is None:
            count = 1
        elif slots == "*":
            count = os.cpu_count() or 1
        else:
            count = int(slots)
        if not 1 <= count <= MAX_LOCAL_SLOTS:
            raise UsageError(f"--spark-master {url!r} has {count} task slots; use local[N] "
                             f"with N from 1 to {MAX_LOCAL_SLOTS}.")
        return Master(text, count)
    if text == "yarn" or _SPARK.fullmatch(text) or _K8S.fullmatch(text):
        bad = [port for port in _PORT.findall(text) if not 1 <= int(port) <= 65535]
        if bad:
            raise UsageError(f"--spark-master {url!r} names port {bad[0]}; ports go from 1 "
                             "to 65535.")
        return Master(text, None)
    raise UsageError(f"--spark-master {url!r} is not a Spark master URL. Allowed forms: "
                     f"{MASTER_FORMS}. Without the option, kbatch uses local[N] for "
                     "--workers N (this machine, no cluster).")


def check_slots(master: Master, workers: int) -> None:
    """Every share must run at once (their schedules share one start instant)."""
    if not 1 <= workers <= MAX_WORKERS:
        raise UsageError(f"--workers must be 1 to {MAX_WORKERS} (got {workers}).")
    if master.slots is not None and master.slots < workers:
        raise UsageError(
            f"--spark-master {master.url} runs {master.slots} task(s) at a time, but "
            f"--workers {workers} needs {workers} running at once (the shares start "
            f"together). Use local[{workers}] or fewer workers.")


def is_loopback_host(host: str) -> bool:
    """127.0.0.0/8, ::1, localhost (and 0.0.0.0, which clients reach as this machine)."""
    name = host.lower().strip("[]")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def loopback_servers(bootstrap: str) -> list[str]:
    """The bootstrap servers only this machine can reach (127.0.0.0/8, ::1, localhost)."""
    return [f"{host}:{port}" for host, port in parse_bootstrap(bootstrap)
            if is_loopback_host(host)]


def check_reachable(master: Master, bootstrap: str | None) -> None:
    """Refuse a cluster master with brokers only this machine can reach.

    `bootstrap` None means an embedded broker or lab, which listen on loopback. A master
    on this machine (local[N], or spark:// on a loopback address, whose workers are
    then on this machine too) reaches them.
    """
    if master.on_this_machine:
        return
    if bootstrap is None:
        raise UsageError(
            f"--spark-master {master.url} runs the shares on other machines, but the "
            "embedded broker (or lab) listens on this machine's loopback address, which "
            "they cannot reach. Use a local master (local[N], the default) with the "
            "embedded broker, or give --bootstrap-servers of a cluster the workers reach.")
    local_only = loopback_servers(bootstrap)
    if local_only:
        raise UsageError(
            f"--spark-master {master.url} runs the shares on other machines, but "
            f"--bootstrap-servers {', '.join(local_only)} is a loopback address that only "
            "this machine can reach. Give the brokers' network addresses, or use a local "
            "master (local[N]).")


def start_instant(now: float, lead_s: float) -> float:
    """The common wall-clock start of every share's schedule."""
    if not lead_s >= 0:
        raise UsageError(f"--spark-start-lead must be 0 or more seconds (got {lead_s}).")
    return now + lead_s


def plan_shares(workload: Workload, workers: int, start_at: float) -> list[Workload]:
    """The N shares of a workload (see `Workload.share`), one per task."""
    if not 1 <= workers <= MAX_WORKERS:
        raise UsageError(f"--workers must be 1 to {MAX_WORKERS} (got {workers}).")
    return [workload.share(index, workers, start_at) for index in range(workers)]


async def _create_topics(workload: Workload, settings: ProducerSettings,
                         bootstrap: str) -> list[str]:
    cluster = Cluster.for_settings(bootstrap, settings)
    created = []
    try:
        await cluster.connect()
        for spec in workload.topic_specs():
            if await cluster.ensure_topic(spec.name, spec.partitions):
                created.append(spec.name)
            await cluster.prime(spec.name, spec.partitions)  # once, not once per share
    finally:
        await cluster.close()
    return created


def create_topics(workload: Workload, settings: ProducerSettings, bootstrap: str) -> list[str]:
    """Create (and prime) the workload's topics once, from the driver; returns those it
    created.

    An existing topic with another partition count is refused here, before any task runs.
    """
    return asyncio.run(_create_topics(workload, settings, bootstrap))
