"""Where kbatch keeps what it fetches or builds once per user, and how it fetches jars.

The per-user cache is ``$XDG_CACHE_HOME/kbatch`` (``~/.cache/kbatch`` without XDG): Kafka's
jars, the JMX exporter, the Java and Go client drivers, librdkafka releases and builds.
Jars come from the machine's Maven repositories with ``mvn dependency:copy-dependencies``
into a temporary sibling directory renamed into place only when Maven succeeded, so an
interrupted first run never leaves a half-filled cache behind. A leaf module: the brokers
and the client drivers both need it, and neither should import the other for it."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from producer_core.errors import BrokerError, UsageError

MVN_TIMEOUT_S = 900


class ArtifactMissing(UsageError):
    """Maven's repositories do not have an asked-for artifact version (its caller words
    the error: which version, what to do)."""


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


def _not_found(output: str) -> bool:
    """Whether Maven's output says an artifact is absent (not a network or other error)."""
    return "Could not find artifact" in output or (
        "was not found in" in output and "Could not resolve dependencies" in output)


def _pom(deps: list[str]) -> str:
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


def fetch_jars(target: Path, progress: Callable[[str], None], deps: list[str], marker: str,
               label: str, hint: str = "") -> None:
    """Resolve `deps` (``group:artifact:version``) and theirs into ``target/libs`` with
    Maven, atomically (temp dir, rename). `marker` is a jar name pattern whose presence
    proves Maven resolved them; `label` names them in messages, and `hint` (", or ...")
    is the caller's way around a failure."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise UsageError(f"Fetching {label} needs Maven (`mvn` is not on PATH): install it "
                         f"(e.g. `apt-get install maven`){hint and ', ' + hint}.")
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    what = label.split(" (")[0]
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
                f"Maven did not finish resolving {what} within {MVN_TIMEOUT_S} s. Check "
                f"network access to Maven Central{hint and ', ' + hint}.") from exc
        if proc.returncode != 0 and _not_found(proc.stdout + proc.stderr):
            raise ArtifactMissing(f"Maven found no such artifact among {deps}")
        if proc.returncode != 0 or not any((work / "libs").glob(marker)):
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            raise BrokerError(
                f"Maven could not resolve {what} (exit code {proc.returncode}); check access "
                f"to Maven Central (or ~/.m2/settings.xml){hint and ', ' + hint}. "
                f"Maven said:\n{tail}")
        (work / "pom.xml").unlink()
        try:
            work.rename(target)
        except OSError:
            if not (target / "libs").is_dir():  # not a concurrent run that won the race
                raise
        progress(f"{what} cached in {target}.")
    finally:
        shutil.rmtree(work, ignore_errors=True)
