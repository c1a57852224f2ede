"""The Java side of mode `kafka-java`: a JDK, the client's jars, the compiled driver.

The jars (``kafka-clients`` at kbatch's pinned Kafka version, HdrHistogram, and slf4j-nop
so the client's logging stays quiet) are resolved once with Maven into the per-user cache,
the same route as the broker's (`brokers.kafka_dist`), under ``kafka-clients-<version>``.
The driver (``java/KbatchProducerDriver.java``, package data) is compiled with ``javac``
on first use into ``kafka-java-driver/<hash>``, the hash covering its source and the jar
names, so an edited driver or another client version is compiled afresh; the compiled
classes are renamed into place only when ``javac`` succeeded.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from producer_core.brokers.kafka_dist import (
    KAFKA_CLIENTS_VERSION,
    cache_root,
    fetch_jars,
    find_java,
)
from producer_core.errors import BrokerError, UsageError

MAIN_CLASS = "KbatchProducerDriver"
CLIENT_DEPS = [
    f"org.apache.kafka:kafka-clients:{KAFKA_CLIENTS_VERSION}",
    "org.hdrhistogram:HdrHistogram:2.2.2",
    "org.slf4j:slf4j-nop:1.7.36",
]
JAVAC_TIMEOUT_S = 300


class JavaUnavailable(UsageError):
    """No JDK (java and javac) or no way to fetch the client's jars (Maven)."""


@dataclass(frozen=True)
class Driver:
    """How to start the driver: the java binary and its classpath."""

    java: str
    classpath: str

    def command(self) -> list[str]:
        # a small heap is plenty (buffer.memory defaults to 32 MB); serial GC keeps a
        # shared 2-core machine's other work from being crowded out by GC threads
        return [self.java, "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-cp", self.classpath, MAIN_CLASS]


def _missing(what: str) -> JavaUnavailable:
    return JavaUnavailable(
        f"Mode kafka-java runs Apache Kafka's Java producer and needs {what}. Install a "
        "JDK 17 or newer (e.g. `apt-get install openjdk-17-jdk-headless`, which brings both "
        "`java` and `javac`) or point JAVA_HOME at one, and Maven (`apt-get install maven`): "
        f"kbatch then downloads kafka-clients {KAFKA_CLIENTS_VERSION} from Maven Central once, "
        "into "
        f"{cache_root()}, and compiles its small driver there. Modes java (the emulation) "
        "and librdkafka need neither."
    )


def find_javac(java: str) -> str | None:
    """``javac`` beside the ``java`` in use (JAVA_HOME or PATH), else on PATH."""
    sibling = Path(os.path.realpath(java)).parent / "javac"
    if sibling.is_file() and os.access(sibling, os.X_OK):
        return str(sibling)
    return shutil.which("javac")


def source_text() -> str:
    return (resources.files("producer_core.drivers.kafka_java") / "java" / f"{MAIN_CLASS}.java"
            ).read_text(encoding="utf-8")


def client_libs(progress: Callable[[str], None]) -> Path:
    """The client's jars in the per-user cache, fetched with Maven the first time."""
    libs = cache_root() / f"kafka-clients-{KAFKA_CLIENTS_VERSION}" / "libs"
    if not libs.is_dir():
        if shutil.which("mvn") is None:
            raise _missing("Maven (`mvn` is not on PATH) to download kafka-clients once")
        fetch_jars(libs.parent, progress, CLIENT_DEPS,
                   f"kafka-clients-{KAFKA_CLIENTS_VERSION}.jar",
                   f"kafka-clients {KAFKA_CLIENTS_VERSION} and HdrHistogram jars (about 20 MB)")
    return libs


def prepare(progress: Callable[[str], None] | None = None) -> Driver:
    """Everything needed to start the driver, compiled and cached on first use."""
    progress = progress or _stderr
    java = find_java()
    if java is None:
        raise _missing("a Java runtime (no `java` on PATH and no JAVA_HOME)")
    javac = find_javac(java)
    if javac is None:
        raise _missing("the Java compiler (`javac`: a JDK, not only a JRE)")
    libs = client_libs(progress)
    classpath = str(libs / "*")
    source = source_text()
    digest = hashlib.sha256(
        (source + "\n".join(sorted(p.name for p in libs.glob("*.jar")))).encode()
    ).hexdigest()[:16]
    target = cache_root() / "kafka-java-driver" / digest
    if not (target / f"{MAIN_CLASS}.class").is_file():
        _compile(javac, classpath, source, target, progress)
    return Driver(java, f"{target}{os.pathsep}{classpath}")


def _compile(javac: str, classpath: str, source: str, target: Path,
             progress: Callable[[str], None]) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        progress(f"Compiling kbatch's Java producer driver into {target} (first run only)...")
        src = work / "src" / f"{MAIN_CLASS}.java"
        src.parent.mkdir()
        src.write_text(source, encoding="utf-8")
        classes = work / "classes"
        proc = subprocess.run(
            [javac, "-nowarn", "-cp", classpath, "-d", str(classes), str(src)],
            capture_output=True, text=True, timeout=JAVAC_TIMEOUT_S, check=False,
            stdin=subprocess.DEVNULL)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            raise BrokerError(f"javac could not compile kbatch's Java driver:\n{tail}")
        try:
            classes.rename(target)
        except OSError:
            if not (target / f"{MAIN_CLASS}.class").is_file():
                raise
    except subprocess.TimeoutExpired as exc:
        raise BrokerError(f"javac did not finish within {JAVAC_TIMEOUT_S} s.") from exc
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
