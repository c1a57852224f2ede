"""``librdkafka@VERSION``: a confluent-kafka release (which bundles its librdkafka) from
PyPI, in a target directory of its own, run out of process.

The pinned confluent-kafka is kbatch's dependency and runs in kbatch's process. Another
release cannot share that process (one `confluent_kafka` module per interpreter), so it
is installed once with pip (``--target``, binary wheels only, no dependencies; its
progress reported live, `pip_install`) into
``~/.cache/kbatch/confluent-kafka-<version>`` (the cache key), and its run is the same
driver (`drivers.librdkafka`) in a child interpreter whose import path starts there
(`librdkafka_child`): the same generator, settings and Results, only the library differs.
The child gets the run's arguments pickled on stdin and answers with its Results (or the
error it raised) pickled on stdout; cancelling the run kills the child.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from producer_core.downloads import cache_root
from producer_core.engine.drivers.pip_install import run_pip
from producer_core.engine.drivers.run_types import STOP_CHECK_S, RunCall
from producer_core.errors import BrokerError, KbatchError, UsageError
from producer_core.results.metrics import Results

PIP_TIMEOUT_S = 600
BUILD_PREFIX = "build-"
"""A version that is your own build (`librdkafka_build`): ``build-<12 hex of its sha256>``."""
BUILD_SOURCE = "BUILD_SOURCE.txt"
CHILD = "producer_core.engine.drivers.librdkafka_child"


def target_dir(version: str) -> Path:
    """Where one confluent-kafka release lives (its cache key is the version)."""
    return cache_root() / f"confluent-kafka-{version}"


def _not_found(output: str) -> bool:
    return ("No matching distribution found" in output
            or "Could not find a version that satisfies" in output)


def install(version: str | None, progress: Callable[[str], None]) -> None:
    """Mode librdkafka's installer (`ModeSpec.install`): nothing for the pinned release;
    a named one is fetched once, before any broker starts."""
    if version is None:
        return
    target = target_dir(version)
    if (target / "confluent_kafka").is_dir():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        progress(f"Fetching confluent-kafka {version} (with its librdkafka) from PyPI into "
                 f"{target} (first run only)...")
        try:
            returncode, output = run_pip(
                [sys.executable, "-m", "pip", "install", "--disable-pip-version-check",
                 "--progress-bar", "off", "--no-deps", "--only-binary", ":all:", "--target",
                 str(work / "lib"), f"confluent-kafka=={version}"],
                work / "tmp", progress, PIP_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            raise BrokerError(f"pip did not install confluent-kafka {version} within "
                              f"{PIP_TIMEOUT_S} s.") from exc
        if returncode != 0 and _not_found(output):
            raise UsageError(
                f"confluent-kafka {version} is not a release PyPI has for this Python "
                f"and platform (pip found no binary wheel), so mode librdkafka@{version} "
                "cannot run. Give a released version (e.g. librdkafka@2.12.0; "
                "`pip index versions confluent-kafka` lists them), or leave out @VERSION "
                "for kbatch's pinned confluent-kafka. Nothing was started.")
        if returncode != 0 or not (work / "lib" / "confluent_kafka").is_dir():
            tail = "\n".join(output.strip().splitlines()[-15:])
            raise BrokerError(f"pip could not install confluent-kafka {version} (exit code "
                              f"{returncode}). pip said:\n{tail}")
        try:
            (work / "lib").rename(target)
        except OSError:
            if not (target / "confluent_kafka").is_dir():
                raise
        progress(f"confluent-kafka {version} cached in {target}.")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def child_env(version: str) -> dict[str, str]:
    """The child's environment: that release first on the import path, then kbatch's."""
    paths = [str(target_dir(version)), *(p for p in sys.path if p)]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


async def run_out_of_process(call: RunCall, version: str) -> Results:
    """The run, in a child interpreter with confluent-kafka `version` (see the module).

    The child's stdin stays open after the run's arguments: a line on it (or its end)
    asks the child to stop early and answer with partial results, as `call.stop` asks of
    an in-process run; the child ignores SIGINT (a terminal's Ctrl-C reaches the whole
    process group), so the stop is this process's to pass on."""
    await asyncio.to_thread(install, version, _stderr)
    payload = pickle.dumps((call.workload, call.settings, call.mode, call.bootstrap,
                            call.deliveries is not None))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", CHILD, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, env=child_env(version))
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    forward = asyncio.create_task(_forward_stop(call.stop, proc.stdin))
    try:
        proc.stdin.write(payload)
        await proc.stdin.drain()
        stdout, stderr = await asyncio.gather(proc.stdout.read(), proc.stderr.read())
        await proc.wait()
    except asyncio.CancelledError:
        if proc.returncode is None:
            proc.kill()
        raise
    except (BrokenPipeError, ConnectionResetError):  # the child died at once: its stderr says
        stdout, stderr = b"", await proc.stderr.read()
        await proc.wait()
    finally:
        forward.cancel()
        if not proc.stdin.is_closing():
            proc.stdin.close()
    answer: Any = None
    try:
        answer = pickle.loads(stdout) if stdout else None
    except (pickle.UnpicklingError, EOFError, AttributeError, ImportError):
        answer = None
    if isinstance(answer, tuple) and answer and answer[0] == "ok":
        _, results, deliveries = answer
        if call.deliveries is not None and deliveries:
            call.deliveries.extend(deliveries)
        build = build_source(version)
        if build is not None and results.client is not None:  # your own build: name it
            results.client.values["client_build"] = build
        return results
    if isinstance(answer, tuple) and answer and answer[0] == "error" and isinstance(
            answer[1], KbatchError):
        raise answer[1]
    tail = "\n".join(stderr.decode(errors="replace").strip().splitlines()[-15:])
    raise BrokerError(f"The librdkafka@{version} run (a child process) ended without "
                      f"results (exit code {proc.returncode}). It said:\n{tail or '-'}")


async def _forward_stop(stop: Any, stdin: asyncio.StreamWriter) -> None:
    """Tell the child to stop (a line on its stdin) once `stop` (a threading.Event) is set."""
    if stop is None:
        return
    while not stop.is_set():
        await asyncio.sleep(STOP_CHECK_S)
    try:
        stdin.write(b"stop\n")
        await stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the child has finished already


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def build_source_of(directory: Path) -> dict[str, str]:
    try:
        fields = (directory / BUILD_SOURCE).read_text().splitlines()
    except OSError:
        return {}
    keys = ("path", "sha256", "reported_version")
    return {k: v for k, v in zip(keys, fields, strict=False) if v}


def build_source(version: str | None) -> dict[str, str] | None:
    """Where a registered build came from: path, sha256, reported version (None: a
    release)."""
    if version is None or not version.startswith(BUILD_PREFIX):
        return None
    return build_source_of(target_dir(version)) or None
