"""`--consume` (alias `--e2e`), `--consumers N` and `--consumer-config KEY=VALUE`: consumers
that read the run while it runs, for end-to-end latency (producer_core.measure)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from producer_core.errors import UsageError

if TYPE_CHECKING:  # the consumers' module (numpy, aiokafka) comes in when they are asked for
    from producer_core.measure.consuming_run import ConsumeOptions

FLAGS = ("consume", "consumers", "consumer_configs")


def consume_options(func: Any) -> Any:
    """Add the options; the command receives them as one `consume` (ConsumeOptions|None)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        kwargs["consume"] = consume_from_flags(kwargs.pop("consume"), kwargs.pop("consumers"),
                                               kwargs.pop("consumer_configs"))
        return func(*args, **kwargs)

    wrapper = click.option(
        "--consumer-config", "consumer_configs", multiple=True, metavar="KEY=VALUE",
        help="A librdkafka consumer property for the --consume consumers, e.g. "
             "fetch.wait.max.ms=10 or fetch.min.bytes=1 (fetch.max.wait.ms is accepted for "
             "Java's name). Repeatable. The run's TLS/SASL settings apply already.")(wrapper)
    wrapper = click.option(
        "--consumers", type=int, default=None, metavar="N",
        help="With --consume: consumer processes, the partitions dealt among them "
             "(default 1).")(wrapper)
    return click.option(
        "--consume", "--e2e", "consume", is_flag=True,
        help="Consumers (in their own processes) read every partition of the run while it "
             "runs: end-to-end latency from each message's intended send time to its "
             "consumption, consume rate, consumer lag, and a read-back of what arrived "
             "(results 'e2e_latency' and 'consumers'; docs/guides/end-to-end-latency.md).")(
        wrapper)


JAVA_NAMES = {"fetch.max.wait.ms": "fetch.wait.max.ms"}
"""Java consumer names users type, as librdkafka's."""


def consume_from_flags(consume: bool, consumers: int | None,
                       configs: tuple[str, ...]) -> ConsumeOptions | None:
    """The options, or a clear error for --consumers / --consumer-config without --consume."""
    if not consume:
        given = [name for name, value in (("--consumers", consumers),
                                          ("--consumer-config", configs)) if value]
        if given:
            verb = "apply" if len(given) > 1 else "applies"
            raise UsageError(f"{' and '.join(given)} {verb} only with --consume.")
        return None
    if consumers is not None and not 1 <= consumers <= 256:
        raise UsageError(f"--consumers must be 1 to 256 (got {consumers}).")
    pairs = []
    for text in configs:
        key, sep, value = text.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            raise UsageError(f"Malformed --consumer-config {text!r}: expected KEY=VALUE, for "
                             "example --consumer-config fetch.wait.max.ms=10.")
        if key in ("group.id", "bootstrap.servers", "enable.auto.commit"):
            raise UsageError(f"--consumer-config {key} is kbatch's to set: the consumers are "
                             "assigned their partitions, commit nothing, and use the run's "
                             "brokers.")
        pairs.append((JAVA_NAMES.get(key, key), value))
    from producer_core.measure.consumers import config_problem
    from producer_core.measure.consuming_run import ConsumeOptions

    problem = config_problem(dict(pairs))
    if problem:
        raise UsageError(f"--consumer-config: librdkafka refuses it ({problem}). Give a "
                         "librdkafka consumer property and a value it takes (e.g. "
                         "fetch.wait.max.ms=10; see librdkafka's CONFIGURATION.md).")

    return ConsumeOptions(consumers or 1, tuple(pairs))


def check_consume(consume: ConsumeOptions | None, runner_master: Any, workload: Any) -> None:
    """Refuse --consume where it cannot measure, before any broker starts."""
    if consume is None:
        return
    if runner_master is not None:
        raise UsageError("--consume is not available with --runner spark yet: the shares "
                         "start on other hosts, whose clocks are not the consumers' (see "
                         "docs/guides/end-to-end-latency.md). Measure end-to-end latency "
                         "with --runner local.")
    from producer_core.measure.verify_read import verify_unsupported

    reason = verify_unsupported(workload)
    if reason:
        raise UsageError(reason.replace("--verify", "--consume"))


def consuming(run: Callable[..., Any], consume: ConsumeOptions | None, verify: bool,
              say: Callable[[str], None]) -> Callable[..., Any]:
    """`run` with consumers when --consume was given."""
    if consume is None:
        return run
    from producer_core.measure.consuming_run import ConsumingRun

    return ConsumingRun(run, consume, say, verify)
