"""How long after `kbatch produce` starts its first message leaves for the broker.

Runs `kbatch produce` (default: on the embedded Tansu broker, 1 partition, 1 message) N
times as a user's shell does, each a new interpreter, and reports, per run and as the
median: the time from just before the process is created to the moment kbatch writes its
first ProduceRequest (Kafka API key 0) to a socket, and the command's whole wall time.
The moment is observed on the wire side of the process, not from kbatch's own figures:
the child runs kbatch under a wrapper that wraps `socket.socket.send` (what asyncio's
transports call) and notes the CLOCK_MONOTONIC time of the first send whose Kafka header
is a Produce request (CLOCK_MONOTONIC is the same clock in every process, so the parent's
start time and the child's send time compare directly). The broker's own start (Tansu's
metadata probe) and kbatch's Metadata/InitProducerId requests do not count.

    python benchmarks/first_message.py [--runs 5] [-- KBATCH PRODUCE ARGUMENTS]

Target (issue 34): the first message within 0.5 s of the command's start, median of 5.
The machine may be shared: the load average is printed beside the figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_ARGS = ["--partitions", "1", "--messages", "1", "--rate", "1000", "--no-progress"]

WRAPPER = r"""
import os, socket, struct, sys, time
_send = socket.socket.send
_sendall = socket.socket.sendall
_out = os.environ["KBATCH_FIRST_PRODUCE_FILE"]
_seen = []

def _note(data):
    if not _seen and len(data) >= 6 and struct.unpack_from(">h", data, 4)[0] == 0:
        _seen.append(time.monotonic())
        with open(_out, "w") as handle:
            handle.write(f"{_seen[0]!r} {time.process_time()!r}")

def send(self, data, *args):
    _note(bytes(data[:6]))
    return _send(self, data, *args)

def sendall(self, data, *args):
    _note(bytes(data[:6]))
    return _sendall(self, data, *args)

socket.socket.send = send
socket.socket.sendall = sendall
sys.argv = ["kbatch", "produce", *sys.argv[1:]]
from cli.main import main
main()
"""


def one_run(arguments: list[str]) -> tuple[float | None, float | None, float, int]:
    """(seconds to the first Produce request or None, kbatch's CPU seconds until then,
    the whole command's seconds, its exit code)."""
    with tempfile.TemporaryDirectory(prefix="kbatch-first-") as scratch:
        mark = Path(scratch) / "first"
        env = {**os.environ, "KBATCH_FIRST_PRODUCE_FILE": str(mark),
               "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
        began = time.monotonic()
        done = subprocess.run([sys.executable, "-c", WRAPPER, *arguments], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              check=False, cwd=scratch)
        whole = time.monotonic() - began
        if done.returncode != 0:
            print(done.stderr[-2000:], file=sys.stderr)
        if not mark.exists():
            return None, None, whole, done.returncode
        sent_at, cpu = (float(field) for field in mark.read_text().split())
        return sent_at - began, cpu, whole, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("arguments", nargs="*", help="kbatch produce's arguments "
                        f"(after --; default: {' '.join(DEFAULT_ARGS)})")
    args = parser.parse_args()
    arguments = args.arguments or DEFAULT_ARGS
    load = os.getloadavg()
    firsts, cpus, wholes = [], [], []
    for index in range(args.runs):
        first, cpu, whole, code = one_run(arguments)
        shown = (f"{first:.3f} s (kbatch CPU until then {cpu:.3f} s)" if first is not None
                 else "no Produce request seen")
        print(f"run {index + 1}: first message after {shown}; command {whole:.3f} s "
              f"(exit {code})")
        if first is not None and cpu is not None:
            firsts.append(first)
            cpus.append(cpu)
        wholes.append(whole)
    if firsts:
        print(f"median over {len(firsts)} runs: first message {statistics.median(firsts):.3f} s "
              f"(target 0.5 s; kbatch CPU until then {statistics.median(cpus):.3f} s), "
              f"whole command {statistics.median(wholes):.3f} s")
    print(f"kbatch produce {' '.join(arguments)}; load average {load[0]:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after (1 min; the machine may be shared)")


if __name__ == "__main__":
    main()
