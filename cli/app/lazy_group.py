"""A Click group whose commands are imported only when one of them is used.

`kbatch --help` should answer in a blink, as kcat does; most of kbatch's start-up was
importing every command's modules (numpy, aiokafka, rich tables, PySpark's planner)
whatever the command line asked for. Each command is registered by name with the
"module:attribute" that defines it and its one-line help, so the group lists its commands
without importing any (Click's "LazyGroup" pattern). The group's `commands` stays a
mapping of name -> command that loads an entry on first access, so Click's own lookup,
"did you mean" and anything walking the tree behave as with an eager group.
tests/cli/test_startup_imports.py checks each one-line help against the command's own.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from types import ModuleType

import click

from cli.app.streams import end_startup_signals, guard_startup_signals


@contextmanager
def start_up_signals() -> Iterator[None]:
    """Around a command's late imports: a signal meanwhile exits at once with one line
    and 128 + the signal (cli.app.streams), as it did when cli.main imported everything."""
    guard_startup_signals()
    try:
        yield
    finally:
        end_startup_signals()


def guarded_import(module_name: str) -> ModuleType:
    """Import a module now, under `start_up_signals`."""
    with start_up_signals():
        return importlib.import_module(module_name)


def load_command(import_path: str) -> click.Command:
    """The Click command at "package.module:attribute", imported now."""
    module_name, _, attribute = import_path.partition(":")
    command = getattr(guarded_import(module_name), attribute)
    if not isinstance(command, click.Command):
        raise TypeError(f"{import_path} is not a Click command")
    return command


class LazyCommands(MutableMapping[str, click.Command]):
    """name -> Click command, each imported on first access; iterates in table order."""

    def __init__(self, table: Mapping[str, tuple[str, str]]) -> None:
        self.table = dict(table)  # name -> ("module:attribute", one-line help)
        self.loaded: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self.loaded:
            if name not in self.table:
                raise KeyError(name)
            self.loaded[name] = load_command(self.table[name][0])
        return self.loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self.loaded[name] = command

    def __delitem__(self, name: str) -> None:
        if name not in self.table and name not in self.loaded:
            raise KeyError(name)
        self.table.pop(name, None)
        self.loaded.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        yield from self.table
        yield from (name for name in self.loaded if name not in self.table)

    def __len__(self) -> int:
        return len(self.table.keys() | self.loaded.keys())

    def __contains__(self, name: object) -> bool:
        return name in self.table or name in self.loaded

    def is_hidden(self, name: str) -> bool:
        """Whether `--help` leaves `name` out (a command not loaded yet is listed)."""
        return name in self.loaded and self.loaded[name].hidden

    def short_help(self, name: str, limit: int) -> str:
        """The line `--help` lists for `name`, without importing a command not loaded."""
        if name in self.loaded:
            return self.loaded[name].get_short_help_str(limit)
        # a stand-in command shortens the line exactly as Click shortens a docstring
        return click.Command(name, help=self.table[name][1]).get_short_help_str(limit)


class LazyGroup(click.Group):
    """A group made with `commands=LazyCommands(table)`: its help imports no command."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Click's own command list, with the table's lines for commands not loaded."""
        commands = self.commands
        if not isinstance(commands, LazyCommands):
            super().format_commands(ctx, formatter)
            return
        names = [name for name in self.list_commands(ctx) if not commands.is_hidden(name)]
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)  # as Click's
        with formatter.section("Commands"):
            formatter.write_dl([(name, commands.short_help(name, limit)) for name in names])
