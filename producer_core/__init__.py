"""kbatch's producer engine as a library: run a workload in a mode against a cluster and
read what it measured (docs/reference/api.md).

    from producer_core import Workload, build_settings, run

    results = run(Workload(topic="demo", rate=500, duration_s=None, messages=300),
                  build_settings({"linger.ms": 5}, mode="partition"), "partition",
                  "127.0.0.1:9092")

The names below are the public API; everything else under `producer_core` is internal
and may change between versions. They load on first use (PEP 562), so importing this
package costs nothing: `kbatch --help` imports it and must stay light
(tests/cli/test_startup_imports.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the lazy table below loads, for type checkers and editors
    from producer_core.analysis.compare import ModeRun, compare, parse_mode_configs, summary_rows
    from producer_core.brokers.embedded import EmbeddedBroker
    from producer_core.config import SETTINGS, build_settings
    from producer_core.engine.drivers.engine import Delivery, Progress, run, run_async
    from producer_core.engine.modes import MODES
    from producer_core.errors import BrokerError, ConfigError, KbatchError, UsageError
    from producer_core.results.metrics import Results
    from producer_core.settings import ProducerSettings
    from producer_core.workload.payload import PayloadSpec
    from producer_core.workload.workload import KeySpec, RateSpec, SizeSpec, TopicSpec, Workload
    from producer_core.workload.workload_file import load_workload, parse_workload

API: dict[str, str] = {
    # run one workload in one mode against a cluster (blocking, or on your event loop)
    "run": "producer_core.engine.drivers.engine",
    "run_async": "producer_core.engine.drivers.engine",
    "Progress": "producer_core.engine.drivers.engine",
    "Delivery": "producer_core.engine.drivers.engine",
    # the workload
    "Workload": "producer_core.workload.workload",
    "TopicSpec": "producer_core.workload.workload",
    "RateSpec": "producer_core.workload.workload",
    "KeySpec": "producer_core.workload.workload",
    "SizeSpec": "producer_core.workload.workload",
    "PayloadSpec": "producer_core.workload.payload",
    "load_workload": "producer_core.workload.workload_file",
    "parse_workload": "producer_core.workload.workload_file",
    # the producer settings and the modes
    "ProducerSettings": "producer_core.settings",
    "build_settings": "producer_core.config",
    "SETTINGS": "producer_core.config",
    "MODES": "producer_core.engine.modes",
    # what a run measured, and several modes side by side
    "Results": "producer_core.results.metrics",
    "compare": "producer_core.analysis.compare",
    "ModeRun": "producer_core.analysis.compare",
    "parse_mode_configs": "producer_core.analysis.compare",
    "summary_rows": "producer_core.analysis.compare",
    # a cluster to run against without installing Kafka
    "EmbeddedBroker": "producer_core.brokers.embedded",
    # the errors it raises on purpose
    "KbatchError": "producer_core.errors",
    "UsageError": "producer_core.errors",
    "ConfigError": "producer_core.errors",
    "BrokerError": "producer_core.errors",
}
"""Public name -> the module that provides it (tests/unit/test_public_api.py checks both)."""

__all__ = [
    "API",
    "MODES",
    "SETTINGS",
    "BrokerError",
    "ConfigError",
    "Delivery",
    "EmbeddedBroker",
    "KbatchError",
    "KeySpec",
    "ModeRun",
    "PayloadSpec",
    "ProducerSettings",
    "Progress",
    "RateSpec",
    "Results",
    "SizeSpec",
    "TopicSpec",
    "UsageError",
    "Workload",
    "build_settings",
    "compare",
    "load_workload",
    "parse_mode_configs",
    "parse_workload",
    "run",
    "run_async",
    "summary_rows",
]


def __getattr__(name: str) -> Any:
    """Load a public name on first use. Any other name raises AttributeError, which is
    also what lets `from producer_core import errors` fall back to the submodule."""
    module = API.get(name)
    if module is None:
        raise AttributeError(f"module 'producer_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next lookup skips this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
