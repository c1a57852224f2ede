"""Mode librdkafka-broker's driver: the patched librdkafka (`librdkafka_patched`, built on
first use) run out of process exactly as any other build of librdkafka is
(`librdkafka_versions.run_out_of_process`): the same generator, settings and Results as
mode librdkafka, under this mode's property names (`modes.librdkafka_broker`).

`requests_sent` is the library's own count, ``brokers[*].req.Produce`` of its statistics,
as in mode librdkafka. librdkafka adds 1 to it when a request's buffer has been written to
the socket in full (``rd_kafka_send`` in rdkafka_broker.c of 2.12.1), whatever the request
holds: a request that carries many partitions is one request there, one frame on the wire
and one Produce for Kafka (tests/integration/test_librdkafka_broker.py checks the wire)."""

from __future__ import annotations

import asyncio
import sys

from producer_core.engine.drivers.librdkafka import check_librdkafka_message_fits
from producer_core.engine.drivers.run_types import RunCall, run_driver
from producer_core.results.metrics import Results


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@run_driver
async def run_async(call: RunCall) -> Results:
    """Run one workload through the patched librdkafka, in a child interpreter."""
    from producer_core.engine.drivers.librdkafka_patched import ensure_build
    from producer_core.engine.drivers.librdkafka_patches import patch_series
    from producer_core.engine.drivers.librdkafka_versions import run_out_of_process

    check_librdkafka_message_fits(call.workload.topic_specs(), call.settings)
    label = await asyncio.to_thread(ensure_build, _stderr)  # cached: at once
    results = await run_out_of_process(call, label)
    if results.client is not None:  # which patches the build has
        results.client.values["patches"] = [p.name for p in patch_series()]
    return results
