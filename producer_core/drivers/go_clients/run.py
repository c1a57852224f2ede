"""Modes franz-go, sarama and kafka-go: a Go client on kbatch's workload, measured as kbatch
does, through the shared pipe run (`client_pipe.run.PipeRun`).

The driver counts Produce requests on the wire (every connection the client dials is
wrapped and each Produce request it writes is parsed for partitions, records and bytes),
so requests_sent is what the broker received; franz-go's own OnBrokerWrite hook count is
kept beside it (``go_client.producer_metrics.hook_produce_requests``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from producer_core.config import ProducerSettings
from producer_core.drivers.client_pipe.run import PipeRun
from producer_core.drivers.client_thread import run_in_thread
from producer_core.drivers.go_clients.driver import Driver, prepare
from producer_core.drivers.run_types import Delivery, Progress, RunCall, run_driver
from producer_core.modes.go_client_settings import OPTIONS, check_security, client_properties
from producer_core.results.metrics import Results
from producer_core.workload.workload import Workload


class GoClientRun(PipeRun):
    """One run of one workload through the Go driver, for one client."""

    who = "kbatch's Go client driver"
    section = "go_client"
    request_reason = "go-client"

    def __init__(self, workload: Workload, settings: ProducerSettings, bootstrap: str,
                 driver: Driver, on_progress: Callable[[Progress], None] | None = None,
                 deliveries: list[Delivery] | None = None) -> None:
        super().__init__(workload, settings, bootstrap, driver,  # type: ignore[arg-type]
                         on_progress, deliveries)
        self.mode = driver.client
        self.properties = {**client_properties(driver.client, settings.explicit,
                                               settings.values),
                           "bootstrap.servers": bootstrap}

    def client_section(self, result: dict[str, Any]) -> dict[str, Any]:
        return {"client": self.mode, **super().client_section(result),
                "options": {k: OPTIONS[self.mode][k] for k in self.properties
                            if k in OPTIONS[self.mode]}}

    def extra_warnings(self, result: dict[str, Any]) -> list[str]:
        if self.mode == "kafka-go":
            return ["kafka-go has no idempotent producer: this run had no idempotence, so "
                    "a retry may write a message twice (--verify excuses duplicates)."]
        return []


@run_driver
async def run_async(call: RunCall) -> Results:
    """Run one workload through a Go client; the same call and Results as the engine's.

    `stop`, when set, ends the run early (as cancelling it does)."""
    check_security(call.mode, call.settings)
    driver = await asyncio.to_thread(prepare, call.mode)
    runner = GoClientRun(call.workload, call.settings, call.bootstrap, driver,
                         call.on_progress, call.deliveries)
    return await run_in_thread(runner, call, abort=runner.abort)

