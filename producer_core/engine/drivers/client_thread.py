"""How a driver around another client's blocking producer runs it (librdkafka, the Java
producer): create and prime the topics first (neither client creates them), run the client in a
worker thread so the caller's event loop stays free, let `stop` end it early, and on
cancellation stop the client before the cancellation goes on. One place for what the
two drivers' `run_async` share; each keeps its own checks and client set-up."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from producer_core.engine.drivers.run_types import RunCall
from producer_core.engine.transport.priming import priming_section
from producer_core.engine.transport.transport import ensure_topics

if TYPE_CHECKING:
    from producer_core.results.metrics import Results


class ClientRun(Protocol):
    """A reference client's run: its topics, its stop event, and the blocking run."""

    stop: threading.Event

    @property
    def specs(self) -> Sequence[Any]: ...

    def run(self) -> Results: ...


async def run_in_thread(runner: ClientRun, call: RunCall, abort: Callable[[], None]
                        ) -> Results:
    """Run `runner` for `call` in a worker thread; `abort` stops the client when the
    caller cancels."""
    if call.stop is not None:
        runner.stop = call.stop
    primings = await ensure_topics(call.bootstrap, call.settings, runner.specs,
                                   getattr(call.on_progress, "on_note", None))
    try:
        results = await asyncio.to_thread(runner.run)
    except asyncio.CancelledError:
        abort()
        raise
    results.priming = priming_section(primings)
    return results
