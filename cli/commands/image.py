"""`kbatch image build`: build (or reuse) kbatch's own Apache Kafka container image."""

from __future__ import annotations

import click

from cli.app.errors import friendly_errors
from cli.render.tables import console
from producer_core.brokers.kafka_dist import KAFKA_VERSION


@click.group()
def image() -> None:
    """The container image --broker docker runs (see docs/guides/containers.md)."""


@image.command()
@click.option("--force", is_flag=True, default=False,
              help="Build again even if an image of this recipe exists.")
@friendly_errors
def build(force: bool) -> None:
    """Build kbatch's Kafka image for machines that cannot pull apache/kafka.

    A Debian root filesystem from debootstrap (this machine's apt mirror and suite, with a
    headless JRE), imported into Docker, plus the Kafka jars kbatch caches from Maven
    Central. Tagged kbatch/kafka:<version>-<recipe hash>; an existing one is reused. Prints
    the image name on stdout.
    """
    from producer_core.brokers.docker import docker_client
    from producer_core.brokers.docker_image import build_image

    docker_client()  # a clear message (exit 2) when Docker is missing or down
    name = build_image(lambda message: console.print(message, soft_wrap=True), force=force)
    click.echo(name)
    console.print(f"Kafka {KAFKA_VERSION} image ready: {name} (used by --broker docker).")
