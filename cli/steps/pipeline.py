"""One way a command's runs are set up: the broker target, the runner, the stop-on-signal
handling and the run callable (broker cost measured, each run recorded), so that
produce, compare-modes and capacity differ only in the workloads they run and what
they print. The documents are built after the `with` block, from `RunSetup.facts()`:
a cluster's faults are closed only when it stops."""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from rich.markup import escape

from cli.app.stopping import StopOnSignal, accepts_stop
from cli.options.consume import consuming
from cli.options.spark import Runner
from cli.render.container_facts import aim_faults
from cli.render.install_progress import InstallProgress
from cli.render.tables import console
from producer_core.brokers import BrokerTarget
from producer_core.engine.modes import install_clients as modes_install
from producer_core.measure.per_run import run_targets
from producer_core.measure.verify_read import VerifyingRun
from producer_core.results.results_io import RunRecorder
from producer_core.results.run_facts import RunFacts


@dataclass
class RunSetup:
    """What a command's body runs with while its brokers and runner are up."""

    target: BrokerTarget
    run: RunRecorder
    """The run callable: on its broker, its cost measured, its Results kept in order."""
    stop: dict[str, Any]
    """``{"stop": event}`` for a run that can stop early on a signal, else empty."""
    stopper: StopOnSignal

    @property
    def stopped(self) -> bool:
        """Whether a signal ended the runs (their documents are not complete)."""
        return self.stopper.signum is not None

    def facts(self) -> RunFacts:
        """The facts the results documents carry; call once the `with` block has ended."""
        return self.target.facts()


def engine_call(engine_run: Any, verify: bool, stopper: StopOnSignal,
                consume: Any = None, graceful: bool = True) -> tuple[Any, dict]:
    """The run callable (reading back with --verify, or with --consume's consumers, whose
    read-back then is the verify) and its keyword arguments (``graceful``: see
    `run_pipeline`)."""
    stopper.stoppable = graceful and accepts_stop(engine_run)
    if consume is not None:
        run = consuming(engine_run, consume, verify, lambda text: console.print(
            f"[yellow]{escape(text)}[/yellow]", soft_wrap=True))
    else:
        run = VerifyingRun(engine_run) if verify else engine_run
    return run, ({"stop": stopper.event} if stopper.stoppable else {})


def install_clients(modes: Sequence[str]) -> None:
    """Fetch and build the clients the modes name (``kafka-java@3.9.1``: that release,
    once per user), with a progress line on first use, before any broker starts: a
    version its registry does not have is a usage error (exit 2) with nothing started."""
    with InstallProgress() as progress:  # step lines and spinners, a bar while downloading
        modes_install(modes, progress)


def announce_start(target: BrokerTarget) -> None:
    """Say how long starting the broker took (it is most of a short run's wall time)."""
    if target.started_in_s is not None:
        console.print(f"Started {target.description} in {target.started_in_s:.1f} s.")


@contextmanager
def run_pipeline(runner: Runner, stopper: StopOnSignal, bootstrap: str | None,
                 shape: dict[str, Any], endpoints: Any = (), *, shared: bool = False,
                 workload: Any = None, verify: bool = False, consume: Any = None,
                 announce: bool = True, graceful: bool = True,
                 own_brokers: str | None = None) -> Iterator[RunSetup]:
    """Start the target (``shared``: one broker for every run, else Tansu afresh per run,
    see `run_targets`) and the runner; stop both, always, on leaving.

    ``workload``: the run's workload, aimed at by ``--fault``; ``verify`` and ``consume``:
    what reads the topic back. Warnings are silenced while it runs (the results list them).

    ``graceful``: a first signal stops the run in progress and keeps what it did (its
    results say ``complete: false``); False: a signal interrupts at once (exit 128 +
    signal), for a sweep, whose finished cells are on disk and whose cell in progress runs
    again on ``--resume``. ``own_brokers``: each run starts its own brokers where it runs
    (a sweep's Spark tasks without --bootstrap-servers), described so; none starts here.

    While the brokers start nothing has run yet: a signal then interrupts at once (starting
    Apache Kafka takes seconds; it used to be honoured only once Kafka was up)."""
    stopper.stoppable = False
    with elsewhere(own_brokers) if own_brokers is not None else \
            run_targets(bootstrap, shape, endpoints, shared) as (target, on_its_broker), \
            runner.open() as engine_run, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if announce:
            announce_start(target)
        if workload is not None:
            aim_faults(target, workload)
        run, stop = engine_call(engine_run, verify, stopper, consume, graceful)
        yield RunSetup(target, RunRecorder(on_its_broker(run)), stop, stopper)


@contextmanager
def elsewhere(description: str) -> Iterator[tuple[BrokerTarget, Any]]:
    """The target of runs that start their own brokers: nothing to start or measure here."""
    yield BrokerTarget("", description, embedded=True), lambda run: run
