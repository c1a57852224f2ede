"""The real clients' own benchmark tools for `client_throughput.py`: how each is obtained,
the command line of one run, and the summary line it prints, parsed.

- librdkafka's ``rdkafka_performance`` (C, ``examples/rdkafka_performance.c``), built once
  from the librdkafka tree that the rdkafka-sys crate bundles (cargo fetches the crate from
  the machine's crate registry: ``tests/librdkafka_tree.py``) into the per-user cache,
  ``<cache>/rdkafka-performance-<crate version>/``, keyed by that version;
- Kafka's own ``org.apache.kafka.tools.ProducerPerformance`` (what
  ``kafka-producer-perf-test.sh`` runs) from the cached Kafka distribution's jars
  (``producer_core.brokers.kafka_dist``, which fetches kafka-tools beside the broker).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from producer_core.brokers.kafka_dist import KafkaDist
from producer_core.downloads import cache_root

BUILD_TIMEOUT_S = 1800
CONFIGURE_FLAGS = ("--disable-gssapi", "--disable-curl", "--disable-sasl")
"""What the tool needs none of on loopback, and what a bare build machine may lack."""

RDKAFKA_SETTINGS = {"linger.ms": "5"}
"""rdkafka_performance sets linger.ms=1000 itself (before reading -X); a fixed-count run
would then end with up to a second of lingering partial batches, time charged to the
tool's choice, not to librdkafka. 5 ms is librdkafka's own default and Java's (4.x)."""

_RDKAFKA_SUMMARY = re.compile(
    r"% (\d+) messages produced \((\d+) bytes\), (\d+) delivered \(offset -?\d+, (\d+) failed\) "
    r"in (\d+)ms: (\d+) msgs/s")
_PERF_SUMMARY = re.compile(
    r"^(\d+) records sent, ([\d.]+) records/sec \([\d.]+ MB/sec\), ([\d.]+) ms avg latency, "
    r"([\d.]+) ms max latency(?:, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th)?", re.MULTILINE)


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ------------------------------------------------------------------- rdkafka_performance


def rdkafka_crate_version() -> str:
    from tests.librdkafka_tree import CRATE_VERSION

    return CRATE_VERSION


def rdkafka_performance_path() -> Path:
    return cache_root() / f"rdkafka-performance-{rdkafka_crate_version()}" / "rdkafka_performance"


def rdkafka_performance(progress: Callable[[str], None] = _stderr) -> Path:
    """The built tool; built on first use (a few minutes), then taken from the cache."""
    target = rdkafka_performance_path()
    if target.is_file():
        return target
    from tests.librdkafka_tree import CRATE, fetch_tree

    target.parent.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.parent.name}-", dir=target.parent.parent))
    try:
        progress(f"Fetching librdkafka's sources ({CRATE} {rdkafka_crate_version()}, with "
                 "cargo from your crate registry)...")
        tree = fetch_tree(work)
        if tree is None:
            raise SystemExit("rdkafka_performance is built from librdkafka's sources, which "
                             "this script takes from the rdkafka-sys crate with cargo; cargo "
                             "is not installed (install Rust's toolchain), or leave the row "
                             "out with --rows.")
        jobs = str(os.cpu_count() or 1)
        steps = [(["bash", "./configure", *CONFIGURE_FLAGS], "configure"),
                 (["make", f"-j{jobs}", "-C", "src"], "make -C src (the library)"),
                 (["make", "-C", "examples", "rdkafka_performance"],
                  "make -C examples rdkafka_performance")]
        for command, what in steps:
            _build_step(command, tree, what, progress)
        out = work / "bin"
        out.mkdir()
        shutil.copy2(tree / "examples" / "rdkafka_performance", out / "rdkafka_performance")
        try:
            out.rename(target.parent)
        except OSError:
            if not target.is_file():  # not a concurrent build that won the race
                raise
        progress(f"rdkafka_performance cached in {target}.")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def _build_step(command: list[str], tree: Path, what: str,
                progress: Callable[[str], None]) -> None:
    """One build step, its progress (lines compiled) every few seconds on stderr."""
    progress(f"  {what}...")
    started = time.monotonic()
    log: list[str] = []
    with subprocess.Popen(command, cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, stdin=subprocess.DEVNULL) as proc:
        assert proc.stdout is not None
        shown = started
        for line in proc.stdout:
            log.append(line.rstrip())
            now = time.monotonic()
            if now - shown >= 10:
                shown = now
                progress(f"    {now - started:4.0f} s, {len(log)} lines of output")
            if now - started > BUILD_TIMEOUT_S:
                proc.kill()
        code = proc.wait()
    if code != 0:
        tail = "\n".join(log[-20:])
        raise SystemExit(f"Building rdkafka_performance failed at `{' '.join(command)}` "
                         f"(exit {code}; it needs a C compiler, make and OpenSSL's and "
                         f"zlib's headers). It said:\n{tail}")
    progress(f"    done in {time.monotonic() - started:.0f} s")


def rdkafka_command(tool: Path, bootstrap: str, topic: str, messages: int, size: int,
                    acks: str) -> list[str]:
    """One unthrottled run: `messages` values of `size` bytes, keyless (librdkafka's sticky
    partitioner), idempotence on with acks=all as Java's default has it."""
    settings = {**RDKAFKA_SETTINGS,
                "enable.idempotence": "true" if acks == "all" else "false"}
    cmd = [str(tool), "-P", "-t", topic, "-b", bootstrap, "-s", str(size), "-c", str(messages),
           "-a", acks]
    for key, value in settings.items():
        cmd += ["-X", f"{key}={value}"]
    return cmd


def parse_rdkafka(stdout: str) -> dict[str, Any] | None:
    """The last summary line: delivered, failed, the tool's own msg/s (delivered over the
    time from its first produce() to its last delivery report)."""
    found = list(_RDKAFKA_SUMMARY.finditer(stdout))
    if not found:
        return None
    produced, _bytes, delivered, failed, ms, per_s = (int(x) for x in found[-1].groups())
    return {"produced": produced, "acked": delivered, "failed": failed,
            "seconds": ms / 1000, "msgs_per_s": float(per_s)}


# ------------------------------------------------------------------- ProducerPerformance


TANSU_JAVA_PROPS = ("metadata.cluster.check.enable=false",)
"""kafka-clients 4.4's KIP-1242 cluster check sends ApiVersions v5, which the embedded
Tansu broker cannot read: it closes the connection and nothing is ever produced (see
producer_core/engine/drivers/kafka_java/cluster_check.py). Off, the client sends no ClusterId."""


def perf_command(dist: KafkaDist, bootstrap: str, topic: str, messages: int, size: int,
                 acks: str, extra_props: tuple[str, ...] = ()) -> list[str]:
    """One unthrottled run (`--throughput -1`) with the Java client's defaults but acks (and
    idempotence off with acks=1, which Java requires)."""
    props = [f"bootstrap.servers={bootstrap}", f"acks={acks}", *extra_props]
    if acks != "all":
        props.append("enable.idempotence=false")
    return [dist.java, "-Xmx512m", "-cp", dist.classpath,
            "org.apache.kafka.tools.ProducerPerformance", "--topic", topic,
            "--num-records", str(messages), "--record-size", str(size), "--throughput", "-1",
            "--producer-props", *props]


def parse_perf(stdout: str) -> dict[str, Any] | None:
    """The last (whole-run) summary line: records acknowledged and the tool's records/sec
    (over the time from its start to its last callback)."""
    found = list(_PERF_SUMMARY.finditer(stdout))
    if not found:
        return None
    records, per_s = int(found[-1].group(1)), float(found[-1].group(2))
    return {"acked": records, "msgs_per_s": per_s,
            "seconds": records / per_s if per_s > 0 else None, "failed": None}
