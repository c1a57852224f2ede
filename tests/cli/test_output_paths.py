"""Output paths are checked before the run: unwritable places are refused with exit 2
and nothing is run; `--out` refuses another mode's results unless `--overwrite`, which
then replaces them so two runs' files never mix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.app.output_paths import check_results_dir, clear_results_dir, writable_file
from producer_core.errors import UsageError
from producer_core.results.results_io import RunRecorder, add_facts, load_results, write_results_dir
from producer_core.results.run_facts import run_document
from tests.cli.sweep_support import run_kbatch
from tests.results_fakes import fake_results


def saved_run(path: Path, mode: str) -> Path:
    run = RunRecorder(lambda: fake_results(mode))()
    document = run_document(run, files=True)
    add_facts(document, embedded=False)
    write_results_dir(path, document, [run])
    return path


def test_results_dir_of_another_mode_or_kind_is_refused(tmp_path):
    out = saved_run(tmp_path / "out", "broker")
    check_results_dir(out, "run", ["broker"], overwrite=False)  # same mode: fine
    with pytest.raises(UsageError, match="already holds a run of mode broker; writing a run "
                                         "of mode partition there would mix"):
        check_results_dir(out, "run", ["partition"], overwrite=False)
    with pytest.raises(UsageError, match="writing a comparison of partition, broker"):
        check_results_dir(out, "comparison", ["partition", "broker"], overwrite=False)
    check_results_dir(out, "run", ["partition"], overwrite=True)
    (out / "results.json").write_text("{")
    with pytest.raises(UsageError, match="cannot read"):
        check_results_dir(out, "run", ["broker"], overwrite=False)


def test_clear_removes_only_the_results(tmp_path):
    out = saved_run(tmp_path / "out", "broker")
    (out / "notes.txt").write_text("mine")
    clear_results_dir(out)
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    clear_results_dir(tmp_path)  # no results.json: nothing is touched


@pytest.mark.parametrize("path", ["/proc/kbatch-x.json", "{tmp}/file/x.json", "{tmp}"])
def test_unwritable_files_are_refused(tmp_path, path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match="--json"):
        writable_file(Path(path.replace("{tmp}", str(tmp_path))), "--json")


def test_a_writable_file_leaves_no_probe_behind(tmp_path):
    writable_file(tmp_path / "new" / "deep" / "r.json", "--json")
    assert list((tmp_path / "new" / "deep").iterdir()) == []


@pytest.mark.broker
def test_overwrite_replaces_another_modes_results(tmp_path):
    out = saved_run(tmp_path / "out", "broker")
    refused = run_kbatch(["produce", "--no-progress", "--messages", "40", "--rate", "400",
                          "--out", str(out)])
    assert refused.exit_code == 2 and "--overwrite" in refused.output
    assert "Producing to" not in refused.output
    assert json.loads((out / "results.json").read_text())["mode"] == "broker"

    done = run_kbatch(["produce", "--no-progress", "--messages", "40", "--rate", "400",
                       "--out", str(out), "--overwrite"], seconds=60)
    assert done.exit_code == 0, done.output
    loaded = load_results(out)
    assert loaded.document["mode"] == "partition"
    assert loaded.document["messages"]["acknowledged"] == 40
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["partition-1"]


@pytest.mark.parametrize("command", [["gate", "{run}", "--gates", "{gates}"],
                                     ["report", "{run}", "--no-charts"]])
def test_markdown_into_an_unwritable_place_is_refused_before_evaluating(tmp_path, command):
    run = saved_run(tmp_path / "run", "partition")
    gates = tmp_path / "g.toml"
    gates.write_text('[[rule]]\ncheck = "requests_sent >= 1"\n')
    args = [a.replace("{run}", str(run)).replace("{gates}", str(gates)) for a in command]
    outcome = run_kbatch([*args, "--markdown", "/proc/kbatch.md"])
    assert outcome.exit_code == 2, outcome.output
    assert "--markdown /proc/kbatch.md" in outcome.output
    assert "rules hold" not in outcome.output and "Report written" not in outcome.output
    ok = run_kbatch([*args, "--markdown", str(tmp_path / "summary.md")])
    assert ok.exit_code == 0, ok.output
    assert (tmp_path / "summary.md").read_text().strip()
