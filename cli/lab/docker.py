"""`kbatch lab up --broker docker`: Apache Kafka in containers until `lab down` or Ctrl-C."""

from __future__ import annotations

import os
import time

import click

from cli.render.tables import console
from producer_core.brokers.lab.state import identity, write_state
from producer_core.errors import BrokerError, UsageError


def serve_docker_lab(brokers: int, rtt_ms: float, jitter_ms: float, kafka_image: str | None,
                     base_port: int | None) -> None:
    """Start 1 or 3 Kafka containers, print the bootstrap servers, serve until stopped.

    A `kbatch lab down` (SIGTERM) or Ctrl-C unwinds the ``with``, which removes the
    containers and the network; a lab that was SIGKILLed leaves them to the next start's
    sweep by label."""
    from producer_core.brokers.docker_target import docker_target

    if rtt_ms or jitter_ms or base_port is not None:
        raise UsageError("--rtt-ms, --jitter-ms and --base-port shape the Tansu lab and "
                         "--broker kafka; --broker docker publishes free ports on 127.0.0.1 "
                         "and adds no delay.")
    with docker_target(brokers, kafka_image) as (cluster, _faults):
        write_state({
            "pid": os.getpid(), "pid_start": identity(os.getpid())["start"],
            "bootstrap": cluster.bootstrap, "brokers": brokers,
            "broker": "docker", "image": cluster.image.name if cluster.image else None,
            "rtt_ms": 0.0, "jitter_ms": 0.0,
            "nodes": [{"node_id": i, "host": cluster.host, "port": cluster.port(i),
                       "container": cluster.container_name(i)} for i in cluster.node_ids],
            "backend_pids": [], "started_at": time.time(),
            "metrics_urls": {str(i): u for i, u in cluster.metrics_urls.items()},
        })
        click.echo(cluster.bootstrap)
        for node_id in cluster.node_ids:
            console.print(f"node {node_id}: {cluster.host}:{cluster.port(node_id)}  "
                          f"(container {cluster.container_name(node_id)})")
        console.print(f"Running {cluster.description}, started in "
                      f"{cluster.start_time_s or 0:.1f} s.\nStop it with `kbatch lab down` "
                      "or Ctrl-C.")
        while cluster.all_running():
            time.sleep(1.0)
        raise BrokerError("A Kafka container stopped unexpectedly, so the lab was stopped.")
