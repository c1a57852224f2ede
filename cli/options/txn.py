"""`--transactional-id`, `--transaction-duration-ms`, `--abort-every`: kafka-producer-perf-test's
transaction options, as shorthands for the `-X transactional.id`, `transaction.duration.ms`
and `transaction.abort.every` settings (one place for the semantics: the settings)."""

from __future__ import annotations

import functools
from typing import Any

import click

FLAGS = (("transactional_id", "transactional.id"),
         ("transaction_duration_ms", "transaction.duration.ms"),
         ("abort_every", "transaction.abort.every"))


def transaction_options(func: Any) -> Any:
    """Add the options; they reach the command as `-X` settings in `overrides`."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        extra = [f"{name}={kwargs.pop(flag)}" for flag, name in FLAGS
                 if kwargs.get(flag) is not None]
        for flag, _ in FLAGS:
            kwargs.pop(flag, None)
        kwargs["overrides"] = (*kwargs.get("overrides", ()), *extra)
        return func(*args, **kwargs)

    wrapper = click.option(
        "--abort-every", type=int, default=None, metavar="K",
        help="With a transactional id: abort every K-th transaction instead of committing "
             "it (-X transaction.abort.every); --verify then checks with read_committed "
             "that no aborted record is visible.")(wrapper)
    wrapper = click.option(
        "--transaction-duration-ms", type=int, default=None, metavar="MS",
        help="With a transactional id: commit each transaction this long after it began "
             "(-X transaction.duration.ms, default 3000, as kafka-producer-perf-test).")(wrapper)
    return click.option(
        "--transactional-id", default=None, metavar="ID",
        help="Transactional producer with this id (-X transactional.id): see "
             "docs/guides/transactions.md.")(wrapper)
