"""Real Apache Kafka for the integration suite from the top-level docker-compose.yml
(3 brokers, KRaft), started with the Compose tool on free ports.

It runs wherever a Docker engine and a Compose tool are; elsewhere tests that ask for the
``docker_kafka`` fixture are skipped with the reason (failed under CI=true, see
``tests.container_support``). The image is ``$KBATCH_KAFKA_IMAGE``, else apache/kafka at
kbatch's pinned version when present, else kbatch's own build (``kbatch image build``).
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from tests.container_support import compose_command, require_docker

ROOT = Path(__file__).resolve().parents[1]
COMPOSE_FILE = ROOT / "docker-compose.yml"
PORT_VARIABLES = ("KBATCH_COMPOSE_PORT_1", "KBATCH_COMPOSE_PORT_2", "KBATCH_COMPOSE_PORT_3")
_VARIABLE = re.compile(r"\$\{([A-Z0-9_]+):-([^}]*)\}")


def expand(text: str, env: Mapping[str, str] | None = None) -> str:
    """Compose's ``${NAME:-default}`` interpolation (the only form the file uses)."""
    env = os.environ if env is None else env
    return _VARIABLE.sub(lambda m: env.get(m.group(1)) or m.group(2), text)


def compose_bootstrap(path: Path = COMPOSE_FILE, env: Mapping[str, str] | None = None) -> str:
    """``host:port,...`` of the EXTERNAL listener every service of the compose file advertises."""
    import yaml

    services = yaml.safe_load(path.read_text())["services"]
    addresses = []
    for service in services.values():
        advertised = expand(service["environment"]["KAFKA_ADVERTISED_LISTENERS"], env)
        for listener in advertised.split(","):
            name, _, address = listener.partition("://")
            if name == "EXTERNAL":
                addresses.append(address)
    return ",".join(addresses)


def compose_skip_reason() -> str | None:
    from tests.container_support import docker_unavailable_reason

    reason = docker_unavailable_reason()
    if reason is None and compose_command() is None:
        reason = ("no Compose tool: neither the `docker compose` plugin nor `docker-compose` "
                  "(Debian: apt-get install docker-compose)")
    return reason


async def _brokers_seen(bootstrap: str) -> int:
    from producer_core.engine.transport.transport import Cluster

    cluster = Cluster(bootstrap)
    try:
        return len((await cluster.connect()).brokers)
    finally:
        await cluster.close()


def _free_ports(count: int) -> list[int]:
    socks = [socket.socket() for _ in range(count)]
    try:
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for sock in socks:
            sock.close()


def compose_image() -> str:
    from producer_core.brokers.docker_image import choose_image

    return os.environ.get("KBATCH_KAFKA_IMAGE") or choose_image(None, print).name


@pytest.fixture(scope="module")
def docker_kafka() -> Iterator[str]:
    """Bootstrap servers of a fresh 3-broker Apache Kafka cluster, torn down at the end of
    the module (three idle JVMs should not weigh on the rest of the suite)."""
    require_docker()
    command = compose_command()
    if command is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but {compose_skip_reason()}")
        pytest.skip(compose_skip_reason())
    env = dict(os.environ, KBATCH_KAFKA_IMAGE=compose_image())
    env.update(zip(PORT_VARIABLES, map(str, _free_ports(3)), strict=True))
    project = f"kbatch-test-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    base = [*command, "-f", str(COMPOSE_FILE), "-p", project]
    bootstrap = compose_bootstrap(env=env)
    try:
        subprocess.run([*base, "up", "-d"], env=env, check=True, capture_output=True,
                       timeout=300)
        deadline = time.monotonic() + 360
        while True:  # every broker in the metadata
            try:
                if asyncio.run(_brokers_seen(bootstrap)) == 3:
                    break
            except Exception:  # noqa: BLE001 - still starting
                pass
            if time.monotonic() > deadline:
                logs = subprocess.run([*base, "logs", "--tail", "20"], env=env,
                                      capture_output=True, text=True, check=False).stdout
                raise RuntimeError(f"Kafka at {bootstrap} did not show 3 brokers in 360 s:\n"
                                   f"{logs}")
            time.sleep(1)
        yield bootstrap
    finally:
        subprocess.run([*base, "down", "-v", "--remove-orphans", "-t", "5"], env=env,
                       capture_output=True, timeout=300, check=False)
