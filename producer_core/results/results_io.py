"""Keeping results: the results directory (`--out DIR`), facts about the run, and loading.

A results directory holds::

    results.json                     the run or comparison document (schema_version 1,
                                     producer_core/schemas/results-v1.json)
    runs/<mode>-<round>/latency.hgrm latency percentile distribution, HdrHistogram text (ms)
    runs/<mode>-<round>/latency.hdr  the encoded latency HdrHistogram (µs), mergeable exactly
    runs/<mode>-<round>/requests.parquet  one row per ProduceRequest
                                         (producer_core.results.request_log)

Each run document names its companion files in ``files`` (paths relative to the
directory, producer_core.results.run_files): it is built with them, before anything is
written. ``load_results`` reads a directory or any results JSON (including files
written by ``--json``), checks ``schema_version`` and the schema, and says what is wrong.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from producer_core.errors import UsageError
from producer_core.results.histogram import LatencyHistogram
from producer_core.results.metrics import SCHEMA_VERSION, Results
from producer_core.results.run_facts import RunFacts, host_facts, kbatch_version
from producer_core.results.run_files import run_group
from producer_core.results.schema_check import errors as schema_errors

__all__ = [
    "GROUPED_KINDS",
    "RESULTS_FILE",
    "LoadedResults",
    "ResultsError",
    "RunRecorder",
    "add_facts",
    "host_facts",
    "kbatch_version",
    "load_results",
    "merge_encoded",
    "results_schema",
    "run_group",
    "validate_document",
    "write_document",
    "write_json",
    "write_results_dir",
    "write_run_files",
]

RESULTS_FILE = "results.json"
GROUPED_KINDS = ("comparison", "sweep", "capacity")
"""Documents holding several runs: compare-modes' comparison (runs grouped by mode) and a
sweep (runs grouped by cell, `kbatch sweep`)."""
SCHEMA_FILE = "results-v1.json"


class ResultsError(UsageError):
    """A results file or directory cannot be read as kbatch results (exit code 2)."""


# --------------------------------------------------------------------------- schema


@functools.cache
def results_schema() -> dict[str, Any]:
    """The JSON Schema of results documents (version 1)."""
    schema_file = resources.files("producer_core").joinpath("schemas", SCHEMA_FILE)
    text = schema_file.read_text(encoding="utf-8")
    return json.loads(text)


def validate_document(document: Any, what: str = "results") -> None:
    """Raise ResultsError unless ``document`` is a version-1 run or comparison."""
    if not isinstance(document, dict):
        raise ResultsError(f"{what} is not a kbatch results document (not a JSON object).")
    version = document.get("schema_version")
    if version != SCHEMA_VERSION:
        raise ResultsError(
            f"{what} has schema_version {version!r}; this kbatch reads schema_version "
            f"{SCHEMA_VERSION}."
        )
    schema = results_schema()
    kind = document.get("kind") if document.get("kind") in GROUPED_KINDS else "run"
    problems = schema_errors(document, schema["$defs"][kind], schema)
    if problems:
        shown = "; ".join(problems[:6])
        more = f" (and {len(problems) - 6} more)" if len(problems) > 6 else ""
        raise ResultsError(f"{what} does not match the results schema ({kind}): "
                           f"{shown}{more}.")


# --------------------------------------------------------------------------- facts


def utc_now() -> str:
    """Now, ISO 8601 in UTC with millisecond precision."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def add_facts(document: dict[str, Any], embedded: bool, broker: str | None = None, *,
              implementation: str | None = None, version: str | None = None) -> None:
    """Add kbatch/broker versions and host facts to a document built without them.

    For documents assembled outside the run pipeline (test fixtures, benchmarks); the CLI
    builds its documents with their facts (`run_facts.RunFacts`)."""
    facts = RunFacts(broker or "", embedded, implementation, version)
    document.update(facts.versions())
    if document.get("kind") in GROUPED_KINDS:
        runs = document["runs"]
        document.setdefault("started_at", runs[0].get("started_at") if runs else None)
        for run in runs:
            run.update(facts.versions())
            if broker is not None and not run.get("broker"):
                run["broker"] = broker


class RunRecorder:
    """Wraps the engine's ``run``: stamps each Results with its start and keeps them.

    compare() returns documents; the per-request logs live only in the Results objects,
    so `--out` collects them here, in the order compare() runs them.
    """

    def __init__(self, run: Callable[..., Results]) -> None:
        self._run = run
        self.results: list[Results] = []

    def __call__(self, *args: Any, **kwargs: Any) -> Results:
        started_at = utc_now()
        results = self._run(*args, **kwargs)
        results.started_at = started_at
        self.results.append(results)
        return results


# --------------------------------------------------------------------------- writing


def write_json(path: Path, payload: Any) -> None:
    """Write JSON atomically (a CI job never reads half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(payload, indent=2) + "\n")
    tmp.replace(path)


def write_results_dir(out_dir: Path, document: dict[str, Any],
                      results: Sequence[Results]) -> Path:
    """Write results.json and every run's .hgrm, encoded histogram and request log.

    ``document`` is a run (``results`` holds its one Results) or a comparison (``results``
    in the order of ``document['runs']``), built for a directory: each run names its
    companion files (``run_document(..., files=True)``), and they are written where it
    says. Returns the path of results.json; raises ResultsError (after writing it) if the
    document does not match the schema.
    """
    runs = document["runs"] if document.get("kind") in GROUPED_KINDS else [document]
    if len(runs) != len(results):
        raise ValueError(f"{len(runs)} run documents but {len(results)} Results")
    out_dir.mkdir(parents=True, exist_ok=True)
    for run, result in zip(runs, results, strict=True):
        write_run_files(out_dir, run, result)
    return write_document(out_dir, document)


def write_run_files(out_dir: Path, run: dict[str, Any], result: Results) -> None:
    """One run's .hgrm, encoded histogram and request log (and, with --consume, its
    end-to-end histograms), at the paths its document names in ``files``."""
    from producer_core.results.request_log import write_request_log

    files = run.get("files")
    if files is None:
        raise ValueError("a run document written to a results directory names its files: "
                         "build it with files=True")
    paths = {key: out_dir / name for key, name in files.items()}
    for path in paths.values():
        path.parent.mkdir(parents=True, exist_ok=True)
    latency = result.metrics.latency
    paths["latency_hgrm"].write_text(latency.to_hgrm())
    paths["latency_hdr"].write_text(latency.encode() + "\n")
    write_request_log(paths["requests"], result, int(run.get("round", 1)))
    if ("e2e_latency_hgrm" in paths) != (result.e2e is not None):
        raise ValueError("a run's e2e files are named exactly when consumers measured it")
    if result.e2e is not None:  # --consume
        paths["e2e_latency_hgrm"].write_text(result.e2e.to_hgrm())
        paths["e2e_latency_hdr"].write_text(result.e2e.encode() + "\n")


def write_document(out_dir: Path, document: dict[str, Any]) -> Path:
    """Write results.json (atomically) and check it against the schema."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / RESULTS_FILE
    write_json(path, document)
    # Checked after writing, on the JSON form (tuples become arrays): a run's results are
    # kept even if they drift from the schema, and the error says so loudly.
    validate_document(json.loads(path.read_text(encoding="utf-8")), str(path))
    return path


# --------------------------------------------------------------------------- reading


@dataclass
class LoadedResults:
    """One results document and where it came from."""

    path: Path
    document: dict[str, Any]

    @property
    def base(self) -> Path:
        """The directory companion file paths are relative to."""
        return self.path.parent

    @property
    def kind(self) -> str:
        """'comparison' for every document of several runs (a sweep is a comparison of
        cells: its ``modes`` and ``summary`` are keyed by cell)."""
        return "comparison" if self.document.get("kind") in GROUPED_KINDS else "run"

    @property
    def runs(self) -> list[dict[str, Any]]:
        return self.document["runs"] if self.kind == "comparison" else [self.document]

    @property
    def modes(self) -> list[str]:
        if self.kind == "comparison":
            return list(self.document["modes"])
        return [self.document["mode"]]

    def companion(self, run: dict[str, Any], key: str) -> Path | None:
        """A run's companion file (``latency_hgrm``, ``latency_hdr``, ``requests``), if any."""
        name = run.get("files", {}).get(key)
        if not name:
            return None
        path = self.base / name
        return path if path.is_file() else None

    def latency_histogram(self, mode: str) -> LatencyHistogram:
        """The latency histogram of a mode, merged exactly over its rounds."""
        return merge_encoded(run["histograms"]["latency_us"] for run in self.runs
                             if run_group(run) == mode)


class _NonFinite(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    """json's NaN, Infinity and -Infinity: Python writes them, JSON has no such numbers,
    and a gate comparing against NaN would silently hold (every comparison is false)."""
    raise _NonFinite(name)


MAX_RESULTS_BYTES = 1 << 30
"""Results of the longest sweep are tens of MB; a file larger than this is not results."""
MAX_RESULT_INT = 1 << 63
"""No count, byte total or nanosecond clock kbatch writes reaches 2**63."""
MAX_RESULT_FLOAT = 1e18
"""No duration, rate or percentile kbatch writes is near this; beyond it sums overflow."""


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > 19 or abs(int(text)) >= MAX_RESULT_INT:
        raise _NonFinite(f"the integer {text[:30]}{'...' if len(text) > 30 else ''} "
                         f"({len(text)} digits)")
    return int(text)


def _bounded_float(text: str) -> float:
    value = float(text)
    if not abs(value) < MAX_RESULT_FLOAT:  # also inf (1e999) and nan
        raise _NonFinite(f"the number {text[:30]}")
    return value


def load_results(path: str | Path) -> LoadedResults:
    """Read a results directory (its results.json) or a results JSON file, checked."""
    path = Path(path)
    if path.is_dir():
        file = path / RESULTS_FILE
        if not file.is_file():
            raise ResultsError(f"{path} is a directory without {RESULTS_FILE}; give a "
                               "directory written with --out, or a results JSON file.")
        path = file
    if not path.exists():
        raise ResultsError(f"No results at {path}: no such file or directory.")
    if not path.is_file():
        raise ResultsError(f"{path} is not a regular file (a device, FIFO or socket), so it "
                           "cannot be kbatch results; give a results JSON file or directory.")
    if path.stat().st_size > MAX_RESULTS_BYTES:
        raise ResultsError(f"{path} is larger than {MAX_RESULTS_BYTES >> 20} MiB, so it "
                           "is not kbatch results.")
    try:
        document = json.loads(path.read_text(encoding="utf-8"),
                              parse_constant=_refuse_constant,
                              parse_int=_bounded_int, parse_float=_bounded_float)
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsError(f"Cannot read results {path}: {exc}.") from None
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path} is not valid JSON: {exc}.") from None
    except _NonFinite as exc:
        raise ResultsError(f"{path} holds {exc.args[0]}, which is not a number a result can "
                           "have (damaged or hand-edited results); nothing was evaluated."
                           ) from None
    except RecursionError:
        raise ResultsError(f"{path} is nested too deeply to be kbatch results.") from None
    validate_document(document, str(path))
    loaded = LoadedResults(path, document)
    check_companions(loaded)
    return loaded


def check_companions(loaded: LoadedResults) -> None:
    """Every companion file a results directory lists must be there and readable: one with
    a missing or damaged request log is damaged, and a report or gate over it would
    silently leave out what the log holds. A results JSON file without any of them beside
    it (a copy of results.json) is read alone, as before."""
    listed = [(key, name) for run in loaded.runs
              for key, name in (run.get("files") or {}).items()]
    if not any((loaded.base / name).exists() for _, name in listed):
        return
    for key, name in listed:
        path = loaded.base / name
        if not path.is_file():
            raise ResultsError(
                f"{loaded.path} lists {key} file {name}, but {path} is missing or not a "
                "regular file: the results directory is damaged. Write the results again, "
                "or give the results JSON file alone.")
        if key == "requests":
            from producer_core.results.request_log import read_request_log

            read_request_log(path)


def merge_encoded(blobs: Iterable[str]) -> LatencyHistogram:
    """One histogram holding every value of the encoded histograms (exact)."""
    total = LatencyHistogram()
    for blob in blobs:
        total.merge(LatencyHistogram.decode(blob))
    return total

