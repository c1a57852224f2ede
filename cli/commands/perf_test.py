"""`kbatch perf-test ARGS`: kafka-producer-perf-test's command line, run by kbatch, printing
perf-test's own lines, so a script written for perf-test keeps working.

The arguments are ProducerPerformance's (Apache Kafka 4.3.1); the run is kbatch's, in mode
`java` (kbatch's emulation of the Java producer) unless `--mode` says otherwise
(`--mode kafka-java` runs the real Java producer). Stdout carries only what perf-test
prints on stdout: the progress line every `--reporting-interval` (5 s), the total line
with percentiles (and the steady-state line after `--warmup-records`), the payload file
notices, and `--print-metrics`' table. kbatch's own notices and warnings go to stderr.

Latency differs in one way, on purpose: perf-test times a record from its `send()` call,
kbatch from the moment the rate schedule intended it (unthrottled: from the append), so a
stalled generator cannot hide its own stall (see README, 'Latency').
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from cli.app.errors import friendly_errors
from cli.app.lazy_group import start_up_signals
from cli.app.stopping import StopOnSignal
from cli.options.client import client_inputs, client_options, finish_settings
from cli.options.payload import payload_from_flags, payload_options, with_payload
from cli.options.perf_test import (
    PerfTestArgs,
    apply_perf_flags,
    metric_lines,
    perf_test_flag_options,
)
from cli.options.txn import transaction_options
from cli.render.outcome import exit_code
from producer_core.config import MODES, build_settings
from producer_core.errors import UsageError
from producer_core.results.perf_test_format import total_line, window_line

if TYPE_CHECKING:  # the payload's module needs numpy
    from producer_core.workload.payload import PayloadSpec

DEFAULT_REPORTING_INTERVAL_MS = 5000
"""ProducerPerformance's --reporting-interval default."""


def emit(line: str) -> None:
    """One perf-test line on stdout, at once (a script may read it live)."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class PerfTestProgress:
    """The engine's progress callback: each interval becomes perf-test's window line."""

    def __init__(self, interval_s: float, value_bytes: float, acks0: bool = False) -> None:
        self.report_interval_s = interval_s
        self.report_interval_explicit = True  # perf-test's lines come every 5 s, short run or not
        self.value_bytes = value_bytes
        self.acks0 = acks0

    def __call__(self, progress: Any) -> None:
        return None

    def on_interval(self, row: dict[str, Any]) -> None:
        records = row["records"] if self.acks0 else row["acknowledged"]
        if not records:
            return
        seconds = row["end_s"] - row["start_s"]
        emit(window_line(records, seconds, records * self.value_bytes,
                         row.get("mean_ms", 0.0), row["max_ms"]))


def mean_value_bytes(payload: PayloadSpec, record_size: int, id_bytes: int = 8) -> float:
    """perf-test's bytes per record: the value's length (kbatch's includes its 8-byte id)."""
    if payload.kind != "file":
        return float(record_size)
    from producer_core.workload.payload import file_value_sizes

    sizes, shares = file_value_sizes(payload, id_bytes)
    return sum(size * share for size, share in zip(sizes, shares, strict=True))


async def _existing_partitions(bootstrap: str, settings: Any, topic: str) -> int | None:
    from producer_core.engine.transport.transport import Cluster

    cluster = Cluster.for_settings(bootstrap, settings)
    try:
        await cluster.connect()
        view = await cluster.refresh_metadata([topic])
        if view.topic_errors.get(topic) == 0 and view.leaders.get(topic):
            return len(view.leaders[topic])
        return None
    finally:
        await cluster.close()


def payload_notices(payload: PayloadSpec) -> None:
    """What ProducerPerformance prints when it reads --payload-file."""
    if payload.kind != "file" or payload.file is None:
        return
    from producer_core.workload.payload import cached_records

    emit(f"Reading payloads from: {Path(payload.file).absolute()}")
    emit(f"Number of records read: {len(cached_records(payload.file, payload.delimiter))}")


def no_acks(settings: dict[str, Any]) -> bool:
    return str(settings.get("acks")) == "0"


def completed(document: dict[str, Any]) -> int:
    """The records perf-test counts: its callback completes on the acknowledgement, or,
    with acks=0 (no acknowledgement comes), once the record is written: sent ones."""
    messages = document["messages"]
    if no_acks(document.get("settings") or {}):
        return messages["acknowledged"] + messages["sent_unacknowledged"]
    return messages["acknowledged"]


ACKS0_NOTICE = ("acks=0: the broker answers nothing, so records count once written and "
                "kbatch measures no latency for them (the latency figures read 0).")


def final_lines(document: dict[str, Any], value_bytes: float, warmup_records: int) -> list[str]:
    """perf-test's total line (and its steady-state line after a warm-up)."""
    acked = completed(document)
    seconds = document["duration_s"]
    latency = document["latency"]
    figures = (latency.get("mean_ms", 0.0), latency["max_ms"], latency["p50_ms"],
               latency["p95_ms"], latency["p99_ms"], latency["p999_ms"])
    lines = [total_line(acked, seconds, acked * value_bytes, *figures)]
    if warmup_records:
        steady = max(acked - warmup_records, 0)
        steady_s = max(seconds - document["workload"]["warmup_s"], 1e-9)
        lines.append(total_line(steady, steady_s, steady * value_bytes, *figures,
                                steady_state=True))
    return lines


@click.command("perf-test", cls=PerfTestArgs,
               context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--topic", required=True, help="Produce records to this topic.")
@click.option("--mode", type=click.Choice(MODES), default="java", show_default=True,
              help="kbatch mode to run (java: kbatch's emulation of the Java producer; "
                   "kafka-java: the real one).")
@click.option("--partitions", type=click.IntRange(1, 100_000), default=None,
              help="Partitions if kbatch creates the topic (default 1, as a broker's "
                   "num.partitions); an existing topic keeps its own.")
@perf_test_flag_options
@payload_options
@click.option("-X", "overrides", multiple=True, metavar="KEY=VALUE",
              help="kbatch's spelling of a producer property (see kbatch produce --help).")
@client_options
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="Also write kbatch's results JSON to this file.")
@transaction_options
@friendly_errors
def perf_test(topic: str, mode: str, partitions: int | None, overrides: tuple[str, ...],
              command_config: Path | None, replication_factor: int | None,
              topic_configs: tuple[str, ...], json_path: Path | None,
              **flags: Any) -> None:
    """kafka-producer-perf-test's arguments, run by kbatch, printing perf-test's lines.

    Example: kbatch perf-test --topic t --num-records 20000 --record-size 100
    --throughput 2000 --producer-props acks=all linger.ms=5 bootstrap.servers=HOST:PORT
    """
    with start_up_signals():  # the run's modules (numpy, aiokafka): not for --help
        from cli.options.settings_checks import check_fits, check_setting_texts, other_mode_warnings
        from cli.options.spark import Runner
        from cli.render.tables import console
        from cli.steps.pipeline import run_pipeline
        from producer_core.results.results_io import write_json
        from producer_core.results.run_facts import run_document
        from producer_core.workload.workload import Workload

    warmup_records = flags.get("warmup_records") or 0
    print_metrics = flags.get("print_metrics", False)
    missing = [name for name, key in (("--num-records", "num_records"),
                                      ("--throughput", "throughput")) if flags.get(key) is None]
    if missing:
        raise UsageError(f"argument {', '.join(missing)} is required (as in "
                         "kafka-producer-perf-test).")
    if flags.get("record_size") is None and flags.get("payload_file") is None \
            and not flags.get("payload_monotonic"):
        raise UsageError("Give exactly one of --record-size, --payload-file or "
                         "--payload-monotonic (as in kafka-producer-perf-test).")
    reporting_ms = flags.get("reporting_interval") or DEFAULT_REPORTING_INTERVAL_MS
    kwargs = apply_perf_flags({**flags, "overrides": overrides, "command_config": command_config,
                               "messages": None, "rate": 1000.0, "message_size": 100,
                               "warmup": 0.0, "bootstrap_servers": None,
                               "report_interval": None})
    check_setting_texts(kwargs["overrides"])
    if json_path is not None:  # written after the run: proven writable before it
        from cli.app.output_paths import writable_file

        writable_file(json_path, "--json")
    client = client_inputs(command_config, kwargs["overrides"], kwargs["bootstrap_servers"],
                           [mode], replication_factor, topic_configs)
    settings = other_mode_warnings(
        finish_settings(build_settings(client.assignments, mode=mode), client), mode)
    payload = payload_from_flags(kwargs)
    payload_notices(payload)
    if warmup_records:
        emit(f"Warmup first {warmup_records} records. Steady state results will print "
             "after the complete test summary.")

    def workload(partition_count: int) -> Workload:
        return with_payload(Workload(
            topic=topic, partitions=partition_count, rate=kwargs["rate"], duration_s=None,
            messages=kwargs["messages"], message_size=kwargs["message_size"], keys=0, seed=1,
            warmup_s=kwargs["warmup"]), payload)

    check_fits(workload(partitions or 1), settings)
    value_bytes = mean_value_bytes(payload, kwargs["message_size"])
    for warning in settings.warnings:
        console.print(f"[yellow]Warning:[/yellow] {warning}", soft_wrap=True)
    with StopOnSignal() as stopper:
        with run_pipeline(Runner(), stopper, client.bootstrap, {}, shared=True) as setup:
            target = setup.target
            existing = asyncio.run(_existing_partitions(target.bootstrap, settings, topic))
            if existing is not None and partitions not in (None, existing):
                raise UsageError(f"Topic {topic!r} already exists with {existing} partitions, "
                                 f"but --partitions {partitions} was asked for.")
            run_workload = workload(existing or partitions or 1)
            console.print(f"kbatch perf-test: mode {mode}, {target.description}, topic "
                          f"{topic!r} ({run_workload.partitions} partitions).", soft_wrap=True)
            started = time.monotonic()
            results = setup.run(run_workload, settings, mode, target.bootstrap,
                                PerfTestProgress(reporting_ms / 1000.0, value_bytes,
                                                 no_acks(settings.as_dict())),
                                **setup.stop)
            results.broker = target.description
            console.print(f"Ran in {time.monotonic() - started:.1f} s.")
        document = run_document(results, setup.facts(), stopped=setup.stopped)
    for line in final_lines(document, value_bytes, warmup_records):
        emit(line)
    if no_acks(document.get("settings") or {}):
        console.print(ACKS0_NOTICE, soft_wrap=True, highlight=False)
    if print_metrics:
        for line in metric_lines(document):
            emit(line)
    if json_path is not None:
        write_json(json_path, document)
    if stopper.signum is not None:
        sys.exit(stopper.exit_code)
    code, reasons = exit_code([document], False)
    for reason in reasons:
        console.print(f"[red]{reason}[/]", soft_wrap=True)
    if code:
        sys.exit(code)
