"""The Prometheus JMX exporter javaagent on the Kafka nodes kbatch starts.

Why the exporter and not JMX read by a helper of our own: it is Prometheus's own,
maintained bridge from Kafka's MBeans to a text endpoint, so kbatch reads the Kafka it
starts exactly as it reads a user's cluster (``--broker-metrics``, the exporter's
standard names): one parser, one extraction. It runs inside the broker's JVM (no second
JVM per scrape, no JMX/RMI port), answers on a loopback port, and with
``includeObjectNames`` limited to the few MBeans kbatch reads a scrape costs the broker
little. The jar is pinned and fetched once from Maven Central into kbatch's cache, as the
Kafka jars are (``producer_core.downloads``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from producer_core.downloads import cache_root, fetch_jars
from producer_core.errors import BrokerError, UsageError

#: The one place the exporter's version is pinned.
JMX_EXPORTER_VERSION = "1.0.1"
ARTIFACT = f"io.prometheus.jmx:jmx_prometheus_javaagent:{JMX_EXPORTER_VERSION}"
JAR_GLOB = "jmx_prometheus_javaagent-*.jar"
RULES = Path(__file__).with_name("kafka_jmx_exporter.yaml")


def exporter_dir() -> Path:
    return cache_root() / f"jmx-exporter-{JMX_EXPORTER_VERSION}"


def exporter_jar(progress: Callable[[str], None]) -> Path:
    """The javaagent jar, fetched with Maven on first use (BrokerError/UsageError if not)."""
    libs = exporter_dir() / "libs"
    found = sorted(libs.glob(JAR_GLOB)) if libs.is_dir() else []
    if not found:
        fetch_jars(exporter_dir(), progress, deps=[ARTIFACT], marker=JAR_GLOB,
                   label=f"Prometheus JMX exporter {JMX_EXPORTER_VERSION} (about 1 MB)")
        found = sorted(libs.glob(JAR_GLOB))
    return found[0]


def exporter_or_warning(progress: Callable[[str], None]) -> tuple[Path | None, str | None]:
    """The jar, or None and why: a failure to fetch it only loses the broker's own metrics
    (the run says so), never the run. Shared by the JVM nodes and the containers."""
    try:
        return exporter_jar(progress), None
    except (BrokerError, UsageError) as exc:
        return None, f"Kafka's own metrics are not measured: {exc}"


def javaagent_flag(jar: Path, host: str, port: int, rules: Path = RULES) -> str:
    """``-javaagent:<jar>=<host>:<port>:<rules>``: serve /metrics on host:port only."""
    return f"-javaagent:{jar}={host}:{port}:{rules}"
