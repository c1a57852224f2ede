"""What a results document says besides the measurements: which broker, which kbatch,
which machine, and what a cluster kbatch started went through (image, faults).

One `RunFacts` per run, taken once its brokers have stopped (a fault is undone, and its
record closed, when the cluster stops), and given to the function that builds the
document: a document is complete when it is built, and no caller writes keys into it
afterwards. The keys and their order are the results schema's (results-v1.json).
"""

from __future__ import annotations

import os
import platform
import socket
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING, Any

from producer_core.results.run_files import files_of

if TYPE_CHECKING:
    from producer_core.results.metrics import Results


def kbatch_version() -> str:
    try:
        return metadata.version("kbatch")
    except metadata.PackageNotFoundError:
        return "unknown"


def host_facts() -> dict[str, Any]:
    """What machine ran it: enough to tell a 2-core CI runner from a workstation."""
    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
    }


@dataclass(frozen=True)
class RunFacts:
    """The run's facts that are not measurements.

    ``implementation`` (tansu, kafka, docker, external) and ``version`` come from what kbatch
    started; without them the broker is Tansu when embedded, else external. ``image`` and
    ``faults`` (the fault runner's report) only for a cluster kbatch started with them.
    """

    broker: str
    embedded: bool
    implementation: str | None = None
    version: str | None = None
    image: str | None = None
    faults: list[dict[str, Any]] | None = None

    def versions(self) -> dict[str, Any]:
        """kbatch's and the broker's versions and the host, in the schema's order."""
        return {
            "kbatch_version": kbatch_version(),
            "broker_implementation": self.implementation
            or ("tansu" if self.embedded else "external"),
            "broker_version": self.version or "unknown",
            "host": host_facts(),
        }

    def container(self) -> dict[str, Any]:
        """``broker_image`` and ``faults``, where the run had them."""
        facts: dict[str, Any] = {}
        if self.image is not None:
            facts["broker_image"] = self.image
        if self.faults is not None:
            facts["faults"] = self.faults
        return facts

    def run_fields(self) -> dict[str, Any]:
        """The keys a run document ends with."""
        return self.versions() | self.container()

    def finish(self, run: dict[str, Any]) -> dict[str, Any]:
        """A run document with these facts: the broker named where the run left it empty
        (in its place), the facts' keys at the end."""
        return {**run, "broker": run.get("broker") or self.broker} | self.run_fields()

    def grouped_fields(self, runs: list[dict[str, Any]], broker: bool = True
                       ) -> dict[str, Any]:
        """The keys a document of several runs ends with; ``broker``: whether it names the
        broker at its top (a capacity search names it in its runs only)."""
        return ({"broker": self.broker} if broker else {}) | self.versions() | {
            "started_at": runs[0].get("started_at") if runs else None} | self.container()


def run_document(results: Results, facts: RunFacts | None = None, *, stopped: bool = False,
                 files: bool = False, **extra: Any) -> dict[str, Any]:
    """One run's document: its measurements, ``extra`` (round, cell, ...), its facts and,
    for a results directory (``files``), the companion files it names at the end.

    ``stopped``: a signal ended the run, so it is not complete whatever it measured."""
    document = {**results.to_dict(), **({"complete": False} if stopped else {}), **extra}
    if facts is not None:
        document = facts.finish(document)
    return document | ({"files": files_of(results, extra)} if files else {})
