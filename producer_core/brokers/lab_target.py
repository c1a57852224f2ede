"""A run against a lab kbatch started is measured like one against brokers it starts.

`kbatch lab up --broker kafka`, then `kbatch produce --bootstrap-servers` of that lab, was
an "external cluster": the brokers' CPU not measured, Kafka's own metrics not read (issue
47). The lab's state file (`lab.state`) names its node processes and, for Kafka, their
metrics endpoints, so such a run is measured from them, re-read at every sample (a node
`kbatch lab restart` brought back has a new pid). Only a lab whose `lab up` still runs and
whose addresses include every bootstrap server given counts.
"""

from __future__ import annotations

from typing import Any

from producer_core.brokers import BrokerProcesses, BrokerTarget
from producer_core.brokers.lab.state import (
    LabStateError,
    backend_marker,
    lab_process_alive,
    node_records,
    process_alive,
    read_state,
)

LOOPBACK_URLS = ("http://127.", "http://localhost:", "http://[::1]:")
"""Metrics endpoints taken from the state file: the lab's own, on this machine only."""


def _servers(text: str) -> set[str]:
    return {part.strip() for part in text.split(",") if part.strip()}


def _addresses(document: dict[str, Any]) -> set[str]:
    """Every client address the lab answers on: its bootstrap(s) and its nodes'."""
    found = _servers(str(document.get("bootstrap", "")))
    found |= _servers(str(document.get("plaintext_bootstrap", "")))
    found |= {f"{n.get('host')}:{n.get('port')}" for n in node_records(document)}
    return found


def running_lab(bootstrap: str) -> dict[str, Any] | None:
    """The running lab's state document if `bootstrap` names only its addresses."""
    try:
        document = read_state()
    except (LabStateError, OSError, ValueError):
        return None
    if document is None or not lab_process_alive(document):
        return None
    wanted = _servers(bootstrap)
    return document if wanted and wanted <= _addresses(document) else None


def lab_processes() -> BrokerProcesses:
    """The lab's node processes and metrics endpoints as its state file says now."""
    try:
        document = read_state()
    except (LabStateError, OSError, ValueError):
        document = None
    if document is None:
        return BrokerProcesses(warning="the lab's state file is gone (the lab stopped)")
    marker = backend_marker(document)
    nodes = node_records(document)
    if nodes:
        pids = {str(n["node_id"]): int(n["pid"]) for n in nodes
                if n.get("state", "running") == "running" and isinstance(n.get("pid"), int)
                and process_alive(n["pid"], marker)}
    else:  # a Tansu lab records its backends only
        pids = {str(i): p for i, p in enumerate(document.get("backend_pids", []), start=1)
                if isinstance(p, int) and process_alive(p, marker)}
    urls = {str(k): str(v) for k, v in (document.get("metrics_urls") or {}).items()
            if str(v).startswith(LOOPBACK_URLS)}
    return BrokerProcesses(pids, urls)


def lab_target(bootstrap: str, document: dict[str, Any]) -> BrokerTarget:
    """The target of a run against the running lab described by `document`."""
    implementation = str(document.get("broker", "tansu"))
    if implementation not in ("tansu", "kafka"):
        implementation = "external"
    return BrokerTarget(
        bootstrap, f"the kbatch lab at {bootstrap} ({document.get('brokers', '?')} "
        f"{implementation} node(s), `kbatch lab up` pid {document.get('pid')})",
        embedded=False, implementation=implementation,
        version=document.get("version"), processes=lab_processes)
