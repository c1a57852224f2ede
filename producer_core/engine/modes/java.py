"""Mode java: the Java producer's batching (a broker is ready when any of its partitions
is, and then sends all of them) with Java's BufferPool accounting of buffer.memory."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from producer_core.engine.modes.spec import ModeSpec
from producer_core.errors import ConfigError

if TYPE_CHECKING:
    from producer_core.engine.core.linger.base import QueueView, RequestLimits
    from producer_core.engine.core.linger.java_policy import JavaLinger
    from producer_core.settings import ProducerSettings
    from producer_core.workload.workload import TopicSpec


def check_java(explicit: set[str], values: Mapping[str, Any], warnings: list[str]) -> None:
    """Mode java: every batch holds batch.size of buffer.memory (Java's BufferPool)."""
    if values["batch.size"] > values["buffer.memory"]:
        raise ConfigError(
            f"batch.size={values['batch.size']} is larger than "
            f"buffer.memory={values['buffer.memory']}: in mode java every batch holds "
            "batch.size bytes of buffer.memory, so no batch could ever be allocated. Lower "
            "batch.size or raise buffer.memory."
        )


def java_policy(accumulator: QueueView, leaders: list[int], limits: RequestLimits,
                settings: ProducerSettings, topics: Sequence[TopicSpec]) -> JavaLinger:
    from producer_core.engine.core.linger.java_policy import JavaLinger
    return JavaLinger(accumulator, leaders, limits, settings.linger_s)


JAVA = ModeSpec(
    "java", "the Java producer, a broker is ready when any of its partitions is and then "
    "sends all of them", policy=java_policy, reads=("linger.ms",), check=check_java,
    buffer_pool=True)
