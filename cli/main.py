"""The `kbatch` command line: the group, and where each command is defined.

Commands are imported only when run (or their help is shown), so `kbatch --help` starts in
a blink: see cli.app.lazy_group. To add a command, add one line to COMMANDS:
    "name": ("cli.module:command", "Its help's first paragraph, as `kbatch --help` lists it."),
"""

from __future__ import annotations

import click

from cli.app.lazy_group import LazyCommands, LazyGroup
from cli.app.streams import end_startup_signals, guard_shutdown_signals

COMMANDS: dict[str, tuple[str, str]] = {
    "produce": ("cli.commands.produce:produce",
                "Produce a workload in one linger mode and report what it cost."),
    "compare-modes": ("cli.commands.compare:compare_modes",
                      "Run one workload under several modes and show them side by side."),
    "report": ("cli.commands.report:report",
               "Show saved results as tables, Markdown and charts."),
    "gate": ("cli.commands.gate:gate",
             "Check saved results against the rules of a gates file."),
    "lab": ("cli.commands.lab:lab",
            "A multi-broker Kafka lab on this machine, with network delay."),
    "analyze": ("cli.commands.analyze:analyze",
                "Analyze the request logs and results JSON of any number of runs with PySpark."),
    "sweep": ("cli.commands.sweep:sweep",
              "Sweep linger modes and windows; find the setting that meets a latency SLO with "
              "the fewest requests."),
    "perf-test": ("cli.commands.perf_test:perf_test",
                  "kafka-producer-perf-test's arguments, run by kbatch, printing perf-test's "
                  "lines."),
    "capacity": ("cli.commands.capacity:capacity",
                 "Find the highest rate each mode sustains within --slo."),
    "image": ("cli.commands.image:image",
              "The container image --broker docker runs (see docs/guides/containers.md)."),
}
"""name -> ("module:attribute" of its Click command, its help's first paragraph)."""


@click.group(cls=LazyGroup, commands=LazyCommands(COMMANDS),
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="kbatch")
def cli() -> None:
    """kbatch: measure what a Kafka producer batching (linger) policy really costs.

    Drives a rate-controlled workload through kbatch's producer engine against real
    brokers (an embedded Tansu broker unless --bootstrap-servers is given) and reports
    requests_sent, msgs_per_req and latency percentiles measured from each message's
    intended send time.
    """


def main() -> None:
    try:
        cli(prog_name="kbatch")
    finally:
        guard_shutdown_signals()


end_startup_signals()  # the group is ready; a command guards its own imports as it loads


if __name__ == "__main__":
    main()
