"""`kbatch sweep`, the pure part: the grid of cells, the SLO, the Pareto frontier, the
recommendation and the resume bookkeeping. No I/O, no clock: the CLI runs the cells.

A cell is one mode with one value per axis: its linger window (the mode's own window
setting, see `WINDOW_KNOBS`), optionally a rate, and any `-X` setting given with `--axis`.
An axis whose setting does not apply to a mode (``SettingSpec.modes``) is not multiplied
into that mode's cells, so `--axis broker.batch.max.partitions=-1,100` does not run mode
partition twice with identical settings.
"""

from __future__ import annotations

import itertools
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from producer_core.config import SETTINGS, build_settings, parse_assignment
from producer_core.engine.modes import mode as mode_spec
from producer_core.engine.modes.versions import parse_label
from producer_core.errors import UsageError

# --------------------------------------------------------------------------- windows


def window_knob(mode: str) -> str | None:
    """The setting a `--windows` value goes to: compare-modes' `linger_knob` (linger.ms,
    broker.linger.ms, bruce.combined.max.delay.ms), the upper bound of the window for
    adaptive and aimd, and none for mode none (linger 0 by definition: it runs once);
    declared per mode in `producer_core.engine.modes`."""
    return mode_spec(mode).sweep_window


def window_assignments(mode: str, window: int) -> list[tuple[str, str]]:
    """The settings for `window` ms in `mode` (aimd: also lowers its min and initial
    window when the cap is below them, so every cap is a valid configuration)."""
    knob = window_knob(mode)
    if knob is None:
        return []
    pairs = [(knob, str(window))]
    if mode == "aimd":
        for key in ("aimd.linger.min.ms", "aimd.linger.initial.ms"):
            if SETTINGS[key].default > window:
                pairs.append((key, str(window)))
    return pairs


# --------------------------------------------------------------------------- grid


def _slug(value: str) -> str:
    """A value as a word (gate metric names are `\\w` words joined by dots): 0.5 -> 0p5,
    -1 -> m1."""
    return re.sub(r"\W", "_", value.replace(".", "p").replace("-", "m"))


@dataclass(frozen=True)
class Cell:
    """One point of the grid. `window` None: the mode has no window (mode none)."""

    mode: str
    window: int | None = None
    rate: float | None = None  # None: the workload's own rate
    axes: tuple[tuple[str, str], ...] = ()

    @property
    def window_key(self) -> str | None:
        return window_knob(self.mode) if self.window is not None else None

    @property
    def id(self) -> str:
        """A word (gate metrics are MODE.NAME), unique within a sweep: broker_w35_partitions_m1."""
        label = parse_label(self.mode)  # kafka-java@3.9.1 -> kafka-java_v3p9p1
        parts = [label.base if label.version is None else f"{label.base}_v{_slug(label.version)}"]
        if self.window is not None:
            parts.append(f"w{self.window}")
        if self.rate is not None:
            parts.append(f"r{_slug(f'{self.rate:g}')}")
        for key, value in self.axes:
            parts.append(f"{key.split('.')[-1]}_{_slug(value)}")
        return "_".join(parts)

    @property
    def label(self) -> str:
        """Human form: `mode broker, broker.linger.ms=35, broker.batch.max.partitions=100`."""
        parts = [f"mode {self.mode}"]
        if self.window is not None:
            parts.append(f"{self.window_key}={self.window}")
        if self.rate is not None:
            parts.append(f"rate {self.rate:,.0f} msg/s")
        parts += [f"{k}={v}" for k, v in self.axes]
        return ", ".join(parts)

    def assignments(self) -> list[tuple[str, str]]:
        window = [] if self.window is None else window_assignments(self.mode, self.window)
        return [*window, *self.axes]

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "mode": self.mode, "window_key": self.window_key,
                "window_ms": self.window, "rate": self.rate,
                "axes": {k: v for k, v in self.axes}}


def parse_int_list(text: str, option: str) -> list[int]:
    try:
        values = [int(v) for v in _items(text)]
    except ValueError:
        raise UsageError(f"{option} {text!r} is not a list of whole milliseconds, for "
                         f"example {option} 0,1,5,20,100.") from None
    if not values or any(v < 0 or v > 900_000 for v in values):
        raise UsageError(f"{option} {text!r}: give one or more windows from 0 to 900000 ms.")
    return sorted(set(values))


def parse_rate_list(text: str) -> list[float]:
    try:
        values = [float(v) for v in _items(text)]
    except ValueError:
        raise UsageError(f"--rates {text!r} is not a list of messages per second, for "
                         "example --rates 5000,20000.") from None
    if not values or any(not v > 0 or v == float("inf") for v in values):
        raise UsageError(f"--rates {text!r}: every rate must be a positive number.")
    return sorted(set(values))


def _items(text: str) -> list[str]:
    return [v.strip() for v in text.split(",") if v.strip()]


def parse_axis(text: str) -> tuple[str, list[str]]:
    """`KEY=V1,V2,...` -> (KEY, [V1, V2, ...]); the key must be a known setting."""
    key, values_text = parse_assignment(text)
    values = list(dict.fromkeys(_items(values_text)))
    if key not in SETTINGS:
        raise UsageError(f"--axis {text!r}: unknown setting {key!r}. Known settings: "
                         f"{', '.join(sorted(SETTINGS))}.")
    if not values:
        raise UsageError(f"--axis {text!r} has no values; write KEY=V1,V2,...")
    return key, values


def applies(key: str, mode: str) -> bool:
    modes = SETTINGS[key].modes
    return not modes or mode in modes


def expand_grid(modes: Sequence[str], windows: Sequence[int],
                rates: Sequence[float] = (),
                axes: Sequence[tuple[str, Sequence[str]]] = ()) -> list[Cell]:
    """Every cell, mode by mode, in the order given (windows ascending)."""
    window_keys = {window_knob(m) for m in modes} - {None}
    for key, _ in axes:
        if key in window_keys:
            raise UsageError(f"--axis {key}=... is the window setting of a swept mode; give "
                             "its values with --windows.")
    if len({key for key, _ in axes}) != len(axes):
        raise UsageError("--axis names the same setting twice.")
    cells: list[Cell] = []
    for mode in modes:
        mode_windows: list[int | None] = list(windows) if window_knob(mode) else [None]
        mode_rates: list[float | None] = list(rates) or [None]
        mode_axes = [[(key, v) for v in values] for key, values in axes if applies(key, mode)]
        for window in mode_windows:  # the order of itertools.product over all three
            for rate in mode_rates:
                for chosen in itertools.product(*mode_axes):
                    cells.append(Cell(mode, window, rate, chosen))
    return cells


def check_cells(cells: Sequence[Cell], common: Sequence[tuple[str, str]]) -> None:
    """Build every cell's settings before anything runs: a bad cell fails the sweep now."""
    for cell in cells:
        try:
            build_settings([*common, *cell.assignments()], mode=cell.mode)
        except UsageError as exc:
            raise UsageError(f"Cell {cell.label}: {exc}") from None


# --------------------------------------------------------------------------- SLO

SLO_METRICS = {"p50": "p50_ms", "p95": "p95_ms", "p99": "p99_ms", "p999": "p999_ms",
               "p99.9": "p999_ms", "max": "max_ms"}
E2E_SLO_METRICS = {f"e2e_{name}": f"e2e_{field}" for name, field in SLO_METRICS.items()}
"""End-to-end latency objectives (`--slo 'e2e_p99<=200ms'`): cells run with --consume."""
_SLO = re.compile(r"^\s*(?P<metric>[a-z0-9._]+)\s*(?P<op><=|<)\s*(?P<value>\d+(?:\.\d+)?)"
                  r"\s*(?P<unit>ms|s)?\s*$")


@dataclass(frozen=True)
class Slo:
    """A latency objective: `metric` (a latency field) `<=` or `<` `limit_ms`."""

    metric: str
    strict: bool
    limit_ms: float
    text: str

    def holds(self, value_ms: float) -> bool:
        return value_ms < self.limit_ms if self.strict else value_ms <= self.limit_ms

    @property
    def name(self) -> str:
        return self.metric.removesuffix("_ms").replace("p999", "p99.9")

    @property
    def end_to_end(self) -> bool:
        """An objective on end-to-end latency: the cells must run with consumers."""
        return self.metric.startswith("e2e_")


def parse_slo(text: str) -> Slo:
    match = _SLO.match(text.lower())
    known = {**SLO_METRICS, **E2E_SLO_METRICS}
    if not match or match["metric"] not in known:
        raise UsageError(f"--slo {text!r} is not a latency objective: write METRIC<=LIMIT "
                         f"with METRIC one of {', '.join(SLO_METRICS)} (ack latency) or "
                         f"e2e_p50, e2e_p99, ... (end-to-end, with --consume) and LIMIT in "
                         "ms or s, for example --slo p99<=50ms.")
    limit = float(match["value"]) * (1000.0 if match["unit"] == "s" else 1.0)
    return Slo(known[match["metric"]], match["op"] == "<", limit, text.strip())


# --------------------------------------------------------------------------- cell figures


def run_figures(run: Mapping[str, Any]) -> dict[str, float]:
    """The figures of one run a sweep ranks by."""
    duration = float(run["duration_s"]) or 1e-9
    bytes_per_request = run["bytes_per_request"]
    if isinstance(bytes_per_request, Mapping):
        bytes_per_request = bytes_per_request["mean"]
    latency = run["latency"]
    rate = run["rate"]
    return {
        "requests_per_s": run["requests_sent"] / duration,
        "requests_sent": float(run["requests_sent"]),
        "msgs_per_req": float(run["msgs_per_req"]),
        "bytes_per_request": float(bytes_per_request),
        **{key: float(latency[key]) for key in sorted(set(SLO_METRICS.values()))},
        **{f"e2e_{key}": float(run["e2e_latency"][key]) for key in
           sorted(set(SLO_METRICS.values())) if "e2e_latency" in run},
        "failed": float(run["messages"]["failed"]),
        "achieved_msgs_per_s": float(rate["achieved_msgs_per_s"]),
        "generator_lag_p99_ms": float(run.get("generator_lag", {}).get("p99_ms", 0.0)),
        **broker_figures(run),
    }


#: What a sweep's recommendation minimises (--minimize): the figure it ranks passing cells by.
OBJECTIVES = {"requests": "requests_per_s", "broker-cpu": "broker_cpu_s_per_million_msgs"}


def broker_figures(run: Mapping[str, Any]) -> dict[str, float]:
    """The run's broker cost figures (measure/broker_cost.py) that were measured."""
    cost = run.get("broker_cost") or {}
    kafka = cost.get("kafka") or {}
    values = {
        "broker_cpu_s_per_million_msgs": (cost.get("broker") or {}).get("cpu_s_per_million_msgs"),
        "broker_handler_idle_pct": kafka.get("request_handler_idle_pct"),
        "broker_produce_p99_ms": ((kafka.get("produce_time_ms") or {}).get("total") or {}
                                  ).get("p99"),
    }
    return {k: float(v) for k, v in values.items() if v is not None}


LOAD_MET_RATIO = 0.9
"""A run that acknowledged less than this share of its target within its schedule's
window did not carry the load the cell asked for (the machine, not the window, set its
latency): the cell is failed."""


def load_shortfall(run: Mapping[str, Any]) -> str | None:
    """Why a run's load was not met, or None (unthrottled runs have no target). The
    figure is acknowledgements within the schedule's window (`rate.acked_msgs_per_s`;
    older documents: `achieved_msgs_per_s`), with what was sent beside it: a generator
    that fell behind and a producer whose backlog grew both show."""
    rate = run["rate"]
    target = rate.get("target_msgs_per_s")
    acked = float(rate.get("acked_msgs_per_s", rate["achieved_msgs_per_s"]))
    if target is None or acked >= LOAD_MET_RATIO * float(target):
        return None
    sent = rate.get("sent_msgs_per_s")
    sent_text = f" ({float(sent):,.0f} sent)" if sent is not None else ""
    lag = run.get("generator_lag", {}).get("p99_ms")
    lag_text = f", generator lag p99 {lag:,.0f} ms" if lag is not None else ""
    return (f"load not met: {acked:,.0f} of {float(target):,.0f} msg/s acknowledged in the "
            f"schedule's window{sent_text}{lag_text}; the producer's backlog, not the "
            "window, set its latency")


@dataclass
class CellResult:
    """A cell's runs (one per repeat) and the repeats that failed to run."""

    cell: Cell
    runs: list[Mapping[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Ran every time, got the load it asked for, and delivered every message."""
        return bool(self.runs) and not self.errors and all(
            run_figures(r)["failed"] == 0 and load_shortfall(r) is None for r in self.runs)

    @property
    def status(self) -> str:
        if not self.runs and not self.errors:
            return "pending"
        return "ok" if self.ok else "failed"

    def reason(self) -> str | None:
        if self.errors:
            return self.errors[-1]
        failed = sum(int(run_figures(r)["failed"]) for r in self.runs)
        if failed:
            return f"{failed:,} messages failed"
        return next(filter(None, map(load_shortfall, self.runs)), None)

    def figure(self, name: str, stat: str = "median") -> float:
        values = [run_figures(r)[name] for r in self.runs]
        if stat == "min":
            return min(values)
        if stat == "max":
            return max(values)
        return float(statistics.median(values))

    def has(self, name: str) -> bool:
        """Every run has this figure (end-to-end latency: only runs whose consumers read)."""
        return bool(self.runs) and all(name in run_figures(r) for r in self.runs)

    def spread(self) -> dict[str, dict[str, float]]:
        names = [n for n in run_figures(self.runs[0]) if self.has(n)] if self.runs else ()
        return {n: {s: self.figure(n, s) for s in ("median", "min", "max")} for n in names}


# --------------------------------------------------------------------------- frontier


def pareto(points: Sequence[tuple[str, float, float]]) -> list[str]:
    """Ids of the points no other point beats on both axes (both lower-is-better),
    ordered by the first axis. Ties on both axes keep every tied point."""
    frontier = []
    for pid, x, y in points:
        dominated = any(ox <= x and oy <= y and (ox < x or oy < y)
                        for oid, ox, oy in points if oid != pid)
        if not dominated:
            frontier.append((x, y, pid))
    return [pid for _, _, pid in sorted(frontier)]


def frontiers(results: Sequence[CellResult], latency: str = "p99_ms") -> dict[str, list[str]]:
    """Pareto frontiers over the cells that ran cleanly (medians over repeats):
    requests/s against `latency`, and bytes per request (higher is better) against it."""
    good = [r for r in results if r.ok and r.has(latency)]
    return {
        "requests_per_s": pareto([(r.cell.id, r.figure("requests_per_s"), r.figure(latency))
                                  for r in good]),
        "bytes_per_request": pareto([(r.cell.id, -r.figure("bytes_per_request"),
                                      r.figure(latency)) for r in good]),
    }


# --------------------------------------------------------------------------- recommendation


def meets(result: CellResult, slo: Slo) -> bool:
    """The SLO holds in every repeat (the worst repeat decides)."""
    return result.ok and result.has(slo.metric) and slo.holds(result.figure(slo.metric, "max"))


TIE_RATIO = 0.02
"""Without repeats, cells whose cost (requests/s, or broker CPU) differs by less than this
share are tied: one run cannot tell 200.412 from 200.385 requests/s apart from noise."""

OBJECTIVE_NAMES = {"requests_per_s": "requests/s",
                   "broker_cpu_s_per_million_msgs": "broker CPU per million messages"}


@dataclass(frozen=True)
class Choice:
    """The recommended cell and, when its cost tied with others', how it won."""

    cell: CellResult
    tied: tuple[CellResult, ...] = ()
    tie_rule: str = ""  # why the figures count as tied
    tie_break: str = ""  # what decided among them
    objective: str = "requests_per_s"


def ties(best: CellResult, other: CellResult, objective: str = "requests_per_s") -> bool:
    """Noise cannot tell the two cells' cost apart: with repeats, the medians differ by
    less than the wider of the two measured spreads (max - min); without, by under 2%."""
    low, high = sorted((best.figure(objective), other.figure(objective)))
    if len(best.runs) > 1 and len(other.runs) > 1:
        spread = max(best.figure(objective, "max") - best.figure(objective, "min"),
                     other.figure(objective, "max") - other.figure(objective, "min"))
        return high - low <= spread
    return high - low < TIE_RATIO * max(high, 1e-9)


def _simplicity(result: CellResult) -> tuple[float, int]:
    """Lower is simpler: the shorter window (no window is 0), then fewer extra settings."""
    return (float(result.cell.window or 0), len(result.cell.axes))


def _choose(results: Sequence[CellResult], slo: Slo, objective: str = "requests_per_s"
            ) -> Choice | None:
    """The cell with the lowest cost (`objective`) that meets the SLO; cells tied with it on
    cost (see `ties`) are ranked by lower latency, then by the simpler setting."""
    passing = [r for r in results if meets(r, slo)
               and all(objective in run_figures(run) for run in r.runs)]
    if not passing:
        return None
    cheapest = min(passing, key=lambda r: (r.figure(objective), r.figure(slo.metric),
                                           _simplicity(r)))
    tied = [r for r in passing if r is cheapest or ties(cheapest, r, objective)]
    if len(tied) == 1:
        return Choice(cheapest, objective=objective)
    chosen = min(tied, key=lambda r: (r.figure(slo.metric), _simplicity(r)))
    rule = ("differ by less than their spread over the repeats"
            if all(len(r.runs) > 1 for r in tied) else
            f"differ by under {TIE_RATIO:.0%}")
    best_latency = min(r.figure(slo.metric) for r in tied)
    by_latency = [r for r in tied if r.figure(slo.metric) == best_latency]
    reason = (f"lower {slo.name}" if len(by_latency) == 1 else
              "the same latency and the simpler setting")
    return Choice(chosen, tuple(r for r in tied if r is not chosen), rule, reason, objective)


def _best(results: Sequence[CellResult], slo: Slo, objective: str = "requests_per_s"
          ) -> CellResult | None:
    choice = _choose(results, slo, objective)
    return None if choice is None else choice.cell


def _tie_text(choice: Choice, slo: Slo) -> str:
    others = "; ".join(f"{r.cell.label}: {_figures_text(r, slo)}" for r in choice.tied)
    return (f" (chosen among ties: its {OBJECTIVE_NAMES[choice.objective]} and those of "
            f"{others} {choice.tie_rule}, so it won on {choice.tie_break})")


def _figures_text(result: CellResult, slo: Slo) -> str:
    value = result.figure(slo.metric)
    text = f"{slo.name} {value:,.1f} ms"
    if len(result.runs) > 1:
        text += (f" ({result.figure(slo.metric, 'min'):,.1f}–"
                 f"{result.figure(slo.metric, 'max'):,.1f})")
    text += f", {result.figure('requests_per_s'):,.0f} requests/s"
    if "broker_cpu_s_per_million_msgs" in run_figures(result.runs[0]):
        text += (f", broker CPU {result.figure('broker_cpu_s_per_million_msgs'):,.1f} s per "
                 "million messages")
    return text


def _settings_text(cell: Cell) -> str:
    return cell.label.removeprefix(f"mode {cell.mode}").lstrip(", ") or "its defaults"


def recommend(results: Sequence[CellResult], slo: Slo,
              reference_mode: str = "partition", minimize: str = "requests") -> dict[str, Any]:
    """The cell with the fewest requests/s (or, `minimize="broker-cpu"`, the least broker
    CPU per million messages) whose SLO holds, in one sentence with numbers, compared with
    the best cell of `reference_mode` that meets the SLO too. Cells whose cost noise cannot
    tell apart (`ties`) are ranked by latency, then simplicity, and the sentence says so."""
    objective = OBJECTIVES[minimize]
    choice = _choose(results, slo, objective)
    best = None if choice is None else choice.cell
    if best is None and objective != "requests_per_s" and _best(results, slo) is not None:
        return {"cell": None, "text": (
            f"Cells meet {slo.text}, but none has the broker's CPU measured (--minimize "
            "broker-cpu needs a broker kbatch starts, or --broker-metrics).")}
    if choice is None or best is None:
        ran = [r for r in results if r.ok and r.has(slo.metric)]
        if not ran:
            return {"cell": None, "text": f"No cell ran cleanly, so none meets {slo.text}."}
        closest = min(ran, key=lambda r: r.figure(slo.metric))
        return {"cell": None, "text": (
            f"No cell meets {slo.text}; the lowest {slo.name} is {closest.cell.label}: "
            f"{_figures_text(closest, slo)}.")}
    text = f"{best.cell.label}: {_figures_text(best, slo)}"
    document: dict[str, Any] = {"cell": best.cell.id, "minimize": minimize}
    if choice.tied:
        text += _tie_text(choice, slo)
        document["tied_cells"] = [r.cell.id for r in choice.tied]
        document["tie_break"] = choice.tie_break
    reference = _best([r for r in results if r.cell.mode == reference_mode], slo, objective)
    compared = reference is not None and reference is not best and reference not in choice.tied
    if compared and reference is not None and objective != "requests_per_s":
        mine, theirs = best.figure(objective), reference.figure(objective)
        if theirs > 0:
            less = (1 - mine / theirs) * 100
            text += (f", {abs(less):.0f}% {'less' if less >= 0 else 'more'} broker CPU per "
                     f"message than the best {reference_mode} setting that meets the SLO "
                     f"({_settings_text(reference.cell)}: {_figures_text(reference, slo)})")
            document["reference_cell"] = reference.cell.id
            document["less_broker_cpu_pct"] = round(less, 1)
    elif compared and reference is not None:  # (compared implies it; for the type checker)
        mine, theirs = best.figure("requests_per_s"), reference.figure("requests_per_s")
        if theirs > 0:
            fewer = (1 - mine / theirs) * 100
            word = "fewer" if fewer >= 0 else "more"
            text += (f", {abs(fewer):.0f}% {word} than the best {reference_mode} setting "
                     f"that meets the SLO ({_settings_text(reference.cell)}: "
                     f"{_figures_text(reference, slo)})")
            document["reference_cell"] = reference.cell.id
            document["fewer_requests_pct"] = round(fewer, 1)
    elif reference is None and any(r.cell.mode == reference_mode for r in results):
        text += f"; no {reference_mode} setting meets the SLO"
    document["text"] = text + "."
    return document


# --------------------------------------------------------------------------- resume


def done_units(runs: Sequence[Mapping[str, Any]]) -> set[tuple[str, int]]:
    """(cell id, round) of every run already in a sweep's results."""
    return {(run["cell"], int(run.get("round", 1))) for run in runs if "cell" in run}


def pending_units(cells: Sequence[Cell], repeats: int,
                  done: set[tuple[str, int]]) -> list[tuple[Cell, int]]:
    """What is left to run, rounds interleaved (every cell's round 1, then round 2...) so a
    noisy machine's drift falls on every cell alike."""
    return [(cell, r) for r in range(1, repeats + 1) for cell in cells
            if (cell.id, r) not in done]


def resume_key(grid: Mapping[str, Any], workload: Mapping[str, Any]) -> dict[str, Any]:
    """What must match for --resume to continue a sweep: the grid and the workload apart
    from its base topic name (time-stamped per invocation), wherever the name appears (as
    a value or as a key, e.g. per-topic value sizes)."""
    topic = workload.get("topic")

    def anonymous(value: Any) -> Any:
        if isinstance(value, Mapping):
            return {("<topic>" if k == topic else k): anonymous(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [anonymous(v) for v in value]
        return "<topic>" if topic is not None and value == topic else value

    return {"grid": dict(grid), "workload": anonymous(dict(workload))}


def eta_s(cell_seconds: Sequence[float], remaining: int, estimate_s: float) -> float:
    """Seconds left: the mean of the cells run so far (the estimate before any ran)."""
    per_cell = statistics.fmean(cell_seconds) if cell_seconds else estimate_s
    return per_cell * remaining
