"""`kbatch lab`: the group; its subcommands (up, down, status, restart) are in
cli.lab.commands, imported only when one runs or shows its help, so `kbatch lab --help`
loads no client or broker module (cli/app/lazy_group.py)."""

from __future__ import annotations

import click

from cli.app.lazy_group import LazyCommands, LazyGroup

LAB_COMMANDS: dict[str, tuple[str, str]] = {
    "up": ("cli.lab.commands:up",
           "Start a lab in the foreground; print its bootstrap servers on stdout."),
    "down": ("cli.lab.commands:down",
             "Stop the lab that `kbatch lab up` runs (nothing to do if none runs)."),
    "status": ("cli.lab.commands:status", "Print the running lab's bootstrap servers and "
                                          "each node's state (exit 1 if none runs)."),
    "restart": ("cli.lab.commands:restart",
                "Start node NODE of the running lab again after it died (or was killed)."),
}
"""name -> ("module:attribute" of the subcommand, its help's first paragraph)."""


@click.group(cls=LazyGroup, commands=LazyCommands(LAB_COMMANDS))
def lab() -> None:
    """A multi-broker Kafka lab on this machine, with network delay.

    `kbatch lab up --brokers 3 --rtt-ms 1` starts 3 embedded Tansu brokers and a facade
    that presents them to any Kafka client as one 3-node cluster (node ids 1..3, each on
    its own loopback port, partition leadership round-robin), holding every response back
    to emulate the round trip. It prints the bootstrap servers and runs until
    `kbatch lab down` or Ctrl-C. `kbatch produce` and `compare-modes` take the same
    `--brokers N --rtt-ms R` to run on a lab of their own. `--broker kafka` makes the lab
    real Apache Kafka instead (1 or 3 KRaft nodes, a delay relay in front of each).
    """
