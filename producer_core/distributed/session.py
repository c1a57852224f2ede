"""A Spark session for kbatch: started on demand, quiet, and gone afterwards.

- PySpark is optional (`pip install 'kbatch[spark]'`); without it a Spark feature fails
  with a UsageError that names the extra, never an ImportError.
- Spark's JVM (and the Python workers it forks) write their logs to a file instead of
  the terminal; its path is named when something goes wrong.
- Python workers run this interpreter (PYSPARK_PYTHON), where the engine is importable;
  on a cluster, an interpreter the user chose with PYSPARK_PYTHON is kept.
- Stopping the session also ends the JVM, so nothing outlives the command (and a later
  session starts with its own settings).
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from producer_core.errors import KbatchError, UsageError

SPARK_EXTRA = "pip install 'kbatch[spark]'"

BASE_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    # a share must never run twice: its messages would be produced twice
    "spark.task.maxFailures": "1",
    "spark.speculation": "false",
    # the shares run as one barrier stage (all at once, or not at all)
    "spark.dynamicAllocation.enabled": "false",
    "spark.scheduler.barrier.maxConcurrentTasksCheck.interval": "5s",
    "spark.scheduler.barrier.maxConcurrentTasksCheck.maxFailures": "6",
}
LOCAL_CONF = {
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
}


def require_pyspark(feature: str = "This feature") -> None:
    """Raise a UsageError naming the extra if PySpark is not installed."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise UsageError(
            f"{feature} runs on Spark, and PySpark is not installed. Install kbatch's Spark "
            f"extra: {SPARK_EXTRA} (PySpark 4.x; it needs Java 17 or 21)."
        ) from None


def parse_conf(items: Mapping[str, str] | list[str] | tuple[str, ...]) -> dict[str, str]:
    """`--spark-conf KEY=VALUE` items into a dict, refusing malformed ones."""
    if isinstance(items, Mapping):
        return dict(items)
    conf = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip().startswith("spark."):
            raise UsageError(f"Malformed --spark-conf {item!r}: expected spark.KEY=VALUE, for "
                             "example --spark-conf spark.executor.memory=2g.")
        if key.strip() in CHECKED_ELSEWHERE:
            raise UsageError(f"--spark-conf {key.strip()} would override "
                             f"{CHECKED_ELSEWHERE[key.strip()]}, which kbatch checks before "
                             "Spark starts; give it there instead.")
        conf[key.strip()] = value.strip()
    return conf


CHECKED_ELSEWHERE = {"spark.master": "--spark-master",
                     "spark.submit.deployMode": "--spark-master (client mode only)"}
"""Spark settings that kbatch sets from checked options; a --spark-conf may not replace them."""


class SparkSessionHandle:
    """A started session, where its log goes, and how to stop all of it."""

    def __init__(self, spark: Any, log_path: Path, gateway: Any) -> None:
        self.spark = spark
        self.log_path = log_path
        self._gateway = gateway

    @property
    def context(self) -> Any:
        return self.spark.sparkContext

    def stop(self) -> None:
        """Stop Spark and end its JVM (py4j's gateway process) and Python workers."""
        from pyspark import SparkContext

        try:
            self.spark.stop()
        finally:
            gateway, self._gateway = self._gateway, None
            if gateway is not None:
                _end_gateway(gateway)
                with SparkContext._lock:
                    if SparkContext._gateway is gateway:
                        SparkContext._gateway = None
                        SparkContext._jvm = None


def _end_gateway(gateway: Any) -> None:
    with contextlib.suppress(Exception):  # the JVM may be gone already
        gateway.shutdown()
    proc = getattr(gateway, "proc", None)
    if proc is None:
        return
    try:
        if proc.stdin is not None:
            proc.stdin.close()  # the JVM exits when its stdin closes
        proc.wait(timeout=15)
    except (OSError, subprocess.TimeoutExpired):
        proc.kill()
        proc.wait(timeout=5)


MASTER_CONNECT_TIMEOUT_S = 5.0


def check_master_answers(master: str) -> None:
    """A standalone master (spark://) must accept connections before Spark starts: Spark
    itself retries an unreachable master for about a minute and then fails with a stack
    of Java errors. One TCP connect per host, bounded, names the one that does not answer."""
    if not master.startswith("spark://"):
        return
    for item in master[len("spark://"):].split(","):
        host, _, port = item.rpartition(":")
        try:
            with socket.create_connection((host, int(port)), MASTER_CONNECT_TIMEOUT_S):
                return  # one live master is enough (the others are standbys)
        except (OSError, ValueError) as exc:
            problem = f"{item}: {getattr(exc, 'strerror', None) or exc}"
    raise KbatchError(f"The Spark master does not answer ({problem}). Start it, or check "
                      "--spark-master; nothing was run.")


def start_session(master: str, app_name: str, local: bool,
                  conf: Mapping[str, str] | None = None) -> SparkSessionHandle:
    """Start a SparkSession on `master` with kbatch's settings (and the user's `conf`)."""
    require_pyspark()
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    if SparkContext._active_spark_context is not None:
        raise KbatchError("A Spark session is already running in this process.")
    check_master_answers(master)
    settings = {**BASE_CONF, **(LOCAL_CONF if local else {})}
    if local or not os.environ.get("PYSPARK_PYTHON"):
        # PySpark takes the workers' interpreter from the environment, not from the conf
        os.environ["PYSPARK_PYTHON"] = sys.executable
    settings.update(conf or {})
    spark_conf = SparkConf(loadDefaults=False).setMaster(master).setAppName(app_name)
    spark_conf.setAll(list(settings.items()))
    fd, name = tempfile.mkstemp(prefix="kbatch-spark-", suffix=".log")
    log_path = Path(name)
    gateway = None
    try:
        with os.fdopen(fd, "ab") as log:
            gateway = launch_gateway(spark_conf, popen_kwargs={"stdout": log, "stderr": log})
        with SparkContext._lock:
            SparkContext._gateway = gateway
            SparkContext._jvm = gateway.jvm
        spark = SparkSession.builder.config(conf=spark_conf).getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        _quiet_python_loggers()
    except Exception as exc:  # noqa: BLE001 - Java missing, bad master, bad conf
        if gateway is not None:
            _end_gateway(gateway)
            with SparkContext._lock:
                SparkContext._gateway = None
                SparkContext._jvm = None
        raise KbatchError(
            f"Spark could not start on master {master}: {describe_spark_error(exc)}. "
            f"Spark needs Java 17 or 21 (JAVA_HOME or java on PATH); its log is {log_path}."
        ) from None
    return SparkSessionHandle(spark, log_path, gateway)


def _quiet_python_loggers() -> None:
    """PySpark logs every query error as JSON on stderr; kbatch reports errors itself."""
    from pyspark.logger import PySparkLogger

    for name in ("DataFrameQueryContextLogger", "SQLQueryContextLogger"):
        PySparkLogger.getLogger(name).disabled = True


@contextmanager
def spark_session(master: str, app_name: str, local: bool,
                  conf: Mapping[str, str] | None = None) -> Iterator[SparkSessionHandle]:
    """A session for the length of a `with` block; its log is removed if all went well."""
    handle = start_session(master, app_name, local, conf)
    ok = False
    try:
        yield handle
        ok = True
    finally:
        handle.stop()
        if ok:
            handle.log_path.unlink(missing_ok=True)


_PY_ERROR = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Failure|Warning))"
                       r"(?::\s*(.*))?$")
_JAVA_ERROR = re.compile(r"^(?::\s*)?(?:[a-z][\w$]*\.)+([A-Z][\w$]*(?:Exception|Error|Failed)):"
                         r"\s*(.*)$")


def describe_spark_error(exc: BaseException) -> str:
    """One line for a Spark failure: the Python error of a task, or the Java one, no stack."""
    text = str(exc)
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    if "Traceback (most recent call last)" in text:
        found = [m for m in map(_PY_ERROR.match, lines) if m]
        if found:
            kind, message = found[-1].group(1), found[-1].group(2) or ""
            return f"{kind.rsplit('.', 1)[-1]}: {message}".rstrip(": ")
    for line in lines:
        match = _JAVA_ERROR.match(line.strip())
        if match:
            return f"{match.group(1)}: {match.group(2)}"
    return lines[0] if lines else type(exc).__name__
