"""The child interpreter of a ``librdkafka@VERSION`` run (`librdkafka_versions`): reads the
run's arguments pickled on stdin, runs mode librdkafka's driver with the confluent-kafka
its import path finds first, and writes ("ok", Results, deliveries) or ("error", the
error) pickled on stdout."""

from __future__ import annotations

import asyncio
import pickle
import sys

from producer_core.errors import KbatchError


def main() -> int:
    workload, settings, mode, bootstrap, want_deliveries = pickle.load(sys.stdin.buffer)
    from producer_core.drivers.librdkafka import run_async
    from producer_core.modes.versions import base_mode

    deliveries: list | None = [] if want_deliveries else None
    try:
        # the mode without its version: this process is that release already
        results = asyncio.run(run_async(workload, settings, base_mode(mode), bootstrap, None,
                                        deliveries, None))
    except KbatchError as exc:
        sys.stdout.buffer.write(pickle.dumps(("error", exc)))
        return 1
    results.mode = mode  # the label names the run (librdkafka@2.12.0)
    sys.stdout.buffer.write(pickle.dumps(("ok", results, deliveries)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
