"""Whether containers can run here, and what a test does when they cannot.

Container tests run in the normal pytest run whenever a Docker engine answers. Without
one they are skipped, saying why, except under CI (``CI=true``), where .ci/run installs and
starts Docker: there a missing engine is a failure, so the container route cannot go
untested unnoticed.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest


def docker_unavailable_reason() -> str | None:
    """Why containers cannot run here, or None when they can."""
    try:
        from producer_core.brokers.docker import docker_client

        docker_client().close()
    except Exception as exc:  # noqa: BLE001 - DockerUnavailable says what is missing
        return str(exc)
    return None


def require_docker() -> None:
    """Skip (or, under CI, fail) the calling test when no Docker engine answers."""
    reason = docker_unavailable_reason()
    if reason is None:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true but the container tests cannot run: {reason}")
    pytest.skip(reason)


def compose_command() -> list[str] | None:
    """The Compose tool: the ``docker compose`` plugin, else Debian's ``docker-compose``."""
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True,
                               check=False, timeout=30)
        if probe.returncode == 0:
            return ["docker", "compose"]
    tool = shutil.which("docker-compose")
    return [tool] if tool else None
