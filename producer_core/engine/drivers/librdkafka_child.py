"""The child interpreter of a ``librdkafka@VERSION`` run (`librdkafka_versions`): reads the
run's arguments pickled on stdin, runs mode librdkafka's driver with the confluent-kafka
its import path finds first, and writes ("ok", Results, deliveries) or ("error", the
error) pickled on stdout. A line on stdin after the arguments (or stdin's end) stops the
run early, with partial results, as a stop event does an in-process run; SIGINT is the
parent's to handle (a terminal's Ctrl-C reaches this process too)."""

from __future__ import annotations

import asyncio
import pickle
import signal
import sys
import threading

from producer_core.errors import KbatchError


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides; it tells us on stdin
    workload, settings, mode, bootstrap, want_deliveries = pickle.load(sys.stdin.buffer)
    from producer_core.engine.drivers.librdkafka import run_async
    from producer_core.engine.modes.versions import base_mode

    stop = threading.Event()
    threading.Thread(target=_stop_on_input, args=(stop,), daemon=True).start()
    deliveries: list | None = [] if want_deliveries else None
    try:
        # the mode without its version: this process is that release already
        results = asyncio.run(run_async(workload, settings, base_mode(mode), bootstrap, None,
                                        deliveries, stop))
    except KbatchError as exc:
        sys.stdout.buffer.write(pickle.dumps(("error", exc)))
        return 1
    results.mode = mode  # the label names the run (librdkafka@2.12.0)
    sys.stdout.buffer.write(pickle.dumps(("ok", results, deliveries)))
    return 0


def _stop_on_input(stop: threading.Event) -> None:
    """A line on stdin after the arguments, or its end (the parent gone), stops the run."""
    sys.stdin.buffer.readline()
    stop.set()


if __name__ == "__main__":
    sys.exit(main())
