"""`--client-build CLIENT=PATH`: run your own build of a client in place of its pinned one.

The build is registered by the client's mode (`ModeSpec.build`) as one more version named
by its content hash, so ``--mode kafka-java --client-build kafka-java=JAR`` runs
``kafka-java@build-<hash>``: the results and tables name it, two runs of the same jar are
recognisably the same build, and another release (``kafka-java@4.4.0``) can run beside it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import click

from producer_core.errors import UsageError


def client_build_options(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--client-build", "client_builds", multiple=True, metavar="CLIENT=PATH",
        help="Run your own build of a client where the mode names it without a version: "
             "kafka-java=JAR (a kafka-clients jar, e.g. clients/build/libs/kafka-clients-"
             "4.5.0-SNAPSHOT.jar), librdkafka=DIR (a librdkafka source tree, built once), "
             "franz-go=DIR, sarama=DIR or kafka-go=DIR (a checkout of that Go module, built "
             "into kbatch's Go driver through a replace directive). Results name it by its "
             "path and content hash.")(func)


def apply_client_builds(builds: Sequence[str], modes: Sequence[str],
                        progress: Callable[[str], None]) -> list[str]:
    """The modes with each built client's plain name replaced by its build's label."""
    from producer_core.engine.modes import register_build

    labels: dict[str, str] = {}
    for item in builds:
        client, eq, path = item.partition("=")
        if not eq or not client.strip() or not path.strip():
            raise UsageError(f"Malformed --client-build {item!r}: expected CLIENT=PATH, e.g. "
                             "--client-build kafka-java=kafka-clients.jar.")
        if client.strip() not in modes:
            raise UsageError(f"--client-build {item!r}: no run of mode {client.strip()!r} "
                             f"(modes: {', '.join(modes)}) would use it.")
        try:
            labels[client.strip()] = register_build(client.strip(), path.strip(), progress)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    return [labels.get(mode, mode) for mode in modes]


def built_mode_configs(items: Sequence[str], given: Sequence[str],
                       modes: Sequence[str]) -> tuple[str, ...]:
    """``--mode-config kafka-java:KEY=VALUE`` for a mode a build replaced: aimed at the
    build's label (``kafka-java@build-<hash>:KEY=VALUE``), as the user meant."""
    renamed = {old: new for old, new in zip(given, modes, strict=True) if old != new}
    out = []
    for item in items:
        mode, sep, rest = item.partition(":")
        out.append(f"{renamed[mode.strip()]}:{rest}" if sep and mode.strip() in renamed
                   else item)
    return tuple(out)
