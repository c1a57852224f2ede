"""Where kbatch's engine spends its time unthrottled (issue 48, item 2): a profile of one run.

    python benchmarks/profile_engine.py [--mode none] [--messages 1000000] [--partitions 64]
        [--acks all] [--top 25] [--profiler cprofile|py-spy] [--save PATH]

Starts one fresh embedded Tansu broker, creates a topic (every leader elected), then runs
kbatch's engine in `--mode` at rate max for `--messages` 100-byte keyless values (as
`client_throughput.py`'s kbatch rows do) under a profiler, and prints the top functions
by cumulative time and by self time, each as a share of the run's total:

- `cprofile` (default; the standard library): a deterministic profile of the engine run
  only (`run()`; the engine runs on this thread's event loop). It counts every call, so
  functions called per message weigh more than they do unprofiled: read its shares as
  where the calls are, and its msg/s as the profiler's, not the engine's;
- `py-spy` (in the `bench` extra, or `pip install py-spy`; it needs to ptrace its child): a sampling
  profile (`--rate` per second) of a child process running the same engine run, which
  barely slows it. Only samples of the engine's run are counted (stacks through the
  child's `engine_run`, but not through an import or the engine's `_setup`: connecting,
  metadata, producer id); the child's start, imports and exit are left out.

`--save PATH` keeps the raw profile (cProfile's pstats file, or py-spy's collapsed stacks).
The machine's load (`uptime`) is printed: a loaded machine stretches the times, the shares
much less.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(ROOT))

RUN_FRAME = "engine_run ("
"""A py-spy stack is the engine run's when it passes through this script's `engine_run`..."""
SETUP_FRAMES = ("_find_and_load", "Engine._setup ")
"""...and through none of these: an import, the engine's connecting and producer id."""
SETUP_FILE = "producer_core/engine/drivers/engine.py"
LINE = re.compile(r":\d+\)$")
EXIT_USAGE = 2


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def engine_run(args: argparse.Namespace, bootstrap: str, topic: str,
               profiler: cProfile.Profile | None = None) -> dict[str, Any]:
    """One unthrottled run of the engine (profiled when `profiler` is given); the engine's
    module is imported before (`run`), so the profile holds the run, not that import."""
    from producer_core import Workload, build_settings, run

    workload = Workload(topic=topic, partitions=args.partitions, rate=None, duration_s=None,
                        messages=args.messages, message_size=args.size)
    settings = build_settings([("acks", args.acks), ("enable.idempotence",
                                                     "true" if args.acks == "all" else "false")],
                              mode=args.mode)
    if profiler is not None:
        profiler.enable()
    try:
        results = run(workload, settings, args.mode, bootstrap)
    finally:
        if profiler is not None:
            profiler.disable()
    return {"acked": results.metrics.messages_acked, "failed": results.metrics.messages_failed,
            "seconds": results.duration_s, "msgs_per_s": results.achieved_rate,
            "requests": results.requests_sent}


async def _create(bootstrap: str, topic: str, partitions: int) -> None:
    from producer_core.engine.transport.transport import Cluster

    cluster = Cluster(bootstrap, client_id="kbatch-profile")
    try:
        await cluster.connect()
        await cluster.ensure_topic(topic, partitions, timeout_s=60)
    finally:
        await cluster.close()


# ----------------------------------------------------------------------------- shares


def cprofile_tables(stats: pstats.Stats, top: int) -> tuple[float, list[tuple[str, float,
                                                                              float, int]],
                                                             list[tuple[str, float, float,
                                                                        int]]]:
    """(total s, top by cumulative, top by self): (function, seconds, share, calls)."""
    table = stats.stats  # type: ignore[attr-defined]  # pstats keeps its table here
    total = sum(tt for (_cc, _nc, tt, _ct, _callers) in table.values()) or 1e-9
    rows = [(_name(key), tt, ct, nc) for key, (_cc, nc, tt, ct, _callers) in table.items()]
    by_cum = sorted(rows, key=lambda r: r[2], reverse=True)[:top]
    by_self = sorted(rows, key=lambda r: r[1], reverse=True)[:top]
    return (total, [(n, ct, ct / total, nc) for n, _tt, ct, nc in by_cum],
            [(n, tt, tt / total, nc) for n, tt, _ct, nc in by_self])


def _name(key: tuple[str, int, str]) -> str:
    file, line, function = key
    if file == "~":  # a built-in
        return function
    for marker in ("/producer_core/", "/site-packages/", "/lib/python"):
        if marker in file:
            file = file.split(marker, 1)[1] if marker != "/producer_core/" else (
                "producer_core/" + file.split(marker, 1)[1])
            break
    return f"{function} ({file}:{line})"


def in_run(frames: list[str]) -> bool:
    """Whether a sampled stack is the engine's run (RUN_FRAME, none of SETUP_FRAMES)."""
    return any(f.startswith(RUN_FRAME) for f in frames) and not any(
        marker in f for f in frames for marker in SETUP_FRAMES)


def collapsed_shares(text: str, top: int
                     ) -> tuple[int, int, list[tuple[str, int, float]], list[tuple[str, int,
                                                                                  float]]]:
    """From py-spy's collapsed stacks (`frame;frame;... count` a line, root first): (samples
    in the engine run (`in_run`), samples left out, top by cumulative, top by self), each
    entry (function, samples, share of the run's samples). A function on a stack twice
    (recursion) counts once for that stack's cumulative time."""
    cumulative: Counter[str] = Counter()
    own: Counter[str] = Counter()
    kept = left = 0
    for line in text.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = stack.split(";")
        if not in_run(frames):
            left += count
            continue
        kept += count
        names = [LINE.sub(")", f) for f in frames]  # a function, whichever of its lines
        for name in set(names):
            cumulative[name] += count
        own[names[-1]] += count
    total = kept or 1
    return (kept, left,
            [(n, c, c / total) for n, c in cumulative.most_common(top)],
            [(n, c, c / total) for n, c in own.most_common(top)])


def table(title: str, rows: list[tuple[str, float, float, int]] | list[tuple[str, int, float]],
          unit: str) -> str:
    out = [f"\n### {title}\n", f"| share | {unit} | function |", "|---:|---:|---|"]
    for row in rows:
        name, amount, share = row[0], row[1], row[2]
        figure = f"{amount:.3f}" if isinstance(amount, float) else f"{amount:,}"
        calls = f" ({row[3]:,} calls)" if len(row) > 3 else ""
        out.append(f"| {share:6.1%} | {figure} | `{name}`{calls} |")
    return "\n".join(out)


# ------------------------------------------------------------------------------- runs


def with_cprofile(args: argparse.Namespace, bootstrap: str, topic: str) -> None:
    profiler = cProfile.Profile()
    figures = engine_run(args, bootstrap, topic, profiler)
    stats = pstats.Stats(profiler)
    if args.save is not None:
        stats.dump_stats(args.save)
        log(f"wrote {args.save} (pstats)")
    total, by_cum, by_self = cprofile_tables(stats, args.top)
    print(summary(args, figures, "cProfile (msg/s slowed by the profiler)"))
    setup = sum(ct for (file, _line, name), (_cc, _nc, _tt, ct, _callers)
                in stats.stats.items()  # type: ignore[attr-defined]
                if name == "_setup" and file.endswith(SETUP_FILE))
    print(f"\nProfiled time: {total:.2f} s (the engine run), of which the engine's setup "
          f"(connecting, metadata, producer id): {setup / total:.1%}.")
    print(table(f"Top {args.top} by cumulative time (share of the profiled time)", by_cum, "s"))
    print(table(f"Top {args.top} by self time (share of the profiled time)", by_self, "s"))


def with_py_spy(args: argparse.Namespace, bootstrap: str, topic: str) -> int:
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(spy).is_file():
        print("--profiler py-spy needs py-spy, which is not installed: `pip install py-spy` "
              "(or `pip install -e '.[bench]'`), or use the default --profiler cprofile.",
              file=sys.stderr)
        return EXIT_USAGE
    out = Path(tempfile.mkdtemp()) / "stacks.txt"
    result = out.with_name("result.json")
    cmd = [spy, "record", "--format", "raw", "--rate", str(args.rate), "--output", str(out),
           "--", sys.executable, str(Path(__file__).resolve()), "--child", "--bootstrap",
           bootstrap, "--topic", topic, "--result", str(result), "--mode", args.mode,
           "--messages", str(args.messages), "--partitions", str(args.partitions),
           "--size", str(args.size), "--acks", args.acks]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0 or not out.is_file() or not result.is_file():
        print(f"py-spy could not profile the run (exit {proc.returncode}; it needs permission "
              "to ptrace its child: CAP_SYS_PTRACE, or kernel.yama.ptrace_scope 0 or 1). "
              f"It said:\n{(proc.stdout + proc.stderr).strip()[-2000:]}", file=sys.stderr)
        return 1
    text = out.read_text()
    if args.save is not None:
        args.save.write_text(text)
        log(f"wrote {args.save} (collapsed stacks)")
    kept, left, by_cum, by_self = collapsed_shares(text, args.top)
    print(summary(args, json.loads(result.read_text()), f"py-spy at {args.rate} samples/s"))
    print(f"\nSamples in the engine run: {kept:,} (left out: {left:,} outside it: imports, "
          "setup, exit).")
    print(table(f"Top {args.top} by cumulative samples (share of the run's)", by_cum,
                "samples"))
    print(table(f"Top {args.top} by self samples (share of the run's)", by_self, "samples"))
    return 0


def summary(args: argparse.Namespace, figures: dict[str, Any], how: str) -> str:
    return (f"## kbatch mode {args.mode}, unthrottled: {args.messages:,} messages of "
            f"{args.size} bytes, {args.partitions} partitions, acks={args.acks}, one "
            f"embedded Tansu broker; {how}\n\n{figures['acked']:,} acknowledged "
            f"({figures['failed']:,} failed) in {figures['seconds']:.2f} s = "
            f"{figures['msgs_per_s']:,.0f} msg/s, {figures['requests']:,} requests.")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--mode", default="none", help="kbatch mode (default none)")
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=64)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--acks", choices=("1", "all"), default="all")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--profiler", choices=("cprofile", "py-spy"), default="cprofile")
    parser.add_argument("--rate", type=int, default=500, help="py-spy's samples per second")
    parser.add_argument("--save", type=Path, default=None, help="keep the raw profile here")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    parser.add_argument("--topic", help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.messages < 1 or args.partitions < 1 or args.size < 1 or args.top < 1 or (
            args.rate < 1):
        parser.error("--messages, --partitions, --size, --top and --rate must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:  # py-spy's child: the run alone, its figures to --result
        args.result.write_text(json.dumps(engine_run(args, args.bootstrap, args.topic)))
        return 0
    from producer_core import EmbeddedBroker, KbatchError, build_settings

    try:
        build_settings([], mode=args.mode)  # an unknown mode: its one-paragraph error, now
    except KbatchError as exc:
        print(f"--mode {args.mode}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    load = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout
    log(f"load: {load.strip()}")
    with EmbeddedBroker() as broker:
        topic = f"profile-{args.mode}-{time.time_ns()}"
        asyncio.run(_create(broker.bootstrap, topic, args.partitions))
        log(f"Tansu at {broker.bootstrap}; profiling {args.messages:,} messages in mode "
            f"{args.mode} with {args.profiler}...")
        if args.profiler == "py-spy":
            code = with_py_spy(args, broker.bootstrap, topic)
        else:
            with_cprofile(args, broker.bootstrap, topic)
            code = 0
    after = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout
    print(f"\nLoad before: `{load.strip()}`; after: `{after.strip()}`.")
    return code


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
