"""What a process costs: CPU seconds (all threads) and memory, read from Linux's /proc.

``/proc/PID/stat`` fields 14-17 (utime, stime, cutime, cstime) are in clock ticks and
cover every thread of the process; cutime/cstime add the children it has waited for
(kbatch's own count then holds a kafka-java JVM that ran and was reaped during the run).
``/proc/PID/status`` gives VmHWM (the peak resident set since the process started) and
VmRSS. Reading them costs microseconds and needs no help from the process, so it works
for Tansu, a Kafka JVM and kbatch alike. Elsewhere than Linux nothing is readable and
callers say "not measured".
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


def clock_ticks_per_s() -> int:
    try:
        return int(os.sysconf("SC_CLK_TCK"))
    except (ValueError, OSError, AttributeError):
        return 100


@dataclass(frozen=True)
class CpuReading:
    """One process's cumulative CPU at one instant (seconds since the process started)."""

    user_s: float
    system_s: float
    children_s: float
    """CPU of children the process has waited for (cutime + cstime)."""

    @property
    def total_s(self) -> float:
        return self.user_s + self.system_s + self.children_s


@dataclass(frozen=True)
class MemoryReading:
    peak_rss_bytes: int
    rss_bytes: int


def parse_stat(text: str, ticks_per_s: int) -> CpuReading:
    """utime, stime, cutime, cstime of a /proc/PID/stat line.

    The command name (field 2) is in parentheses and may itself hold spaces and ')', so
    the fields are counted from the last ')'."""
    rest = text[text.rindex(")") + 2:].split()
    # rest[0] is field 3 (state): utime is field 14 -> rest[11]
    utime, stime, cutime, cstime = (int(v) for v in rest[11:15])
    return CpuReading(utime / ticks_per_s, stime / ticks_per_s, (cutime + cstime) / ticks_per_s)


def parse_status(text: str) -> MemoryReading:
    """VmHWM and VmRSS of a /proc/PID/status text (kB in the file, bytes here)."""
    values = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in ("VmHWM", "VmRSS"):
            values[key] = int(value.split()[0]) * 1024
    return MemoryReading(values.get("VmHWM", 0), values.get("VmRSS", 0))


def read_cpu(pid: int, proc: Path = PROC, ticks_per_s: int | None = None) -> CpuReading | None:
    """The process's CPU now, or None once it is gone (or not readable)."""
    try:
        text = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    return parse_stat(text, ticks_per_s or clock_ticks_per_s())


def read_memory(pid: int, proc: Path = PROC) -> MemoryReading | None:
    try:
        return parse_status((proc / str(pid) / "status").read_text())
    except OSError:
        return None


def children_of(pid: int, proc: Path = PROC) -> list[int]:
    """The live child processes of ``pid`` (every thread's children file)."""
    found: list[int] = []
    try:
        tasks = list((proc / str(pid) / "task").iterdir())
    except OSError:
        return found
    for task in tasks:
        try:
            found.extend(int(p) for p in (task / "children").read_text().split())
        except (OSError, ValueError):
            continue
    return found


def measurable() -> bool:
    """Whether this system exposes per-process CPU in /proc (Linux)."""
    return (PROC / str(os.getpid()) / "stat").is_file()
