"""Round trip of one hand-built ProduceRequest of N partitions, without kbatch's engine.

    python benchmarks/produce_rtt.py [--partitions 1000] [--records 10] [--requests 20]
                                     [--no-idempotent] [--bootstrap-servers HOST:PORT]

Separates the broker's share of a big request's round trip from kbatch's (issue 23): the
request is built once per round (one record batch of R 100-byte records per partition,
with a producer id and per-partition sequences when idempotent, as kbatch sends by
default), written on one connection, and timed from the write to the response; nothing
else runs on the event loop. Without --bootstrap-servers a fresh embedded Tansu broker is
started (and stopped) for the run; the topic has 1,000 partitions (or N if more).
The load average is printed next to the figures: on a shared machine they move with it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(ROOT))

from aiokafka.record.default_records import DefaultRecordBatchBuilder  # noqa: E402

from producer_core import EmbeddedBroker  # noqa: E402
from producer_core.engine.transport.produce_wire import ProduceRequest  # noqa: E402
from producer_core.engine.transport.transport import Cluster  # noqa: E402

VALUE = b"x" * 100
PAUSE_S = 0.5
"""Between requests, as one window of the seed scenario (500 ms)."""


async def measure(bootstrap: str, args: argparse.Namespace) -> list[float]:
    cluster = Cluster(bootstrap)
    await cluster.connect()
    topic = f"rtt-{int(time.time() * 1000)}"
    try:
        await cluster.ensure_topic(topic, max(1000, args.partitions))
        assert cluster.view is not None
        leader = cluster.view.leaders[topic][0]
        await cluster.connection(leader)
        producer_id, epoch = (await cluster.init_producer_id()) if args.idempotent else (-1, -1)
        sequences = [0] * args.partitions
        rtts = []
        for _ in range(args.requests):
            partitions = []
            for partition in range(args.partitions):
                sequence = sequences[partition] if args.idempotent else -1
                builder = DefaultRecordBatchBuilder(2, 0, 0, producer_id, epoch, sequence,
                                                    1 << 20)
                for offset in range(args.records):
                    builder.append(offset, int(time.time() * 1000), None, VALUE, [])
                sequences[partition] += args.records
                partitions.append((partition, bytes(builder.build())))
            request = ProduceRequest(None, -1, 30_000, [(topic, partitions)])
            started = time.perf_counter()
            await cluster.send(leader, request)
            rtts.append((time.perf_counter() - started) * 1000)
            await asyncio.sleep(PAUSE_S)
        return rtts
    finally:
        await cluster.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--records", type=int, default=10, help="records per partition")
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--idempotent", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--bootstrap-servers", default=None)
    args = parser.parse_args(argv)
    if args.partitions < 1 or args.records < 1 or args.requests < 1:
        parser.error("--partitions, --records and --requests must be >= 1")
    load_before = os.getloadavg()[0]
    if args.bootstrap_servers:
        rtts = asyncio.run(measure(args.bootstrap_servers, args))
    else:
        with EmbeddedBroker() as broker:
            rtts = asyncio.run(measure(broker.bootstrap, args))
    print(f"{args.partitions} partitions x {args.records} records, "
          f"{'idempotent' if args.idempotent else 'not idempotent'}, acks=all, "
          f"{len(rtts)} requests: round trip median {statistics.median(rtts):.1f} ms, "
          f"min {min(rtts):.1f}, max {max(rtts):.1f} "
          f"(load average {load_before:.2f} -> {os.getloadavg()[0]:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
