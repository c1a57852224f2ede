"""Child processes that never outlive kbatch: brokers, relays and facades.

PR_SET_PDEATHSIG makes the kernel SIGKILL a child when the thread that forked it dies,
which covers a parent that is SIGKILLed or crashes (no Python code runs then). Shared by
the embedded Tansu broker, Apache Kafka nodes and the lab's child processes.
"""

from __future__ import annotations

import ctypes
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

PopenT = TypeVar("PopenT", bound="subprocess.Popen[Any]")
"""What a spawn function returns: a child process, of bytes or of text."""

PR_SET_PDEATHSIG = 1


def pdeathsig_preexec(parent_pid: int) -> Callable[[], None] | None:
    """preexec_fn that makes the kernel SIGKILL the broker when our process dies."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        # The parent may have died between fork() and prctl(): then no signal comes.
        if os.getppid() != parent_pid:
            os._exit(1)

    return preexec


class Spawner:
    """Forks children from one thread that lives as long as the process.

    PR_SET_PDEATHSIG fires when the *thread* that forked the child exits, not the
    process. A broker started from a short-lived thread (``asyncio.to_thread``, an
    executor) would be SIGKILLed when that thread finishes, so off the main thread
    we hand the fork to this daemon thread.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], queue.SimpleQueue[Any]]] = (
            queue.SimpleQueue()
        )
        self._thread: threading.Thread | None = None

    def run(self, fn: Callable[[], PopenT]) -> PopenT:
        if threading.current_thread() is threading.main_thread():
            return fn()
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._loop, name="kbatch-broker-spawner", daemon=True
                )
                self._thread.start()
        reply: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._jobs.put((fn, reply))
        ok, value = reply.get()
        if ok:
            return value
        raise value

    def _loop(self) -> None:
        while True:
            fn, reply = self._jobs.get()
            try:
                reply.put((True, fn()))
            except BaseException as exc:  # handed back to the caller's thread
                reply.put((False, exc))


SPAWNER = Spawner()
