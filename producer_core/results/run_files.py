"""The companion files of a run in a results directory (`--out DIR`): their names.

A run document written to a directory names its files in ``files`` (paths relative to
the directory). The names follow from the run alone (its sweep cell or mode, its round,
whether consumers measured end-to-end latency), so the document is built with them before
anything is written, and the writer (results_io.write_results_dir) writes what it names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from producer_core.results.metrics import Results


def run_group(run: dict[str, Any]) -> str:
    """What a run is grouped under: its sweep cell, else its mode."""
    return run.get("cell") or run["mode"]


def run_dir_name(run: dict[str, Any]) -> str:
    """The run's directory under runs/: its group and round, e.g. ``partition-1``."""
    return f"{run_group(run)}-{run.get('round', 1)}"


def companion_files(name: str, e2e: bool) -> dict[str, str]:
    """The files of run directory ``name``, relative to the results directory, in the
    order the results schema documents them (end-to-end latency only with --consume)."""
    files = {
        "latency_hgrm": f"runs/{name}/latency.hgrm",
        "latency_hdr": f"runs/{name}/latency.hdr",
        "requests": f"runs/{name}/requests.parquet",
    }
    if e2e:
        files.update({"e2e_latency_hgrm": f"runs/{name}/e2e_latency.hgrm",
                      "e2e_latency_hdr": f"runs/{name}/e2e_latency.hdr"})
    return files


def files_of(results: Results, extra: dict[str, Any]) -> dict[str, str]:
    """The companion files of the run document of ``results`` with ``extra`` (its round,
    its cell)."""
    return companion_files(run_dir_name({"mode": results.mode, **extra}),
                           results.e2e is not None)
