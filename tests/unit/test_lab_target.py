"""A run with --bootstrap-servers of a lab kbatch started is measured from the lab's
state file (issue 47): its node pids and Kafka's metrics endpoints."""

from __future__ import annotations

import os

import pytest

from producer_core.brokers import lab_target
from producer_core.brokers.lab.state import STATE_ENV_VAR, identity, write_state


@pytest.fixture
def kafka_lab(tmp_path, monkeypatch):
    """A state file of a running two-node Kafka lab whose processes are this one."""
    monkeypatch.setenv(STATE_ENV_VAR, str(tmp_path / "lab" / "lab.json"))
    me = identity(os.getpid())
    document = {
        "pid": os.getpid(), "pid_start": me["start"], "broker": "kafka", "brokers": 2,
        "bootstrap": "127.0.0.1:9001,127.0.0.1:9002", "rtt_ms": 0, "jitter_ms": 0,
        "nodes": [{"node_id": 1, "host": "127.0.0.1", "port": 9001, "state": "running", **me},
                  {"node_id": 2, "host": "127.0.0.1", "port": 9002, "state": "down"}],
        "metrics_urls": {"1": "http://127.0.0.1:7001/metrics",
                         "2": "http://example.invalid:7002/metrics"},
        "version": "4.4.0",
    }
    write_state(document)
    monkeypatch.setattr(lab_target, "lab_process_alive", lambda doc: True)
    monkeypatch.setattr(lab_target, "process_alive", lambda pid, marker=None: True)
    return document


def test_the_labs_bootstrap_is_recognised_and_measured(kafka_lab) -> None:
    document = lab_target.running_lab("127.0.0.1:9002")
    assert document is not None
    target = lab_target.lab_target("127.0.0.1:9002", document)
    assert target.implementation == "kafka" and target.version == "4.4.0"
    processes = target.processes()
    assert processes.pids == {"1": os.getpid()}  # the node that is down is not measured
    # only loopback endpoints are taken from the state file
    assert processes.metrics_urls == {"1": "http://127.0.0.1:7001/metrics"}


def test_another_cluster_is_not_the_lab(kafka_lab) -> None:
    assert lab_target.running_lab("127.0.0.1:9001,10.0.0.5:9092") is None
    assert lab_target.running_lab("broker:9092") is None


def test_no_state_file_means_an_external_cluster(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(STATE_ENV_VAR, str(tmp_path / "none" / "lab.json"))
    assert lab_target.running_lab("127.0.0.1:9001") is None
