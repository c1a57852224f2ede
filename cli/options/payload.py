"""`--payload-file FILE [--payload-delimiter D]` and `--compressibility R`: what values hold.

Kept apart from the workload options so the payload is one idea in one place; the flags
apply to the command line's topic and to every topic of a workload file alike.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from cli.options.bounded import FiniteFloat
from cli.options.common import option_given
from producer_core.errors import UsageError

if TYPE_CHECKING:  # the payload's module needs numpy: only to run, not for --help
    from producer_core.workload.payload import PayloadSpec
    from producer_core.workload.workload import Workload

PAYLOAD_FLAGS = ("payload_file", "payload_delimiter", "compressibility")


def payload_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The payload flags, shared by `produce` and `compare-modes`."""
    options = [
        click.option("--payload-file", type=click.Path(dir_okay=False, path_type=Path),
                     default=None,
                     help="Values are records of this file (one per line, or split at "
                          "--payload-delimiter), chosen per message by --seed, as "
                          "kafka-producer-perf-test; each is prefixed with the 8-byte "
                          "message id; the file decides the sizes (not --message-size)."),
        click.option("--payload-delimiter", default="\\n", show_default=True,
                     help="Record separator of --payload-file (\\n, \\t, \\r, \\0 or any "
                          "text)."),
        click.option("--compressibility", type=FiniteFloat(0.0, 1.0), default=0.0,
                     show_default=True,
                     help="Share of each generated value that is text-like (0: random "
                          "bytes, incompressible; 0.9: gzip ~2.3x). See docs/guides/workloads.md "
                          "and docs/findings/compression.md."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def payload_from_flags(flags: dict[str, Any]) -> PayloadSpec:
    """Take the payload flags out of a command's keyword arguments."""
    from producer_core.workload.payload import PayloadSpec

    path, delimiter, compressibility = (flags.pop(name) for name in PAYLOAD_FLAGS)
    if path is None:
        if option_given("payload_delimiter"):
            raise UsageError("--payload-delimiter applies only with --payload-file.")
        return PayloadSpec(compressibility=compressibility)
    if option_given("message_size"):
        raise UsageError("--message-size cannot be combined with --payload-file: the file's "
                         "records are the values (each prefixed with the 8-byte message id).")
    return PayloadSpec("file", compressibility, str(path), delimiter)


def with_payload(workload: Workload, payload: PayloadSpec) -> Workload:
    from producer_core.workload.payload import PayloadSpec

    return workload if payload == PayloadSpec() else replace(workload, payload=payload)
