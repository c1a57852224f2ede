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

from producer_core.engine.drivers.client_pipe.run import PipeRun
from producer_core.engine.drivers.client_thread import run_in_thread
from producer_core.engine.drivers.go_clients.builds import build_source
from producer_core.engine.drivers.go_clients.driver import Driver, prepare
from producer_core.engine.drivers.run_types import Delivery, Progress, RunCall, run_driver
from producer_core.engine.modes.go_client_settings import OPTIONS, check_security, client_properties
from producer_core.engine.modes.versions import parse_label
from producer_core.results.metrics import Results
from producer_core.settings import ProducerSettings
from producer_core.workload.workload import Workload


class GoClientRun(PipeRun):
    """One run of one workload through the Go driver, for one client."""

    who = "kbatch's Go client driver"
    section = "go_client"
    request_reason = "go-client"

    def __init__(self, workload: Workload, settings: ProducerSettings, bootstrap: str,
                 driver: Driver, on_progress: Callable[[Progress], None] | None = None,
                 deliveries: list[Delivery] | None = None) -> None:
        super().__init__(workload, settings, bootstrap, driver, on_progress, deliveries,
                         driver.label or driver.client)
        self.client = driver.client
        self.client_name = driver.client
        self.properties = {**client_properties(driver.client, settings.explicit,
                                               settings.values),
                           "bootstrap.servers": bootstrap}

    def client_section(self, result: dict[str, Any]) -> dict[str, Any]:
        section = {"client": self.client, **super().client_section(result),
                   "options": {k: OPTIONS[self.client][k] for k in self.properties
                               if k in OPTIONS[self.client]}}
        build = build_source(self.client, parse_label(self.mode).version)
        if build is not None:  # your own module: the version is the directory's, not go.mod's
            section["client_version"] = (f"{build.get('module_version', 'unknown')} (build "
                                         f"{build.get('sha256', '')[:12]})")
            section["client_build"] = build
        return section

    def extra_warnings(self, result: dict[str, Any]) -> list[str]:
        if self.client == "kafka-go":
            return ["kafka-go has no idempotent producer: this run had no idempotence, so "
                    "a retry may write a message twice (--verify excuses duplicates)."]
        return []


@run_driver
async def run_async(call: RunCall) -> Results:
    """Run one workload through a Go client; the same call and Results as the engine's.

    `stop`, when set, ends the run early (as cancelling it does)."""
    check_security(call.mode, call.settings)
    label = parse_label(call.mode)
    driver = await asyncio.to_thread(prepare, label.base, None, label.version)
    runner = GoClientRun(call.workload, call.settings, call.bootstrap, driver,
                         call.on_progress, call.deliveries)
    return await run_in_thread(runner, call, abort=runner.abort)

