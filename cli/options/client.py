"""`--command-config` / `--producer.config`, `--replication-factor` and `--topic-config`.

A properties file holds what users keep per cluster (bootstrap.servers, security.protocol,
sasl.*, ssl.*, producer settings); `-X` on the command line overrides it, and
`--bootstrap-servers` overrides its bootstrap.servers. The file's entries become the same
`(key, value)` assignments as `-X`, so one validation (`config.build_settings`) covers both;
this module only adds the file's line numbers to errors about its keys.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import click

from producer_core.config import (
    ProducerSettings,
    parse_assignment,
    setting_kind,
    unknown_setting_message,
)
from producer_core.engine.modes import PASSTHROUGH_MODES
from producer_core.errors import ConfigError, UsageError
from producer_core.properties import load_properties
from producer_core.topic_creation import TopicCreation, parse_topic_creation

BOOTSTRAP_KEY = "bootstrap.servers"


def client_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The client-properties file and the topic-creation options."""
    options = [
        click.option("--command-config", "--producer.config", "command_config",
                     type=click.Path(path_type=Path), multiple=True, metavar="FILE",
                     help="Client properties file (Java .properties syntax), as Kafka's tools "
                          "take it: bootstrap.servers, security.protocol, sasl.*, ssl.* and "
                          "any producer setting. -X overrides it. See docs/guides/"
                          "secured-clusters.md."),
        click.option("--replication-factor", type=int, default=None, metavar="N",
                     help="Replication factor of topics kbatch creates (default 1). When "
                          "given, an existing topic with another one is refused."),
        click.option("--topic-config", "topic_configs", multiple=True, metavar="KEY=VALUE",
                     help="Topic config for topics kbatch creates, e.g. --topic-config "
                          "min.insync.replicas=2. Repeatable."),
        click.option("--prime/--no-prime", default=True, expose_value=False,
                     callback=_remember_prime, is_eager=True,
                     help="Before the clock starts, write two records (key kbatch.prime, no "
                          "value) to each partition never written yet, so a new topic's "
                          "first writes and first index entries are not measured "
                          "(default). --no-prime studies a cold topic."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


PRIME_KEY = "kbatch.prime"
"""Where `--prime/--no-prime` waits in the click context for `client_inputs` (it is not
a parameter of every command's body)."""


def _remember_prime(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    ctx.meta[PRIME_KEY] = value
    return value


def prime_asked() -> bool:
    """`--prime/--no-prime` of the command being run (True outside one)."""
    ctx = click.get_current_context(silent=True)
    return bool(ctx.meta.get(PRIME_KEY, True)) if ctx is not None else True


@dataclass(frozen=True)
class ClientInputs:
    """The cluster address and the settings assignments from the file and -X, in order."""

    bootstrap: str | None
    assignments: tuple[tuple[str, str], ...]
    topic_creation: TopicCreation


def one_properties_file(files: Path | Sequence[Path] | None) -> Path | None:
    """The one --command-config given; two are refused (which should win is a guess)."""
    if files is None or isinstance(files, Path):
        return files
    distinct = list(dict.fromkeys(files))
    if len(distinct) > 1:
        raise UsageError(
            f"--command-config/--producer.config is given {len(distinct)} times "
            f"({', '.join(str(f) for f in distinct)}); kbatch reads one client properties "
            "file. Merge them into one, or give the extra settings with -X.")
    return distinct[0] if distinct else None


def _refuse_conflicts(items: Sequence[tuple[str, str, str]]) -> None:
    """One setting given twice with different values (where, key, value) is refused."""
    seen: dict[str, tuple[str, str]] = {}
    for where, key, value in items:
        if key in seen and seen[key][1] != value:
            first = seen[key][0]
            raise UsageError(
                f"{key} is given twice with different values ({first} and {where}); kbatch "
                f"does not guess which one you meant. Give it once (--transactional-id ID "
                "is -X transactional.id=ID).")
        seen.setdefault(key, (where, value))


def client_inputs(command_config: Path | Sequence[Path] | None, overrides: Sequence[str],
                  bootstrap_servers: str | None, modes: Sequence[str],
                  replication_factor: int | None = None,
                  topic_configs: Sequence[str] = ()) -> ClientInputs:
    """Read the properties file and -X; pick bootstrap servers (--bootstrap-servers, then
    -X bootstrap.servers, then the file's); check the file's keys against every mode."""
    file_items: list[tuple[str, str]] = []
    bootstrap = None
    command_config = one_properties_file(command_config)
    if command_config is not None:
        properties = load_properties(command_config)
        _refuse_conflicts([(f"{command_config} line {p.line}", p.key, p.value)
                           for p in properties])
        for prop in properties:
            if prop.key == BOOTSTRAP_KEY:
                bootstrap = prop.value.strip() or None
                continue
            for mode in modes:
                if setting_kind(prop.key, mode) == "unknown":
                    where = f"{command_config}, line {prop.line}"
                    passing = [m for m in modes if m in PASSTHROUGH_MODES]
                    hint = (f" (only mode {passing[0]} passes unknown properties to "
                            f"{passing[0]}; give it with --mode-config {passing[0]}:KEY=VALUE)"
                            if passing else "")
                    raise ConfigError(f"{where}: {unknown_setting_message(prop.key)}{hint}")
            file_items.append((prop.key, prop.value))
    cli_items = []
    parsed = [parse_assignment(text) for text in overrides]
    _refuse_conflicts([("-X " + (f"{k}={v}" if len(v) <= 40 and "password" not in k
                                 and "secret" not in k else f"{k}=..."), k, v)
                       for k, v in parsed])
    for key, value in parsed:
        if key == BOOTSTRAP_KEY:
            bootstrap = value
        else:
            cli_items.append((key, value))
    return ClientInputs(bootstrap_servers or bootstrap, (*file_items, *cli_items),
                        parse_topic_creation(replication_factor, topic_configs,
                                             prime_asked()))


def finish_settings(settings: ProducerSettings, client: ClientInputs) -> ProducerSettings:
    """Attach topic creation, and refuse security settings without a cluster to use them."""
    if client.bootstrap is None and settings.security.protocol != "PLAINTEXT":
        raise UsageError(
            f"security.protocol={settings.security.protocol} needs a cluster: give "
            "--bootstrap-servers (or bootstrap.servers in the --command-config file). The "
            "embedded broker kbatch starts otherwise speaks PLAINTEXT only.")
    return replace(settings, topic_creation=client.topic_creation)
