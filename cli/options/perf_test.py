"""kafka-producer-perf-test's flags, meaning what they mean in Apache Kafka's
ProducerPerformance (4.3.1), mapped onto kbatch's own options.

Each flag is a second spelling of something kbatch already has, so there is one place per
idea: `--num-records` is `--messages`, `--record-size` is `--message-size`, `--throughput`
is `--rate` (-1: unthrottled, `max`), `--producer-props` / `--command-property` are `-X`,
`--bootstrap-server` is `--bootstrap-servers`, `--reporting-interval` (ms) is
`--report-interval` (s), `--warmup-records N` is `--warmup` of N records' time (a constant
rate's first N records are exactly those intended before N / rate seconds). Kbatch's own
spellings of `--producer.config`, `--command-config`, `--payload-file`,
`--payload-delimiter`, `--transactional-id` and `--transaction-duration-ms` are already
perf-test's. `--producer-props a=1 b=2` takes several values after one flag (argparse's
`nargs='+'`), which click does not: `PerfTestArgs.expand` rewrites it into one flag per
value before click parses.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from cli.app.errors import friendly_errors
from cli.options.bounded import BoundedInt
from producer_core import bounds
from producer_core.errors import UsageError
from producer_core.properties import load_properties

MULTI_VALUE_FLAGS = ("--producer-props", "--command-property")
DEFAULT_TRANSACTION_ID_PREFIX = "performance-producer-"
"""ProducerPerformance's transactional id when only --transaction-duration-ms is given."""


def expand_multi_values(args: Sequence[str]) -> list[str]:
    """`--producer-props a=1 b=2 --x` -> `--producer-props a=1 --producer-props b=2 --x`."""
    expanded: list[str] = []
    current: str | None = None
    for arg in args:
        if arg in MULTI_VALUE_FLAGS:
            current = arg
            continue
        if current is not None and not arg.startswith("-"):
            expanded += [current, arg]
            continue
        if current is not None and expanded[-2:-1] != [current]:
            expanded.append(current)  # no value: let click say so
        current = None
        expanded.append(arg)
    if current is not None and expanded[-2:-1] != [current]:
        expanded.append(current)
    return expanded


class PerfTestArgs(click.Command):
    """A click command that also takes `--producer-props K=V K=V ...` as perf-test does."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, expand_multi_values(args))


class Throughput(click.ParamType):
    """perf-test's `--throughput`: records/s, any negative value (-1) for unthrottled."""

    name = "THROUGHPUT"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        if value is None or isinstance(value, float):
            return value
        try:
            rate = float(str(value).strip())
        except ValueError:
            self.fail(f"{value!r} is not a throughput: give records per second, or -1 for "
                      "unthrottled.", param, ctx)
        if rate != rate or rate in (float("inf"), float("-inf")):
            self.fail(f"{value!r} is not a throughput.", param, ctx)
        if rate < 0:
            return -1.0
        if not bounds.MIN_RATE <= rate <= bounds.MAX_RATE:
            self.fail(f"{value!r} is not a throughput kbatch can run: give {bounds.MIN_RATE:g} "
                      f"to {bounds.MAX_RATE:,.0f} records/s, or -1 for unthrottled (0 would "
                      "never send: perf-test waits forever).", param, ctx)
        return rate


PERF_FLAGS = ("num_records", "record_size", "throughput", "producer_props",
              "command_properties", "bootstrap_server", "warmup_records",
              "reporting_interval", "print_metrics", "payload_monotonic")


def perf_test_flag_options(func: Callable[..., Any], with_aliases: bool = True
                           ) -> Callable[..., Any]:
    """The perf-test flags kbatch does not already spell the same way."""
    options = [
        click.option("--num-records", type=BoundedInt(1, bounds.MAX_MESSAGES), default=None,
                     metavar="N", help="kafka-producer-perf-test's name for --messages."),
        click.option("--record-size", type=click.IntRange(1, 64 * 1024 * 1024), default=None,
                     metavar="BYTES", help="perf-test's name for --message-size."),
        click.option("--throughput", type=Throughput(), default=None,
                     help="perf-test's name for --rate: records/s, -1 for unthrottled."),
        click.option("--producer-props", "producer_props", multiple=True,
                     metavar="K=V [K=V ...]",
                     help="perf-test's producer properties (one flag, several values): "
                          "the same as -X K=V for each."),
        click.option("--command-property", "command_properties", multiple=True,
                     metavar="K=V [K=V ...]",
                     help="perf-test's newer name for --producer-props."),
        click.option("--warmup-records", type=BoundedInt(0, bounds.MAX_MESSAGES), default=None,
                     metavar="N", help="The first N records are left out of the latency "
                                       "statistics (perf-test's steady state); needs a "
                                       "--throughput (the records of the first N / rate "
                                       "seconds)."),
        click.option("--reporting-interval", type=click.IntRange(1, 604_800_000), default=None,
                     metavar="MS", help="perf-test's progress interval in ms (--report-"
                                        "interval in seconds)."),
        click.option("--print-metrics", is_flag=True, default=False,
                     help="After the run, print every metric of the results as "
                          "'name : value' lines (perf-test prints the producer's metrics)."),
        click.option("--payload-monotonic", is_flag=True, default=False,
                     help="perf-test's monotonically increasing integer payloads; kbatch's "
                          "values already carry an increasing 8-byte id, so this is "
                          "--message-size 8: the id alone."),
    ]
    if with_aliases:
        options.append(click.option(
            "--bootstrap-server", "bootstrap_server", default=None, metavar="HOST:PORT[,...]",
            help="perf-test's name for --bootstrap-servers."))
    for option in reversed(options):
        func = option(func)
    return func


def _explicit(name: str) -> bool:
    context = click.get_current_context(silent=True)
    if context is None:
        return False
    source = context.get_parameter_source(name)
    return source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")


def _same(kwargs: dict[str, Any], target: str, value: Any, perf_flag: str, kbatch_flag: str
          ) -> None:
    """Set `target` from a perf-test flag, refusing a clash with kbatch's own flag."""
    if _explicit(target) and kwargs.get(target) != value:
        raise UsageError(f"{perf_flag} and {kbatch_flag} give two values for one setting; "
                         "give one of them.")
    kwargs[target] = value


def transactional_default(kwargs: dict[str, Any], overrides: Sequence[str]) -> list[str]:
    """ProducerPerformance: --transaction-duration-ms alone turns transactions on with id
    performance-producer-<uuid> (unless a transactional.id is given somewhere)."""
    keys = {text.partition("=")[0].strip() for text in overrides}
    duration = kwargs.get("transaction_duration_ms") is not None \
        or "transaction.duration.ms" in keys
    if not duration or kwargs.get("transactional_id") or "transactional.id" in keys:
        return []
    config = kwargs.get("command_config")
    if isinstance(config, Path) and config.exists() and any(
            prop.key == "transactional.id" for prop in load_properties(config)):
        return []
    return [f"transactional.id={DEFAULT_TRANSACTION_ID_PREFIX}{uuid.uuid4()}"]


def apply_perf_flags(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Turn the perf-test flags in a command's keyword arguments into kbatch's."""
    num_records, record_size, throughput, producer_props, command_properties, \
        bootstrap_server, warmup_records, reporting_interval, print_metrics, monotonic = (
            kwargs.pop(name, None) for name in PERF_FLAGS)
    if producer_props and command_properties:
        raise UsageError("--command-property and --producer-props cannot be specified "
                         "together (as in kafka-producer-perf-test).")
    if num_records is not None:
        _same(kwargs, "messages", num_records, "--num-records", "--messages")
    if monotonic:
        if record_size is not None or kwargs.get("payload_file") is not None:
            raise UsageError("Give exactly one of --record-size, --payload-file or "
                             "--payload-monotonic (as in kafka-producer-perf-test).")
        record_size = 8
    if record_size is not None:
        if kwargs.get("payload_file") is not None:
            raise UsageError("Give exactly one of --record-size, --payload-file or "
                             "--payload-monotonic (as in kafka-producer-perf-test).")
        _same(kwargs, "message_size", record_size, "--record-size", "--message-size")
    if throughput is not None:
        _same(kwargs, "rate", None if throughput < 0 else throughput, "--throughput", "--rate")
    if bootstrap_server is not None:
        _same(kwargs, "bootstrap_servers", bootstrap_server, "--bootstrap-server",
              "--bootstrap-servers")
    if reporting_interval is not None:
        _same(kwargs, "report_interval", reporting_interval / 1000.0, "--reporting-interval",
              "--report-interval")
    if warmup_records:
        rate = kwargs.get("rate")
        if rate is None:
            raise UsageError("--warmup-records needs a --throughput: kbatch leaves out the "
                             "records intended in the first N / rate seconds. Unthrottled, "
                             "give --warmup SECONDS instead.")
        if kwargs.get("messages") is not None and warmup_records >= kwargs["messages"]:
            raise UsageError("The value for --warmup-records must be strictly fewer than the "
                             "number of records in the test, --num-records.")
        _same(kwargs, "warmup", (warmup_records - 0.5) / rate, "--warmup-records", "--warmup")
    props = [*producer_props, *command_properties]
    overrides = [*props, *kwargs.get("overrides", ())]
    overrides += transactional_default(kwargs, overrides)
    kwargs["overrides"] = tuple(overrides)
    context = click.get_current_context(silent=True)
    if context is not None:
        context.meta["kbatch.print_metrics"] = print_metrics
    return kwargs


def perf_test_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add perf-test's flags to `produce`; they reach it as its own options."""

    @functools.wraps(func)
    @friendly_errors  # this wrapper runs outside the command's own error handling
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return func(*args, **apply_perf_flags(kwargs))

    return perf_test_flag_options(wrapper, with_aliases=False)


def print_metrics_requested() -> bool:
    context = click.get_current_context(silent=True)
    return bool(context is not None and context.meta.get("kbatch.print_metrics"))


def metric_lines(document: dict[str, Any]) -> list[str]:
    """`--print-metrics`: every number of a results document as perf-test's metrics table
    (ToolsUtils.printMetrics: a header, then 'name : value' with aligned colons)."""
    rows: list[tuple[str, str]] = []

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                if key in ("histograms", "intervals", "settings", "workload", "host"):
                    continue
                walk(f"{prefix}:{key}" if prefix else str(key), inner)
        elif isinstance(value, bool):
            return
        elif isinstance(value, (int, float)):
            rows.append((f"kbatch:{prefix}:{{mode={document.get('mode', '')}}}",
                         f"{value:.3f}" if isinstance(value, float) else f"{value}"))

    walk("", document)
    width = max((len(name) for name, _ in rows), default=11)
    lines = [f"\n{'Metric Name':<{width}} : Value"]
    lines += [f"{name:<{width}} : {value}" for name, value in sorted(rows)]
    return lines
