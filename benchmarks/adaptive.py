"""Adaptive linger on one embedded broker: modes adaptive and aimd against fixed windows.

Three scenarios, each run on a fresh embedded Tansu broker (Tansu keeps every message in
memory), 100-byte keyless values, acks=1, kbatch's defaults otherwise:

1. low load: 100 msg/s over 16 partitions for 20 s: `none`, `adaptive`, and `broker`
   with broker.linger.ms=5. Acceptance: adaptive's latency p50 within 1 ms of none's and
   at least 4 ms below broker's (KIP-1224 saw < 1 ms commits at low load).
2. saturation: as fast as the engine goes (`rate=None`) for 10 s over 64 partitions:
   `none`, `adaptive`, `broker` (5 ms). Acceptance: adaptive's msgs_per_req and
   throughput at least broker's.
3. step load (`workloads/step-load.yaml`: 64 partitions, 1k -> 20k -> 1k msg/s, 10 s
   each): `broker` at 5 ms and at 100 ms, `aimd` with the seed's round-trip rules, and
   `aimd` with aimd.target.p99.ms=20. Latency percentiles per phase (by intended send
   time) and the window aimd chose, second by second.

    python benchmarks/adaptive.py [--low-seconds 20] [--saturation-seconds 10]
        [--step-workload workloads/step-load.yaml] [--target-p99-ms 20]
        [--only low,saturation,step] [--json PATH]

Per-phase latencies come from wrapping each run's policy (`on_acknowledged` sees every
acknowledged message's latency); nothing else about the run changes. Each row notes the
CPU other processes used meanwhile ("other load", cores): producer and broker share the
machine's cores, so a busy machine moves the figures; rerun disturbed rows.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(ROOT))

import producer_core.engine.drivers.engine_parts as engine_parts  # noqa: E402
from benchmarks.throughput import OtherLoad  # noqa: E402
from producer_core import EmbeddedBroker, Workload, build_settings, load_workload  # noqa: E402
from producer_core import run as engine_run  # noqa: E402


@dataclass
class Variant:
    label: str
    mode: str
    settings: dict[str, str] = field(default_factory=dict)


LOW = [Variant("none", "none"), Variant("adaptive", "adaptive"),
       Variant("broker 5 ms", "broker", {"broker.linger.ms": "5"})]
SATURATION = LOW


def step_variants(target_ms: int) -> list[Variant]:
    return [Variant("broker 5 ms", "broker", {"broker.linger.ms": "5"}),
            Variant("broker 100 ms", "broker", {"broker.linger.ms": "100"}),
            Variant("aimd", "aimd"),
            Variant(f"aimd p99<={target_ms}ms", "aimd", {"aimd.target.p99.ms": str(target_ms)})]


@dataclass
class Run:
    variant: Variant
    doc: dict[str, Any]
    other_cores: float | None
    latencies: np.ndarray
    """Per acknowledged message: (intended time from the start, latency), seconds."""


class _Recorder:
    """Wraps the policy a run creates, to keep every acknowledged message's latency."""

    def __init__(self) -> None:
        self.start = 0.0
        self.chunks: list[np.ndarray] = []

    def install(self) -> None:
        original = engine_parts.make_policy  # where the engine makes each run's policy
        recorder = self

        def make_policy(*args: Any, **kwargs: Any) -> Any:
            policy: Any = original(*args, **kwargs)  # given the hooks below
            # the hooks are opt-in capabilities (linger/base.py): the wrappers give every
            # policy both, and call the policy's own only where it has one
            begin = getattr(policy, "begin", None)
            acknowledged = getattr(policy, "on_acknowledged", None)

            def on_begin(start: float) -> None:
                recorder.start = start
                if begin is not None:
                    begin(start)

            def on_acknowledged(broker: int, latencies: Any, now: float) -> None:
                lat = np.asarray(latencies, dtype=np.float64)
                recorder.chunks.append(np.stack([now - lat - recorder.start, lat], axis=1))
                if acknowledged is not None:
                    acknowledged(broker, latencies, now)

            policy.begin = on_begin
            policy.on_acknowledged = on_acknowledged
            return policy

        engine_parts.make_policy = make_policy
        self._original = original

    def uninstall(self) -> None:
        engine_parts.make_policy = self._original

    def take(self) -> np.ndarray:
        data = np.concatenate(self.chunks) if self.chunks else np.zeros((0, 2))
        self.chunks = []
        return data


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def run_variant(variant: Variant, workload: Workload, recorder: _Recorder) -> Run:
    settings = build_settings(variant.settings, mode=variant.mode)
    with EmbeddedBroker() as broker:
        load = OtherLoad(broker.pid)
        recorder.install()
        try:
            results = engine_run(workload, settings, variant.mode, broker.bootstrap)
        finally:
            recorder.uninstall()
        other = load.cores()
    doc = results.to_dict()
    doc.pop("histograms", None)
    return Run(variant, doc, other, recorder.take())


def _f(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _other(run: Run) -> str:
    return _f(run.other_cores) if run.other_cores is not None else "?"


def run_table(runs: list[Run], throughput: bool = False) -> str:
    header = ["mode", "requests", "msgs/req", "msgs/s" if throughput else "sends/s",
              "latency p50 ms", "p99", "p99.9", "max",
              "batch linger p50 ms", "p99", "p99.9", "max", "other load"]
    rows = []
    for run in runs:
        d = run.doc
        lat, bl = d["latency"], d["batch_linger"]
        rate = (f"{d['rate']['achieved_msgs_per_s']:,.0f}" if throughput
                else f"{d['send_rate_per_s']:,.1f}")
        rows.append([run.variant.label, f"{d['requests_sent']:,}", f"{d['msgs_per_req']:,.1f}",
                     rate, _f(lat["p50_ms"]), _f(lat["p99_ms"]), _f(lat["p999_ms"]),
                     _f(lat["max_ms"]), _f(bl["p50_ms"], 3), _f(bl["p99_ms"], 3),
                     _f(bl["p999_ms"], 3), _f(bl["max_ms"], 3), _other(run)])
    return _table(header, rows)


def verdict(ok: bool) -> str:
    return "MET" if ok else "NOT MET"


# ------------------------------------------------------------------ scenarios
def low_load(seconds: float, recorder: _Recorder) -> tuple[str, dict[str, Any]]:
    workload = Workload(topic="adaptive-low", partitions=16, rate=100, duration_s=seconds)
    runs = []
    for variant in LOW:
        log(f"low load: {variant.label}, 100 msg/s, 16 partitions, {seconds:.0f} s...")
        runs.append(run_variant(variant, workload, recorder))
    p50 = {r.variant.label: r.doc["latency"]["p50_ms"] for r in runs}
    gap_none = p50["adaptive"] - p50["none"]
    gap_broker = p50["broker 5 ms"] - p50["adaptive"]
    text = [f"## 1. Low load: 100 msg/s, 16 partitions, {seconds:.0f} s\n", run_table(runs), "",
            f"- adaptive p50 {p50['adaptive']:.2f} ms vs none {p50['none']:.2f} ms: "
            f"{gap_none:+.2f} ms (need within 1 ms): {verdict(abs(gap_none) <= 1.0)}",
            f"- broker 5 ms p50 {p50['broker 5 ms']:.2f} ms is {gap_broker:.2f} ms above "
            f"adaptive (need >= 4 ms): {verdict(gap_broker >= 4.0)}"]
    return "\n".join(text), {"runs": [r.doc for r in runs]}


def saturation(seconds: float, recorder: _Recorder) -> tuple[str, dict[str, Any]]:
    workload = Workload(topic="adaptive-max", partitions=64, rate=None, duration_s=seconds)
    runs = []
    for variant in SATURATION:
        log(f"saturation: {variant.label}, unthrottled, 64 partitions, {seconds:.0f} s...")
        runs.append(run_variant(variant, workload, recorder))
    by = {r.variant.label: r.doc for r in runs}
    a, b = by["adaptive"], by["broker 5 ms"]
    mpr_ok = a["msgs_per_req"] >= b["msgs_per_req"]
    tput_a, tput_b = a["rate"]["achieved_msgs_per_s"], b["rate"]["achieved_msgs_per_s"]
    collector = a["collector"]
    text = [f"## 2. Saturation: unthrottled, 64 partitions, {seconds:.0f} s\n",
            run_table(runs, throughput=True), "",
            f"adaptive sends by reason: {collector['sends_by_reason']}; "
            f"flush tickets: {collector['flush_tickets']}", "",
            f"- msgs_per_req: adaptive {a['msgs_per_req']:,.1f} vs broker 5 ms "
            f"{b['msgs_per_req']:,.1f}: {verdict(mpr_ok)}",
            f"- throughput: adaptive {tput_a:,.0f} msg/s vs broker 5 ms {tput_b:,.0f} msg/s "
            f"({(tput_a / tput_b - 1) * 100 if tput_b else 0:+.1f}%): "
            f"{verdict(tput_a >= tput_b)}"]
    return "\n".join(text), {"runs": [r.doc for r in runs]}


def _phases(workload: Workload) -> list[tuple[float, float, float]]:
    """(start s, end s, rate) of each step of the first topic's profile."""
    steps = workload.topic_specs()[0].rate.steps
    phases, t = [], 0.0
    for rate, seconds in steps:
        phases.append((t, t + seconds, rate))
        t += seconds
    return phases


def _window_per_second(doc: dict[str, Any], seconds: int) -> list[float]:
    """Time-weighted mean window (ms) in each second, from the collector's points
    (one broker: the embedded broker)."""
    points = doc["collector"]["window_over_time"]
    times = np.array([p[0] for p in points], dtype=np.float64)
    windows = np.array([p[2] for p in points], dtype=np.float64)
    edges = np.arange(seconds + 1, dtype=np.float64)
    cumulative = np.concatenate(([0.0], np.cumsum(windows[:-1] * np.diff(times))))
    k = np.clip(np.searchsorted(times, edges, side="right") - 1, 0, None)
    integral = cumulative[k] + windows[k] * (edges - times[k])
    return (np.diff(integral) / np.diff(edges)).tolist()


def step_load(path: Path, target_ms: int, recorder: _Recorder) -> tuple[str, dict[str, Any]]:
    workload = load_workload(path)
    phases = _phases(workload)
    total = int(round(phases[-1][1]))
    runs = []
    for variant in step_variants(target_ms):
        log(f"step load: {variant.label}, {path.name}, {total} s...")
        runs.append(run_variant(variant, workload, recorder))
    phase_names = [f"{rate / 1000:g}k/s ({start:g}-{end:g} s)" for start, end, rate in phases]
    header = ["mode", "requests", "msgs/req", "p50 ms", "p99 ms", "p99.9 ms"]
    header += [f"p99 {name}" for name in phase_names] + ["other load"]
    rows = []
    extra: dict[str, Any] = {"runs": [r.doc for r in runs], "phase_p99_ms": {}}
    for run in runs:
        d = run.doc
        per_phase = []
        for start, end, _ in phases:
            last = end if end < phases[-1][1] else np.inf
            mask = (run.latencies[:, 0] >= start) & (run.latencies[:, 0] < last)
            values = run.latencies[mask, 1]
            per_phase.append(float(np.percentile(values, 99)) * 1000 if values.size else None)
        extra["phase_p99_ms"][run.variant.label] = per_phase
        rows.append([run.variant.label, f"{d['requests_sent']:,}", f"{d['msgs_per_req']:,.1f}",
                     _f(d["latency"]["p50_ms"]), _f(d["latency"]["p99_ms"]),
                     _f(d["latency"]["p999_ms"])] + [_f(v) for v in per_phase] + [_other(run)])
    text = [f"## 3. Step load: {path.name}, 64 partitions, "
            f"{' -> '.join(f'{rate / 1000:g}k' for _, _, rate in phases)} msg/s\n",
            _table(header, rows), ""]
    aimd_runs = [r for r in runs if r.variant.mode == "aimd"]
    seconds = [run_seconds for run_seconds in range(total)]
    series = {r.variant.label: _window_per_second(r.doc, total) for r in aimd_runs}
    extra["window_per_second_ms"] = series
    text.append("Window aimd chose (time-weighted mean per second, ms; load phase in brackets):\n")
    rows = []
    for second in seconds:
        rate = next(rate for start, end, rate in phases if start <= second < end)
        rows.append([f"{second}-{second + 1} s [{rate / 1000:g}k/s]"]
                    + [_f(series[label][second]) for label in series])
    text.append(_table(["second"] + list(series), rows))
    for run in aimd_runs:
        broker = next(iter(run.doc["collector"]["aimd"]["brokers"].values()))
        text.append(f"\n{run.variant.label}: window {broker['window_ms']}, "
                    f"increases {broker['increases']}, decreases {broker['decreases']}, "
                    f"rtt ema {broker['rtt_ema_ms']} ms, baseline {broker['rtt_baseline_ms']} ms, "
                    f"last p99 {broker['last_p99_ms']} ms")
    by = {r.variant.label: extra["phase_p99_ms"][r.variant.label] for r in runs}
    p99 = {r.variant.label: r.doc["latency"]["p99_ms"] for r in runs}
    text.append("\np99 overall: " + ", ".join(f"{k} {v:.1f} ms" for k, v in p99.items()))
    text.append("p99 per phase: " + "; ".join(
        f"{k} " + "/".join(_f(v, 1) for v in vals) for k, vals in by.items()))
    return "\n".join(text), extra


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--low-seconds", type=float, default=20.0)
    parser.add_argument("--saturation-seconds", type=float, default=10.0)
    parser.add_argument("--step-workload", type=Path, default=ROOT / "workloads/step-load.yaml")
    parser.add_argument("--target-p99-ms", type=int, default=20)
    parser.add_argument("--only", default="low,saturation,step")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    recorder = _Recorder()
    print(f"# Adaptive linger benchmark ({os.cpu_count()} cores, one embedded Tansu broker "
          "per run)\n")
    document: dict[str, Any] = {}
    for name, scenario in (
        ("low", lambda: low_load(args.low_seconds, recorder)),
        ("saturation", lambda: saturation(args.saturation_seconds, recorder)),
        ("step", lambda: step_load(args.step_workload, args.target_p99_ms, recorder)),
    ):
        if name not in only:
            continue
        text, data = scenario()
        document[name] = data
        print(text + "\n", flush=True)
    if args.json:
        args.json.write_text(json.dumps(document, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
