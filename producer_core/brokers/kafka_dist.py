"""Where Apache Kafka's jars come from: ``KAFKA_HOME/libs``, or a Maven-resolved cache.

kbatch pins one Kafka version (``KAFKA_VERSION``). A user with a Kafka distribution
points ``KAFKA_HOME`` (or ``--kafka-home``) at it; everyone else gets the jars resolved
once with ``mvn dependency:copy-dependencies`` from Maven Central into a per-user cache,
``$XDG_CACHE_HOME/kbatch/kafka-<version>/libs`` (``~/.cache`` without XDG), atomically
(``producer_core.downloads``, shared with the client drivers' jars).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from producer_core.downloads import cache_root, fetch_jars, find_java
from producer_core.errors import UsageError

#: The one place the Apache Kafka version kbatch runs is pinned.
KAFKA_VERSION = "4.4.0"
KAFKA_HOME_ENV = "KAFKA_HOME"
#: The broker (kafka_2.13) and, for the benchmark peer, ProducerPerformance (kafka-tools).
ARTIFACTS = ("org.apache.kafka:kafka_2.13", "org.apache.kafka:kafka-tools")
#: Kafka's own distribution logs through log4j2; the Maven artifacts bring only slf4j-api.
LOG_BINDING = "org.apache.logging.log4j:log4j-slf4j-impl:2.25.4"


class KafkaUnavailable(UsageError):
    """Neither a Kafka distribution nor the tools to fetch one (Java, Maven) are here."""


@dataclass(frozen=True)
class KafkaDist:
    """A Java runtime and the jars of one Kafka version: everything needed to run it."""

    java: str
    libs: Path
    version: str
    source: str  # "KAFKA_HOME=..." or "Maven cache ..." for messages

    @property
    def classpath(self) -> str:
        return str(self.libs / "*")


def _missing(what: str) -> KafkaUnavailable:
    return KafkaUnavailable(
        f"--broker kafka needs {what}. Install a Java runtime (17 or newer, e.g. "
        "`apt-get install openjdk-17-jre-headless`) and Maven (`apt-get install maven`): "
        f"kbatch then downloads Apache Kafka {KAFKA_VERSION}'s jars from Maven Central once, "
        f"into {cache_root() / f'kafka-{KAFKA_VERSION}'}. Or point KAFKA_HOME (or --kafka-home) "
        "at an unpacked Apache Kafka distribution (it still needs Java). Or leave --broker "
        "out to use the embedded Tansu broker, which needs neither."
    )


def resolve(kafka_home: str | Path | None = None,
            progress: Callable[[str], None] | None = None) -> KafkaDist:
    """The Kafka to run: ``kafka_home`` / ``$KAFKA_HOME``, else the Maven cache (filled once)."""
    java = find_java()
    home = kafka_home or os.environ.get(KAFKA_HOME_ENV)
    if home:
        libs = Path(home).expanduser() / "libs"
        if not any(libs.glob("kafka_2.13-*.jar")):
            raise UsageError(
                f"{home} is not an Apache Kafka distribution: {libs} holds no kafka_2.13 jar. "
                "Point --kafka-home (or KAFKA_HOME) at the directory an Apache Kafka .tgz "
                "unpacks to (it has bin/ and libs/), or unset it to let kbatch fetch Kafka "
                f"{KAFKA_VERSION} with Maven."
            )
        if java is None:
            raise _missing("a Java runtime (no `java` on PATH and no JAVA_HOME)")
        jar = next(libs.glob("kafka_2.13-*.jar")).name
        version = jar.removeprefix("kafka_2.13-").removesuffix(".jar")
        return KafkaDist(java, libs, version, f"KAFKA_HOME={home}")
    libs = cache_root() / f"kafka-{KAFKA_VERSION}" / "libs"
    if java is None:
        raise _missing("a Java runtime (no `java` on PATH and no JAVA_HOME) and no KAFKA_HOME")
    if not libs.is_dir():
        if shutil.which("mvn") is None:
            raise _missing("Maven (`mvn` is not on PATH) to download Kafka, and no KAFKA_HOME")
        fetch_jars(libs.parent, progress or _stderr,
                   [f"{a}:{KAFKA_VERSION}" for a in ARTIFACTS] + [LOG_BINDING],
                   "kafka_2.13-*.jar", f"Apache Kafka {KAFKA_VERSION} jars (about 60 MB)",
                   "or set KAFKA_HOME to a Kafka distribution")
    return KafkaDist(java, libs, KAFKA_VERSION, f"Maven cache {libs}")


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
