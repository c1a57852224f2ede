"""Where a run's output goes: `--json -`, `--quiet`, and `--report-interval` lines.

- `--json -` writes the results JSON to stdout; every human line (tables, notices,
  warnings) then goes to stderr, so `kbatch produce --json - | jq` works.
- `--quiet` prints nothing but errors (which `cli.app.errors` writes with click to stderr).
- Every `--report-interval` seconds a run reports the interval that ended (messages/s,
  MB/s, requests/s, msgs/req, p50/p99, failures): printed above the live view on a terminal
  (so they stay in the scrollback), as plain lines otherwise (CI logs), so a slow second
  can be placed in time.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.text import Text

from cli.options.run import OUTPUT_FLAGS, output_options  # noqa: F401 - re-exported
from cli.render.consume import interval_suffix
from cli.render.container_facts import align_faults, fault_note
from cli.render.tables import console, out
from producer_core.results.metric_catalog import DEFAULT_INTERVAL_S

if TYPE_CHECKING:  # not imported for `--help`: the engine brings numpy and aiokafka
    from rich.live import Live

    from producer_core.engine.drivers.engine import Progress

@dataclass(frozen=True)
class Output:
    report_interval_s: float = DEFAULT_INTERVAL_S
    quiet: bool = False
    json_stdout: bool = False
    interval_explicit: bool = False
    """--report-interval was given: a short run keeps it (else it gets a shorter one)."""


current = Output()
"""This command's output choices (set by `output_from_flags` at each command's start)."""


def output_from_flags(flags: dict[str, Any], json_path: Path | None) -> Output:
    """Take the output flags out of a command's keyword arguments and apply them."""
    interval, quiet = (flags.pop(name) for name in OUTPUT_FLAGS)
    context = click.get_current_context(silent=True)
    source = context.get_parameter_source("report_interval") if context else None
    explicit = source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")
    apply(Output(interval, quiet, json_path is not None and str(json_path) == "-", explicit))
    if context is not None:  # back to normal when the command ends (in-process callers)
        context.call_on_close(lambda: apply(Output()))
    return current


def apply(output: Output) -> None:
    global current
    current = output
    for target in (console, out):
        target.quiet = output.quiet
    # None: rich's default again (standard output at each write)
    out.file = sys.stderr if output.json_stdout else None  # type: ignore[assignment]  # see above


def emit_json(path: Path | None, payload: Any, write: Callable[[Path, Any], None]) -> None:
    """The results JSON to stdout (`-`) or to a file (atomically, by `write`)."""
    if path is None:
        return
    if current.json_stdout:
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
        sys.stdout.flush()
        return
    write(path, payload)
    console.print(f"Results written to {path}.")


def progress_text(label: str, p: Progress) -> str:
    rate = p.acknowledged / p.elapsed_s if p.elapsed_s > 0 else 0.0
    total = f"/{p.target_messages:,}" if p.target_messages else ""
    return (f"{label}  {p.elapsed_s:6.1f} s  generated {p.generated:,}{total}  "
            f"acked {p.acknowledged:,} ({rate:,.0f}/s)  failed {p.failed:,}  "
            f"in flight {p.in_flight_requests}  requests {p.requests_sent:,}  "
            f"ack p99 {p.p99_ms:,.1f} ms")


def interval_line(label: str, row: dict[str, Any]) -> str:
    """One interval as one line (see `producer_core.results.intervals.row`): what was
    acknowledged (messages, MB, latency), then what was sent (requests, records per
    request), never one figure of each in a ratio. An interval without an
    acknowledgement says "no acks" rather than a latency of 0.0 ms; one whose messages
    were all intended in the warm-up (left out of the latency) says so."""
    if not row.get("acknowledged", 1):
        latency = "no acks"
    elif not row.get("latency_count", 1):  # acknowledged, all intended in the warm-up
        latency = "ack latency: warm-up"
    else:
        latency = f"ack p50 {row['p50_ms']:,.1f} ms  p99 {row['p99_ms']:,.1f} ms"
    return (f"{label} {row['start_s']:7.1f}-{row['end_s']:.1f} s  "
            f"acked/s {row['msgs_per_s']:,.0f}  MB/s {row['mb_per_s']:,.2f}  {latency}  "
            f"sent req/s {row['requests_per_s']:,.0f}  msgs/req {row['msgs_per_req']:,.1f}  "
            f"failed {row['failed']:,}" + interval_suffix(row))


class ProgressSink:
    """The engine's progress callback; its attributes configure the interval recorder
    (`producer_core.results.intervals.IntervalRecorder.for_callback`)."""

    def __init__(self, label: str, live: Live | None, output: Output) -> None:
        self.label = label
        self.live = live
        self.report_interval_s = output.report_interval_s or DEFAULT_INTERVAL_S
        self.report_interval_explicit = output.interval_explicit
        self.print_intervals = bool(output.report_interval_s) and not output.quiet
        from cli.dashboard.server import dashboard_run

        self.dashboard = dashboard_run(label)  # the live page's feed (--dashboard)
        if not self.print_intervals and self.dashboard is None:
            self.on_interval = None  # type: ignore[assignment]  # None: no rows wanted

    def __call__(self, progress: Progress) -> None:
        if self.dashboard is not None:
            self.dashboard[0].progress(self.dashboard[1], progress)
        align_faults(progress.elapsed_s)
        if self.live is not None:
            text = progress_text(self.label, progress)
            self.live.update(Text(text))

    def on_note(self, text: str) -> None:
        """A line from the run's set-up (priming the topics), before its clock starts;
        shown where interval lines are (a capacity search's probes keep to one line)."""
        if not self.print_intervals:
            return
        target = self.live.console if self.live is not None else console
        target.print(Text(f"{self.label} {text}"), soft_wrap=True)

    def on_interval(self, row: dict[str, Any]) -> None:
        if self.dashboard is not None:
            self.dashboard[0].interval(self.dashboard[1], row)
        if not self.print_intervals:
            return
        line = interval_line(self.label, row) + fault_note(row)
        if self.live is not None:  # above the live view: it stays in the scrollback
            self.live.console.print(Text(line), soft_wrap=True)
        else:
            console.print(Text(line), soft_wrap=True)


@contextmanager
def live_progress(label: str, enabled: bool) -> Iterator[Any]:
    """The live view on a terminal (with `enabled`), plain interval lines otherwise."""
    show_live = enabled and console.is_terminal and not current.quiet
    if not show_live:
        yield ProgressSink(label, None, current)
        return
    from rich.live import Live

    with Live(Text(f"{label}: starting..."), console=console, refresh_per_second=4,
              transient=True) as live:
        yield ProgressSink(label, live, current)
