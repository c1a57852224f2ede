"""Spark scaling: aggregate throughput with 1 and 2 workers, and `kbatch analyze` time.

Part 1 (load): the same unthrottled workload (`--rate max` for `--seconds`) produced
  - by one engine in this process (`--runner local`, the reference),
  - with `--runner spark` on local[2] with 1 worker and with 2 workers,
each on a fresh embedded Tansu broker (it keeps every message in RAM). Reported:
acknowledged messages per second (acknowledged / the run's duration, the JSON's
`achieved_msgs_per_s`), each share's rate, and where the CPU went while the shares
produced (in cores, from /proc): the broker, the producing Python processes (this one
for local, Spark's Python workers for spark), Spark's JVM, and everything else on the
machine. On a machine with N cores the shares, the broker and Spark share those N.

Part 2 (analysis): `--runs` small saved runs (each `--run-seconds` at `--run-rate` msg/s,
mode partition, on one embedded broker) are written as results directories; then the
time `kbatch analyze` takes over 1 run and over all of them: the command end to end (a
new process: JVM start, job, Parquet out), and inside one session the job alone, cold
(first job of the session) and warm.

    python benchmarks/spark_scaling.py [--seconds 5] [--partitions 64] [--runs 10] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from producer_core import EmbeddedBroker, Workload, build_settings, run  # noqa: E402
from producer_core.analysis.analyze import analyze, find_runs, session_conf  # noqa: E402
from producer_core.distributed.plan import parse_master  # noqa: E402
from producer_core.distributed.session import spark_session  # noqa: E402
from producer_core.distributed.spark_runner import SparkRunner  # noqa: E402
from producer_core.results.results_io import RunRecorder, add_facts, write_results_dir  # noqa: E402
from producer_core.results.run_facts import run_document  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# ------------------------------------------------------------------ CPU accounting


def _stat(pid: int) -> tuple[int, str, float] | None:
    """(ppid, command name, CPU seconds) of a process, or None if it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    name = text[text.index("(") + 1:text.rindex(")")]
    fields = text.rsplit(")", 1)[1].split()
    return int(fields[1]), name, (int(fields[11]) + int(fields[12])) / TICKS


def _busy_seconds() -> float:
    """CPU seconds the machine's cores spent busy since boot."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]
    return (sum(values[:8]) - idle) / TICKS


def cpu_sample(broker_pid: int | None) -> dict[str, float]:
    """CPU seconds so far of: the broker, kbatch's Python processes, Spark's JVM, machine."""
    me = os.getpid()
    procs = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None:
                procs[int(entry.name)] = stat

    def descends(pid: int) -> bool:
        seen = 0
        while pid > 1 and seen < 64:
            if pid == me:
                return True
            pid = procs.get(pid, (0, "", 0.0))[0]
            seen += 1
        return False

    sample = {"broker": 0.0, "python": 0.0, "jvm": 0.0, "machine": _busy_seconds(),
              "time": time.monotonic()}
    for pid, (_, name, cpu) in procs.items():
        if pid == broker_pid:
            sample["broker"] += cpu
        elif pid == me or descends(pid):
            sample["jvm" if name == "java" else "python"] += cpu
    return sample


def cores(start: dict[str, float], end: dict[str, float]) -> dict[str, float]:
    wall = end["time"] - start["time"]
    used = {k: (end[k] - start[k]) / wall for k in ("broker", "python", "jvm", "machine")}
    used["other"] = max(0.0, used.pop("machine") - used["broker"] - used["python"] - used["jvm"])
    return {k: round(v, 2) for k, v in used.items()}


# ------------------------------------------------------------------ part 1: load


@dataclass
class Load:
    name: str
    workers: int
    acknowledged: int
    duration_s: float
    msgs_per_s: float
    share_msgs_per_s: list[float]
    requests_sent: int
    p99_ms: float
    cpu_cores: dict[str, float] = field(default_factory=dict)


class _Window:
    """Takes the CPU sample when the schedule starts (from progress ticks)."""

    def __init__(self, broker_pid: int | None) -> None:
        self.broker_pid = broker_pid
        self.start: dict[str, float] | None = None

    def __call__(self, progress: Any) -> None:
        if self.start is None and progress.elapsed_s >= 0:
            self.start = cpu_sample(self.broker_pid)


def measure_load(name: str, workers: int | None, runner: SparkRunner | None,
                 args: argparse.Namespace) -> Load:
    workload = Workload(topic=f"scaling-{name.replace(' ', '-')}", partitions=args.partitions,
                        rate=None, duration_s=args.seconds, message_size=args.size)
    settings = build_settings([], mode=args.mode)
    with EmbeddedBroker() as broker:
        window = _Window(broker.pid)
        if runner is None:
            results = run(workload, settings, args.mode, broker.bootstrap, window)
            shares = [results]
        else:
            outcome = runner.run_distributed(workload, settings, args.mode, broker.bootstrap,
                                             window)
            results, shares = outcome.results, outcome.shares
        end = cpu_sample(broker.pid)
    m = results.metrics
    return Load(
        name=name, workers=workers or 1, acknowledged=m.messages_acked,
        duration_s=round(results.duration_s, 3), msgs_per_s=round(results.achieved_rate),
        share_msgs_per_s=[round(s.achieved_rate) for s in shares],
        requests_sent=results.requests_sent, p99_ms=round(m.latency.percentile_ms(99), 1),
        cpu_cores=cores(window.start, end) if window.start else {},
    )


def part_load(args: argparse.Namespace) -> list[Load]:
    loads = []
    log(f"load: {args.seconds:g} s unthrottled, {args.partitions} partitions, "
        f"{args.size}-byte values, mode {args.mode}, on a machine with {os.cpu_count()} cores")
    log("  local (one engine in this process)...")
    loads.append(measure_load("local", None, None, args))
    started = time.monotonic()
    with SparkRunner(parse_master("local[2]"), 2, args.lead) as two, \
            _one_worker(two) as one:
        log(f"  Spark session local[2] started in {time.monotonic() - started:.1f} s")
        log("  spark, 1 worker...")
        loads.append(measure_load("spark 1 worker", 1, one, args))
        log("  spark, 2 workers...")
        loads.append(measure_load("spark 2 workers", 2, two, args))
    return loads


class _one_worker:  # noqa: N801 - a context manager named for what it yields
    """A 1-worker runner sharing the 2-worker runner's session (one JVM)."""

    def __init__(self, two: SparkRunner) -> None:
        self.runner = SparkRunner(two.master, 1, two.start_lead_s)
        self.runner.session = two.session

    def __enter__(self) -> SparkRunner:
        return self.runner

    def __exit__(self, *exc: object) -> None:
        self.runner.session = None  # the 2-worker runner stops it


# ------------------------------------------------------------------ part 2: analyze


def make_history(root: Path, args: argparse.Namespace) -> list[Path]:
    dirs = []
    with EmbeddedBroker() as broker:
        for index in range(args.runs):
            recorder = RunRecorder(run)
            workload = Workload(topic=f"history-{index}", partitions=16, rate=args.run_rate,
                                duration_s=args.run_seconds, seed=index + 1)
            results = recorder(workload, build_settings([("linger.ms", "5")]), "partition",
                               broker.bootstrap)
            results.broker = f"embedded Tansu broker at {broker.bootstrap}"
            document = run_document(results, files=True)
            add_facts(document, True)
            path = root / f"ci-{index:02d}"
            write_results_dir(path, document, [results])
            dirs.append(path)
    return dirs


def part_analyze(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="kbatch-analyze-bench-") as tmp:
        root = Path(tmp)
        log(f"analyze: writing {args.runs} runs ({args.run_seconds:g} s at "
            f"{args.run_rate:g} msg/s each)...")
        dirs = make_history(root / "history", args)
        entries_all, _ = find_runs(dirs)
        rows_one = pq.read_metadata(entries_all[0].row["requests_path"]).num_rows
        rows_all = sum(pq.read_metadata(e.row["requests_path"]).num_rows for e in entries_all)
        out: dict[str, Any] = {"runs": args.runs, "log_rows_1": rows_one,
                               "log_rows_all": rows_all}
        for label, inputs in (("1", dirs[:1]), ("all", [root / "history"])):
            log(f"  kbatch analyze over {1 if label == '1' else args.runs} run(s), a new "
                "process...")
            began = time.monotonic()
            proc = subprocess.run(
                [sys.executable, "-m", "cli.main", "analyze", *map(str, inputs), "--out",
                 str(root / f"cli-{label}"), "--spark-master", "local[2]"],
                capture_output=True, text=True, cwd=ROOT, timeout=600)
            if proc.returncode != 0:
                raise SystemExit(f"kbatch analyze failed: {proc.stderr}")
            out[f"cli_s_{label}"] = round(time.monotonic() - began, 1)
        log("  the job alone, in one session...")
        began = time.monotonic()
        with spark_session("local[2]", "bench", True, session_conf(2)) as session:
            out["session_start_s"] = round(time.monotonic() - began, 1)
            for label, entries in (("1_cold", entries_all[:1]), ("all", entries_all),
                                   ("1_warm", entries_all[:1]), ("all_warm", entries_all)):
                began = time.monotonic()
                analyze(session.spark, entries, root / f"job-{label}")
                out[f"job_s_{label}"] = round(time.monotonic() - began, 2)
        return out


# ------------------------------------------------------------------ output


def render(loads: list[Load], analysis: dict[str, Any] | None) -> str:
    lines = []
    if loads:
        lines.append("Aggregate throughput (unthrottled, acknowledged msgs/s; CPU in cores "
                     "while producing)")
        lines.append(f"{'runner':<17}{'msgs/s':>10}{'per share':>20}{'requests':>10}"
                     f"{'p99 ms':>9}{'broker':>8}{'python':>8}{'jvm':>6}{'other':>7}")
        base = loads[0].msgs_per_s or 1
        for load in loads:
            cpu = load.cpu_cores
            shares = " + ".join(f"{r:,}" for r in load.share_msgs_per_s)
            lines.append(
                f"{load.name:<17}{load.msgs_per_s:>10,}{shares:>20}{load.requests_sent:>10,}"
                f"{load.p99_ms:>9,.1f}{cpu.get('broker', 0):>8.2f}{cpu.get('python', 0):>8.2f}"
                f"{cpu.get('jvm', 0):>6.2f}{cpu.get('other', 0):>7.2f}"
                f"   {load.msgs_per_s / base:.2f}x local")
    if analysis:
        a = analysis
        lines.append("")
        lines.append(f"kbatch analyze (local[2]); log rows: 1 run {a['log_rows_1']:,}, "
                     f"{a['runs']} runs {a['log_rows_all']:,}")
        lines.append(f"  command end to end:  1 run {a['cli_s_1']:.1f} s, {a['runs']} runs "
                     f"{a['cli_s_all']:.1f} s")
        lines.append(f"  session start:       {a['session_start_s']:.1f} s")
        lines.append(f"  job, first (cold):   1 run {a['job_s_1_cold']:.2f} s, then "
                     f"{a['runs']} runs {a['job_s_all']:.2f} s")
        lines.append(f"  job, warm:           1 run {a['job_s_1_warm']:.2f} s, {a['runs']} "
                     f"runs {a['job_s_all_warm']:.2f} s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--partitions", type=int, default=64)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--mode", default="partition")
    parser.add_argument("--lead", type=float, default=4.0, help="--spark-start-lead")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--run-seconds", type=float, default=2.0)
    parser.add_argument("--run-rate", type=float, default=5000.0)
    parser.add_argument("--skip-load", action="store_true")
    parser.add_argument("--skip-analyze", action="store_true")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    loads = [] if args.skip_load else part_load(args)
    analysis = None if args.skip_analyze else part_analyze(args)
    print(render(loads, analysis))
    if args.json:
        args.json.write_text(json.dumps({"load": [asdict(x) for x in loads],
                                         "analyze": analysis}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
