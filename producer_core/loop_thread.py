"""An asyncio event loop on a daemon thread, for servers that sync code starts and stops
(the lab's facade, the tests' counting proxy)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """Runs `setup()` on a fresh loop in a daemon thread, then keeps the loop running."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self.thread is not None

    def start(self, setup: Callable[[], Coroutine[Any, Any, T]], timeout_s: float,
              timeout_error: Exception) -> T:
        """Run `setup` on the new loop and return its result once it is done.

        Its exception is raised here (the thread is then gone); `timeout_error` is raised if
        it does not finish within `timeout_s`.
        """
        loop = asyncio.new_event_loop()
        ready = threading.Event()
        outcome: list[Any] = []

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                outcome.append(loop.run_until_complete(setup()))
            except BaseException as exc:  # handed to start()'s caller
                outcome.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.close()

        self.loop = loop
        self.thread = threading.Thread(target=run, name=self.name, daemon=True)
        self.thread.start()
        if not ready.wait(timeout_s):
            self.stop(lambda: asyncio.sleep(0), timeout_s)
            raise timeout_error
        result = outcome[0]
        if isinstance(result, BaseException):
            self.thread.join(timeout_s)
            self.thread = self.loop = None
            raise result
        return result

    def stop(self, shutdown: Callable[[], Coroutine[Any, Any, Any]], timeout_s: float) -> None:
        """Run `shutdown()` on the loop, stop it and join the thread; idempotent."""
        loop, thread = self.loop, self.thread
        if loop is None or thread is None:
            return
        self.loop = self.thread = None
        if not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                future = asyncio.run_coroutine_threadsafe(shutdown(), loop)
                with contextlib.suppress(Exception):
                    future.result(timeout_s)
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(loop.stop)
        if thread is not threading.current_thread():
            thread.join(timeout_s)
