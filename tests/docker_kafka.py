"""Real Apache Kafka for the integration suite: the top-level docker-compose.yml (3 brokers,
KRaft), started with testcontainers when ``KBATCH_TEST_BROKER=docker``.

Without that variable, or without testcontainers or a reachable Docker engine, tests that
ask for the ``docker_kafka`` fixture are skipped and the reason says which was missing.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COMPOSE_FILE = ROOT / "docker-compose.yml"
ENV_VAR = "KBATCH_TEST_BROKER"


def compose_bootstrap(path: Path = COMPOSE_FILE) -> str:
    """``host:port,...`` of the EXTERNAL listener every service of the compose file advertises."""
    import yaml

    services = yaml.safe_load(path.read_text())["services"]
    addresses = []
    for service in services.values():
        for listener in service["environment"]["KAFKA_ADVERTISED_LISTENERS"].split(","):
            name, _, address = listener.partition("://")
            if name == "EXTERNAL":
                addresses.append(address)
    return ",".join(addresses)


def docker_skip_reason() -> str | None:
    """Why real Kafka cannot run here, or None when it can."""
    if os.environ.get(ENV_VAR) != "docker":
        return (f"real Apache Kafka runs only with {ENV_VAR}=docker and a Docker engine "
                "(the default broker is the embedded Tansu)")
    try:
        import docker
        from testcontainers.compose import DockerCompose  # noqa: F401
    except ImportError:
        return (f"{ENV_VAR}=docker, but testcontainers is not installed "
                "(pip install -e '.[test,docker]')")
    try:
        docker.from_env().ping()
    except Exception as exc:  # noqa: BLE001 - any failure means: no usable engine
        return f"{ENV_VAR}=docker, but no Docker engine is reachable ({exc})"
    return None


async def _brokers_seen(bootstrap: str) -> int:
    from producer_core.transport import Cluster

    cluster = Cluster(bootstrap)
    try:
        return len((await cluster.connect()).brokers)
    finally:
        await cluster.close()


@pytest.fixture(scope="session")
def docker_kafka() -> Iterator[str]:
    """Bootstrap servers of a fresh 3-broker Apache Kafka cluster (torn down afterwards)."""
    reason = docker_skip_reason()
    if reason is not None:
        pytest.skip(reason)
    from testcontainers.compose import DockerCompose

    bootstrap = compose_bootstrap()
    with DockerCompose(ROOT, compose_file_name=COMPOSE_FILE.name, wait=True):
        deadline = time.monotonic() + 120
        while True:  # healthy containers; wait until every broker is in the metadata too
            try:
                if asyncio.run(_brokers_seen(bootstrap)) == 3:
                    break
            except Exception:  # noqa: BLE001 - still starting
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kafka at {bootstrap} did not show 3 brokers in 120 s")
            time.sleep(1)
        yield bootstrap
