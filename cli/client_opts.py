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
from producer_core.errors import ConfigError, UsageError
from producer_core.modes import PASSTHROUGH_MODES
from producer_core.properties import load_properties
from producer_core.topic_creation import TopicCreation, parse_topic_creation

BOOTSTRAP_KEY = "bootstrap.servers"


def client_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The client-properties file and the topic-creation options."""
    options = [
        click.option("--command-config", "--producer.config", "command_config",
                     type=click.Path(path_type=Path), default=None, metavar="FILE",
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
    ]
    for option in reversed(options):
        func = option(func)
    return func


@dataclass(frozen=True)
class ClientInputs:
    """The cluster address and the settings assignments from the file and -X, in order."""

    bootstrap: str | None
    assignments: tuple[tuple[str, str], ...]
    topic_creation: TopicCreation


def client_inputs(command_config: Path | None, overrides: Sequence[str],
                  bootstrap_servers: str | None, modes: Sequence[str],
                  replication_factor: int | None = None,
                  topic_configs: Sequence[str] = ()) -> ClientInputs:
    """Read the properties file and -X; pick bootstrap servers (--bootstrap-servers, then
    -X bootstrap.servers, then the file's); check the file's keys against every mode."""
    file_items: list[tuple[str, str]] = []
    bootstrap = None
    if command_config is not None:
        for prop in load_properties(command_config):
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
    for text in overrides:
        key, value = parse_assignment(text)
        if key == BOOTSTRAP_KEY:
            bootstrap = value
        else:
            cli_items.append((key, value))
    return ClientInputs(bootstrap_servers or bootstrap, (*file_items, *cli_items),
                        parse_topic_creation(replication_factor, topic_configs))


def finish_settings(settings: ProducerSettings, client: ClientInputs) -> ProducerSettings:
    """Attach topic creation, and refuse security settings without a cluster to use them."""
    if client.bootstrap is None and settings.security.protocol != "PLAINTEXT":
        raise UsageError(
            f"security.protocol={settings.security.protocol} needs a cluster: give "
            "--bootstrap-servers (or bootstrap.servers in the --command-config file). The "
            "embedded broker kbatch starts otherwise speaks PLAINTEXT only.")
    return replace(settings, topic_creation=client.topic_creation)
