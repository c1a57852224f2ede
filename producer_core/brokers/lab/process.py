"""The lab facade in a child process, so it never competes with its clients for the GIL.

A facade thread inside the process that also runs the engine shares one interpreter lock
with an engine busy generating 20,000 messages a second; every response then waits for
the lock, and a 1 ms emulated round trip is measured as several. ``FacadeProcess`` runs
the same ``Facade`` in a child Python process and offers the same methods, over JSON lines
on the child's stdin and stdout:

    parent -> child   {"nodes": N, "host": ..., "ports": [...], "rtt_ms": R, "jitter_ms": J,
                       "seed": S, "assignment": {...}}
    child -> parent   {"nodes": [[node_id, host, port], ...]}   or   {"error": ..., "usage": bool}
    then one reply line per command:
                      {"op": "backends" | "counts" | "errors" | "init_frames" | "reset"}

The child stops when its stdin closes (the parent stopped it or died); it also gets the
kernel's parent-death signal, and runs in its own session so a terminal Ctrl-C reaches
only the parent, which then shuts the lab down in order.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from producer_core.brokers.child_process import SPAWNER, pdeathsig_preexec
from producer_core.brokers.lab.delay import DelayModel
from producer_core.brokers.lab.layout import Layout, Node
from producer_core.errors import BrokerError, UsageError

_PACKAGE_ROOT = Path(__file__).resolve().parents[3]


class FacadeProcess:
    """``Facade``'s interface, served by a child process (see the module docstring)."""

    def __init__(
        self,
        nodes: int,
        delay: DelayModel | None = None,
        host: str = "127.0.0.1",
        assignment: Mapping[str, Sequence[int]] | None = None,
    ) -> None:
        delay = delay or DelayModel()
        self._config: dict[str, Any] = {
            "nodes": nodes, "host": host, "rtt_ms": delay.rtt_s * 1000,
            "jitter_ms": delay.jitter_s * 1000, "seed": delay.seed,
            "assignment": {t: list(v) for t, v in (assignment or {}).items()},
        }
        self._assignment = assignment
        self._proc: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()
        self.layout: Layout | None = None

    @property
    def pid(self) -> int | None:
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def start(self, ports: Sequence[int] | None = None, timeout_s: float = 15.0) -> Layout:
        if self._proc is not None:
            assert self.layout is not None
            return self.layout
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(_PACKAGE_ROOT), env.get("PYTHONPATH")) if p)
        preexec = pdeathsig_preexec(os.getpid())
        cmd = [sys.executable, "-c", "from producer_core.brokers.lab.process import main; main()"]

        def spawn() -> subprocess.Popen[str]:
            return subprocess.Popen(
                cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True,
                start_new_session=True, preexec_fn=preexec, close_fds=True,
            )

        try:
            self._proc = SPAWNER.run(spawn)
        except OSError as exc:
            raise BrokerError(f"Could not start the lab facade process: {exc}") from exc
        try:
            reply = self._call({**self._config, "ports": list(ports) if ports else None},
                               timeout_s)
            if "error" in reply:
                raise (UsageError if reply.get("usage") else BrokerError)(reply["error"])
            self.layout = Layout([Node(*n) for n in reply["nodes"]], self._assignment)
        except BaseException:
            self.stop()
            raise
        return self.layout

    def set_backends(self, backends: Sequence[tuple[str, int]]) -> None:
        self._call({"op": "backends", "backends": [list(b) for b in backends]})

    def counts(self) -> dict[int, dict[int, int]]:
        value = self._call({"op": "counts"})["value"]
        return {int(n): {int(k): c for k, c in by_key.items()} for n, by_key in value.items()}

    def errors(self) -> list[str]:
        return list(self._call({"op": "errors"})["value"])

    def init_producer_frames(self) -> list[bytes]:
        return [bytes.fromhex(f) for f in self._call({"op": "init_frames"})["value"]]

    def reset_counts(self) -> None:
        self._call({"op": "reset"})

    def stop(self, timeout_s: float = 5.0) -> None:
        """Close the child's stdin (it stops its facade and exits), then make sure; idempotent."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError, ValueError):
            assert proc.stdin is not None
            proc.stdin.close()
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5.0)
        with contextlib.suppress(OSError, ValueError):
            assert proc.stdout is not None
            proc.stdout.close()

    def _call(self, message: dict[str, Any], timeout_s: float = 15.0) -> dict[str, Any]:
        proc = self._proc
        if proc is None or proc.stdin is None or proc.stdout is None:
            raise BrokerError("The lab facade process is not running.")
        with self._lock:
            try:
                proc.stdin.write(json.dumps(message) + "\n")
                proc.stdin.flush()
                line = _readline(proc.stdout, timeout_s)
            except (OSError, ValueError) as exc:
                line = ""
                detail = str(exc)
            else:
                detail = "no answer" if not line else ""
        if not line:
            code = proc.poll()
            raise BrokerError(
                "The lab facade process "
                + (f"exited (code {code})" if code is not None else f"gave {detail}")
                + "; its messages, if any, are above."
            )
        return json.loads(line)


def _readline(stream: IO[str], timeout_s: float) -> str:
    """One line from the child, or "" if none comes in time (or it exited)."""
    result: list[str] = []
    reader = threading.Thread(target=lambda: result.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(timeout_s)
    return result[0] if result else ""


# ----------------------------------------------------------------------------- the child


def main() -> None:
    from producer_core.brokers.lab.facade import Facade

    out = sys.stdout
    sys.stdout = sys.stderr  # nothing but replies may reach the parent's pipe

    def reply(document: dict[str, Any]) -> None:
        out.write(json.dumps(document) + "\n")
        out.flush()

    config = json.loads(sys.stdin.readline() or "null")
    if config is None:
        return
    try:
        delay = DelayModel(config["rtt_ms"], config["jitter_ms"], config["seed"])
        facade = Facade(config["nodes"], delay, config["host"], config["assignment"] or None)
        layout = facade.start(config["ports"])
    except UsageError as exc:
        reply({"error": str(exc), "usage": True})
        return
    except BrokerError as exc:
        reply({"error": str(exc), "usage": False})
        return
    reply({"nodes": [[n.node_id, n.host, n.port] for n in layout.nodes]})
    try:
        for line in sys.stdin:
            op = json.loads(line).get("op")
            if op == "backends":
                facade.set_backends([tuple(b) for b in json.loads(line)["backends"]])
                reply({"ok": True})
            elif op == "counts":
                reply({"value": facade.counts()})
            elif op == "errors":
                reply({"value": facade.errors()})
            elif op == "init_frames":
                reply({"value": [f.hex() for f in facade.init_producer_frames()]})
            elif op == "reset":
                facade.reset_counts()
                reply({"ok": True})
            else:
                reply({"error": f"unknown op {op!r}"})
    except KeyboardInterrupt:
        pass
    finally:
        facade.stop()


if __name__ == "__main__":
    main()
