"""`--runner spark --workers N [--spark-master URL]` for `produce` and `compare-modes`.

Everything is checked before any broker or JVM starts: the runner, the master URL's form,
enough task slots for every share at once, a master whose workers can reach the brokers,
and that PySpark is installed (the `kbatch[spark]` extra).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rich.text import Text

from cli.options.output_mode import live_progress
from cli.options.run import RUNNER_FLAGS
from cli.render.tables import console
from producer_core.distributed.limits import DEFAULT_START_LEAD_S
from producer_core.errors import UsageError

if TYPE_CHECKING:  # the planner needs the transport (aiokafka): only for --runner spark
    from producer_core.distributed.plan import Master

@dataclass
class Runner:
    """How a command runs the engine: here, or as shares on Spark."""

    master: Master | None = None
    workers: int = 1
    start_lead_s: float = DEFAULT_START_LEAD_S
    conf: dict[str, str] = field(default_factory=dict)

    @property
    def description(self) -> str:
        if self.master is None:
            return ""
        return f", {self.workers} Spark workers on {self.master.url}"

    @contextmanager
    def open(self) -> Iterator[Callable[..., Any]]:
        """Yield a callable with the signature of `producer_core.engine.drivers.engine.run`."""
        if self.master is None:
            from producer_core.engine.drivers.engine import run

            yield run
            return
        from producer_core.distributed.spark_runner import SparkRunner

        console.print(f"Starting Spark ({self.master.url})...")
        with SparkRunner(self.master, self.workers, self.start_lead_s, self.conf) as runner:
            yield runner

    def progress(self, label: str, enabled: bool) -> Any:
        """The live display for one run (a context manager yielding its callback)."""
        if self.master is None:
            return live_progress(label, enabled)
        return spark_progress(label, enabled)


def runner_from_flags(flags: dict[str, Any], bootstrap_servers: str | None) -> Runner:
    """Take the runner flags out of a command's keyword arguments and check them."""
    runner_name, workers, master_url, lead, conf_items = (flags.pop(n) for n in RUNNER_FLAGS)
    if runner_name != "spark":
        given = [name for name, value in (("--workers", workers), ("--spark-master", master_url),
                                          ("--spark-start-lead", lead),
                                          ("--spark-conf", conf_items)) if value]
        if given:
            verb = "applies" if len(given) == 1 else "apply"
            raise UsageError(f"{', '.join(given)} only {verb} with --runner spark.")
        return Runner()
    master, workers, conf = checked_spark_target(workers, master_url, conf_items,
                                                 bootstrap_servers)
    return Runner(master, workers, DEFAULT_START_LEAD_S if lead is None else lead, conf)


def checked_spark_target(workers: int | None, master_url: str | None,
                         conf_items: tuple[str, ...], bootstrap: str | None,
                         own_brokers: bool = False) -> tuple[Master, int, dict[str, str]]:
    """`--runner spark`'s master, workers and Spark conf, checked before anything starts:
    enough slots, brokers the workers can reach, pyspark installed. `own_brokers`: without
    a bootstrap each task starts its own broker on its own machine (sweep cells), so there
    is nothing to reach."""
    from producer_core.distributed.plan import (
        check_reachable,
        check_slots,
        default_master,
        parse_master,
    )
    from producer_core.distributed.session import parse_conf, require_pyspark

    workers = workers or 2
    master = parse_master(master_url or default_master(workers))
    check_slots(master, workers)
    if bootstrap or not own_brokers:
        check_reachable(master, bootstrap)
    conf = parse_conf(conf_items)
    require_pyspark("--runner spark")
    return master, workers, conf


@contextmanager
def spark_progress(label: str, enabled: bool) -> Iterator[Any]:
    """A live line for a distributed run: tasks finished, elapsed, acknowledged so far."""
    if not enabled or not console.is_terminal:
        yield None
        return
    from rich.live import Live

    with Live(Text(f"{label}: starting Spark tasks..."), console=console,
              refresh_per_second=4, transient=True) as live:

        def update(p: Any) -> None:
            tasks = f"tasks {p.tasks_done}/{p.tasks_total} finished"
            if p.elapsed_s < 0:
                live.update(Text(f"{label}  {tasks}  shares start in {-p.elapsed_s:4.1f} s"))
                return
            rate = p.acknowledged / p.elapsed_s if p.elapsed_s > 0 else 0.0
            total = f"/{p.target_messages:,}" if p.target_messages else ""
            live.update(Text(
                f"{label}  {p.elapsed_s:6.1f} s  {tasks}  acked {p.acknowledged:,}{total} "
                f"({rate:,.0f}/s)  failed {p.failed:,}  requests {p.requests_sent:,}"))

        yield update
