"""cli.steps.pipeline's choices that sweep and perf-test rely on, without a broker: a
graceful stop or an interrupt at once, and runs that start their own brokers."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import pytest

from cli.app.stopping import StopOnSignal
from cli.steps.pipeline import run_pipeline
from producer_core.errors import Interrupted

EXTERNAL = "127.0.0.1:1"  # named, never connected to: the fake run does not


class FakeRunner:
    """A Runner whose engine run records its calls and takes a stop event."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    @contextmanager
    def open(self) -> Iterator[Any]:
        def run(workload: Any, settings: Any, mode: str, bootstrap: str, progress: Any = None,
                stop: threading.Event | None = None) -> SimpleNamespace:
            self.calls.append((workload, mode, bootstrap, stop))
            return SimpleNamespace(mode=mode)

        yield run


def test_a_graceful_pipeline_hands_the_run_a_stop_event_and_a_signal_only_sets_it():
    runner = FakeRunner()
    with StopOnSignal() as stopper, \
            run_pipeline(runner, stopper, EXTERNAL, {}, shared=True, announce=False) as setup:
        assert stopper.stoppable and setup.stop == {"stop": stopper.event}
        os.kill(os.getpid(), signal.SIGINT)
        assert stopper.event.wait(5) and setup.stopped
        setup.run("w", "s", "partition", setup.target.bootstrap, None, **setup.stop)
    assert runner.calls == [("w", "partition", EXTERNAL, stopper.event)]
    assert setup.facts().broker == f"external cluster {EXTERNAL}"


def test_an_interrupting_pipeline_gives_no_stop_event_and_a_signal_raises_at_once():
    runner = FakeRunner()
    with pytest.raises(Interrupted) as raised, StopOnSignal() as stopper, \
            run_pipeline(runner, stopper, EXTERNAL, {}, announce=False,
                         graceful=False) as setup:
        assert not stopper.stoppable and setup.stop == {}
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):  # the handler runs between bytecodes of this thread
            pass
        pytest.fail("the signal did not interrupt")
    assert raised.value.signum == signal.SIGTERM and stopper.exit_code == 143


def test_runs_that_start_their_own_brokers_get_no_broker_here_and_are_not_wrapped():
    runner = FakeRunner()
    with StopOnSignal() as stopper, \
            run_pipeline(runner, stopper, None, {"broker": "kafka"}, announce=False,
                         own_brokers="its own embedded broker per cell") as setup:
        assert setup.target.bootstrap == ""
        assert setup.target.processes is None  # nothing started, nothing to measure
        results = setup.run("w", "s", "broker", "", None)
    assert results.mode == "broker" and results.started_at  # recorded, unwrapped
    assert setup.run.results == [results] and runner.calls == [("w", "broker", "", None)]
    assert setup.facts().broker == "its own embedded broker per cell"
