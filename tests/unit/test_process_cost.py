"""CPU and memory of a process from /proc: the parsing, and this very process."""

from __future__ import annotations

import os
import time

from producer_core.measure.process_cost import (
    children_of,
    parse_stat,
    parse_status,
    read_cpu,
    read_memory,
)

# fields 14-17 (utime stime cutime cstime) = 250 50 30 20; the name holds ') ' and spaces
STAT = ("4242 (kafka) (x) y) S 1 4242 4242 0 -1 4194560 1000 0 0 0 "
        "250 50 30 20 20 0 90 0 123 456 789")


def test_stat_fields_are_counted_from_the_last_parenthesis():
    cpu = parse_stat(STAT, ticks_per_s=100)
    assert (cpu.user_s, cpu.system_s, cpu.children_s) == (2.5, 0.5, 0.5)
    assert cpu.total_s == 3.5


def test_status_gives_peak_and_current_rss_in_bytes():
    memory = parse_status("Name:\tjava\nVmPeak:\t 9 kB\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n")
    assert memory.peak_rss_bytes == 2048 * 1024
    assert memory.rss_bytes == 1024 * 1024


def test_this_process_cpu_grows_with_work_and_memory_is_read():
    before = read_cpu(os.getpid())
    deadline = time.process_time() + 0.3
    while time.process_time() < deadline:
        pass
    after = read_cpu(os.getpid())
    assert before is not None and after is not None
    assert after.total_s - before.total_s >= 0.2
    memory = read_memory(os.getpid())
    assert memory is not None and memory.peak_rss_bytes >= memory.rss_bytes > 0


def test_a_gone_process_reads_as_none_and_children_are_found():
    import subprocess

    child = subprocess.Popen(["sleep", "5"])
    try:
        assert child.pid in children_of(os.getpid())
    finally:
        child.kill()
        child.wait()
    assert read_cpu(child.pid) is None
    assert read_memory(child.pid) is None
