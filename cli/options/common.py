"""Options shared by the commands that run a workload, and their conversion to engine types."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from cli.options.bounded import BoundedInt, FiniteFloat
from producer_core import bounds
from producer_core.brokers import BROKERS
from producer_core.brokers.kafka_dist import KAFKA_VERSION
from producer_core.errors import UsageError

if TYPE_CHECKING:  # the workload (numpy) and its file reader (yaml): only to run, not for --help
    from producer_core.workload.workload import Workload


class RateType(click.ParamType):
    """A positive number of messages per second, or `max` for unthrottled."""

    name = "RATE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        if value is None or isinstance(value, float):
            return value
        text = str(value).strip().lower()
        if text == "max":
            return None
        try:
            rate = float(text)
        except ValueError:
            self.fail(f"{value!r} is not a rate: give messages per second (e.g. 20000) or 'max'.",
                      param, ctx)
        if not bounds.MIN_RATE <= rate <= bounds.MAX_RATE:
            self.fail(f"{value!r} is not a rate: give messages per second from "
                      f"{bounds.MIN_RATE:g} to {bounds.MAX_RATE:,.0f}, or 'max' (unthrottled).",
                      param, ctx)
        return rate


def workload_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The one-topic workload flags, shared by `produce` and `compare-modes`."""
    options = [
        click.option("--workload", "workload_file", default=None,
                     type=click.Path(dir_okay=False, path_type=Path),
                     help="A workload file (YAML) of one or more topics with rate profiles, "
                          "key and size distributions; see docs/guides/workloads.md. "
                          "--duration, --messages, --seed and --warmup override its run-wide "
                          "values; the one-topic options cannot be combined with it."),
        click.option("--topic", default=None,
                     help="Topic to produce to. Default: kbatch-<unix time> (a fresh topic)."),
        click.option("--partitions", type=click.IntRange(1, 100_000), default=16,
                     show_default=True, help="Partitions of the topic (created if missing)."),
        click.option("--rate", type=RateType(), default="1000", show_default=True,
                     help="Messages per second on a constant schedule, or 'max' (unthrottled; "
                          "latency is then taken from the append time)."),
        click.option("--duration", default=None,
                     type=FiniteFloat(0, bounds.MAX_DURATION_S, low_open=True, unit="seconds"),
                     help="Seconds to produce for. Default 10 unless --messages is given."),
        click.option("--messages", type=BoundedInt(1, bounds.MAX_MESSAGES), default=None,
                     help="Messages to produce (with --duration too: whichever ends first)."),
        click.option("--message-size", type=click.IntRange(0, 64 * 1024 * 1024), default=100,
                     show_default=True, help="Bytes per message value (the first 8 carry the "
                                             "message id)."),
        click.option("--keys", type=BoundedInt(0, bounds.MAX_KEYS, "0 is keyless"), default=0,
                     show_default=True,
                     help="0: keyless, spread round-robin over partitions. N: keys drawn "
                          "uniformly from N, partitioned with Java-compatible murmur2."),
        click.option("--seed", type=BoundedInt(0, bounds.MAX_SEED), default=1, show_default=True,
                     help="Seed for payloads and key choice, for reproducible runs."),
        click.option("--warmup", type=FiniteFloat(0, bounds.MAX_DURATION_S, unit="seconds"),
                     default=0.0, show_default=True,
                     help="Seconds at the start whose messages are left out of the latency "
                          "statistics (they are still sent and counted in requests)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


ONE_TOPIC_FLAGS = ("topic", "partitions", "rate", "message_size", "keys")
RUN_WIDE_FLAGS = {"duration": "duration_s", "messages": "messages", "seed": "seed",
                  "warmup": "warmup_s"}


def option_given(name: str) -> bool:
    """Whether the user gave option `name` (not its default): flags that clash only then."""
    context = click.get_current_context(silent=True)
    if context is None:
        return False
    source = context.get_parameter_source(name)
    return source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")


def workload_from_file(path: Path, flags: dict[str, Any]) -> Workload:
    """A workload file, with the run-wide options the user gave on the command line."""
    clashing = [f"--{name.replace('_', '-')}" for name in ONE_TOPIC_FLAGS if option_given(name)]
    if clashing:
        raise UsageError(
            f"{', '.join(clashing)} cannot be combined with --workload: the file describes the "
            "topics. Edit the file, or drop --workload to describe one topic with options."
        )
    from producer_core.workload.workload_file import check_sends_something, load_workload

    workload = load_workload(path)
    overrides = {field: flags[flag] for flag, field in RUN_WIDE_FLAGS.items()
                 if option_given(flag)}
    workload = replace(workload, **overrides) if overrides else workload
    from cli.render.tables import console

    for note in check_sends_something(workload, str(path)):
        console.print(f"[yellow]Warning:[/yellow] {note}", highlight=False)
    return workload


def workload_from_flags(
    workload_file: Path | None, topic: str | None, partitions: int, rate: float | None,
    duration: float | None, messages: int | None, message_size: int, keys: int, seed: int,
    warmup: float,
) -> Workload:
    if workload_file is not None:
        return workload_from_file(workload_file, {
            "duration": duration, "messages": messages, "seed": seed, "warmup": warmup})
    if duration is None and messages is None:
        duration = 10.0
    if rate is None and duration is None and messages is None:
        raise UsageError("--rate max needs --duration or --messages to know when to stop.")
    from producer_core.workload.workload import Workload

    return Workload(
        topic=f"kbatch-{int(time.time() * 1000)}" if topic is None else topic,
        partitions=partitions, rate=rate, duration_s=duration, messages=messages,
        message_size=message_size, keys=keys, seed=seed, warmup_s=warmup,
    )


LAB_FLAGS = ("brokers", "rtt_ms", "jitter_ms", "broker", "kafka_home", "kafka_image", "faults")

BROKER_HELP = ("Broker to start for the run when no --bootstrap-servers is given: 'tansu' = the "
               "embedded Tansu broker (no set-up); 'kafka' = real Apache Kafka "
               f"{KAFKA_VERSION} (KRaft) on 127.0.0.1, from --kafka-home / KAFKA_HOME or "
               "fetched once with Maven; needs Java 17+. See docs/guides/real-kafka.md. "
               "'docker' = Apache Kafka in containers (needs Docker; see "
               "docs/guides/containers.md).")
KAFKA_HOME_HELP = ("An unpacked Apache Kafka distribution to run with --broker kafka (default: "
                   "$KAFKA_HOME, else jars fetched with Maven into ~/.cache/kbatch).")


def broker_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """`--broker tansu|kafka --kafka-home DIR`: which broker kbatch starts itself."""
    options = [
        click.option("--broker", type=click.Choice(BROKERS), default="tansu",
                     show_default=True, help=BROKER_HELP),
        click.option("--kafka-home", type=click.Path(file_okay=False), default=None,
                     help=KAFKA_HOME_HELP),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def lab_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """`--brokers N --rtt-ms R --jitter-ms J --broker B`: run on a started cluster of that
    shape."""
    options = [
        click.option("--brokers", type=int, default=1, show_default=True,
                     help="Brokers to start: with Tansu, N > 1 starts a lab of N Tansu brokers "
                          "presented as one N-node cluster (see `kbatch lab --help`); with "
                          "--broker kafka, 1 or 3 Kafka nodes (3: a real cluster)."),
        click.option("--rtt-ms", type=FiniteFloat(0, bounds.MAX_RTT_MS, unit="ms"), default=0.0,
                     show_default=True,
                     help="Round trip added to every response, in ms (Tansu: by the lab "
                          "facade; Kafka: by a relay in front of each broker)."),
        click.option("--jitter-ms", type=FiniteFloat(0, bounds.MAX_RTT_MS, unit="ms"),
                     default=0.0, show_default=True,
                     help="Jitter of that round trip: each response's delay is uniform in "
                          "[rtt - jitter, rtt + jitter] ms."),
    ]
    for option in reversed(options):
        func = option(func)
    return broker_options(container_options(func))


def container_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """`--kafka-image IMAGE --fault SPEC...`: the image of --broker docker, and faults."""
    options = [
        click.option("--kafka-image", default=None, metavar="IMAGE",
                     help=f"Container image of --broker docker (default apache/kafka:"
                          f"{KAFKA_VERSION}; where it cannot be pulled, kbatch builds its "
                          "own, see `kbatch image build`)."),
        click.option("--fault", "faults", multiple=True, metavar="SPEC",
                     help="A fault during the run, e.g. 'at=10s isolate=leader:0 for=8s', "
                          "'at=5s pause=node:2 for=3s', 'kill=node:3', 'restart=node:3' "
                          "(isolate: --broker docker only; pause, kill, restart: also "
                          "--broker kafka). Repeatable. See docs/guides/containers.md."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def lab_shape(flags: dict[str, Any]) -> dict[str, Any]:
    """Take the lab options out of a command's keyword arguments (for `broker_target`)."""
    return {name: flags.pop(name) for name in LAB_FLAGS}
