"""A real Spark standalone cluster on this machine for tests: one master and one worker,
both bound to 127.0.0.1, started with the installed pyspark's `bin/spark-class` and
stopped by their process ids on every exit path."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Standalone:
    master_url: str
    ui_url: str
    log_dir: Path
    pids: list[int]


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM to the process group this test started (the JVM and the executors it
    forked), then SIGKILL if it lingers."""
    if proc.poll() is not None:
        return
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def _alive_workers(ui_url: str) -> tuple[int, int]:
    """(alive workers, their cores) from the master's web UI JSON."""
    with urllib.request.urlopen(f"{ui_url}/json", timeout=2) as response:
        state = json.load(response)
    return int(state.get("aliveworkers", 0)), int(state.get("cores", 0))


@contextmanager
def standalone_cluster(tmp: Path, cores: int = 2, python_path: str = "",
                       timeout_s: float = 60.0) -> Iterator[Standalone]:
    """Start a master and a worker of `cores` cores on 127.0.0.1; yield once the worker
    has registered."""
    spark_class = str(_spark_home() / "bin" / "spark-class")
    master_port, master_ui, worker_ui = free_port(), free_port(), free_port()
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_HOME": str(_spark_home()),
           "SPARK_NO_DAEMONIZE": "1"}
    if python_path:
        env["PYTHONPATH"] = python_path
    master_url = f"spark://127.0.0.1:{master_port}"
    ui_url = f"http://127.0.0.1:{master_ui}"
    procs: list[subprocess.Popen] = []
    try:
        with open(tmp / "master.log", "wb") as log:
            procs.append(subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                 "--port", str(master_port), "--webui-port", str(master_ui)],
                env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        (tmp / "work").mkdir(exist_ok=True)
        with open(tmp / "worker.log", "wb") as log:
            procs.append(subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.worker.Worker", master_url,
                 "--host", "127.0.0.1", "--cores", str(cores), "--memory", "2g",
                 "--webui-port", str(worker_ui), "--work-dir", str(tmp / "work")],
                env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        deadline = time.monotonic() + timeout_s
        while True:
            for proc in procs:
                if proc.poll() is not None:
                    raise RuntimeError(f"a Spark daemon exited early; see {tmp}/*.log")
            with suppress(OSError, ValueError):
                if _alive_workers(ui_url) == (1, cores):
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the Spark worker did not register in {timeout_s:g} s; "
                                   f"see {tmp}/*.log")
            time.sleep(0.5)
        yield Standalone(master_url, ui_url, tmp, [proc.pid for proc in procs])
    finally:
        for proc in reversed(procs):
            _stop(proc)
