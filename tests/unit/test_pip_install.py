"""A first-use install's live progress (issue 44): pip's lines passed on as they come, and
the bytes of the wheel it downloads, polled from its temporary directory. Run here with a
stand-in for pip (a real child process writing a wheel in pieces), so no index is needed;
tests/integration/test_librdkafka_install.py runs the real pip."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from producer_core.engine.drivers.pip_install import announced_size, downloaded, run_pip

FAKE_PIP = textwrap.dedent("""
    import os, sys, time
    print("Collecting confluent-kafka==9.9.9", flush=True)
    print("  Downloading confluent_kafka-9.9.9-cp311-none.whl (1.5 MB)", flush=True)
    path = os.path.join(os.environ["TMPDIR"], "pip-unpack-x", "confluent_kafka.whl")
    os.makedirs(os.path.dirname(path))
    with open(path, "wb") as out:
        for _ in range(6):
            out.write(b"x" * 250_000)
            out.flush()
            time.sleep(float(sys.argv[2]) if len(sys.argv) > 2 else 0.1)
    os.remove(path)
    print("Installing collected packages: confluent-kafka", flush=True)
    print("some other line", flush=True)
    print("Successfully installed confluent-kafka-9.9.9", flush=True)
    sys.exit(int(sys.argv[1]))
""")


class Recorder:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.transfers: list[tuple[int, int | None, str]] = []
        self.events: list[str] = []  # both, in the order they were reported

    def __call__(self, text: str) -> None:
        self.lines.append(text)
        self.events.append(text)

    def on_transfer(self, done: int, total: int | None, what: str) -> None:
        self.transfers.append((done, total, what))
        self.events.append(f"{done} of {total}")


def test_pips_lines_come_as_they_come_and_the_bytes_end_at_the_whole_wheel(tmp_path) -> None:
    script = tmp_path / "pip.py"
    script.write_text(FAKE_PIP)
    seen = Recorder()
    code, output = run_pip([sys.executable, str(script), "0"], tmp_path / "tmp", seen, 60)
    assert code == 0 and "some other line" in output
    assert seen.lines == ["Collecting confluent-kafka==9.9.9",
                          "Downloading confluent_kafka-9.9.9-cp311-none.whl (1.5 MB)",
                          "Installing collected packages: confluent-kafka",
                          "Successfully installed confluent-kafka-9.9.9"]
    assert seen.transfers[-1] == (1_500_000, 1_500_000, "confluent_kafka-9.9.9-cp311-none.whl")
    done = [d for d, _, _ in seen.transfers]
    assert done == sorted(done)  # never backwards, though pip removed the wheel


def test_a_download_faster_than_the_sampling_is_reported_before_pip_moves_on(
        tmp_path) -> None:
    # a local index: pip downloads and installs between two samples (a CI run printed the
    # bytes after "Successfully installed"); the whole wheel is reported before the line
    # pip wrote after it, and nothing of it after that
    script = tmp_path / "pip.py"
    script.write_text(FAKE_PIP)
    seen = Recorder()
    code, _ = run_pip([sys.executable, str(script), "0", "0"], tmp_path / "tmp", seen, 60)
    assert code == 0
    # (a sample may also catch the whole wheel before pip moves on: order, not counts)
    moved_on = seen.events.index("Installing collected packages: confluent-kafka")
    assert seen.events[moved_on - 1] == "1500000 of 1500000", seen.events
    assert seen.events[moved_on + 1:] == ["Successfully installed confluent-kafka-9.9.9"]


def test_a_failing_pip_gives_its_code_and_output_and_no_completed_transfer(tmp_path) -> None:
    script = tmp_path / "pip.py"
    script.write_text(FAKE_PIP)
    seen = Recorder()
    code, output = run_pip([sys.executable, str(script), "3"], tmp_path / "tmp", seen, 60)
    assert code == 3 and "Collecting" in output
    assert all(total is None or done <= total for done, total, _ in seen.transfers)


def test_a_plain_callback_gets_the_lines_only(tmp_path) -> None:
    script = tmp_path / "pip.py"
    script.write_text(FAKE_PIP)
    lines: list[str] = []
    assert run_pip([sys.executable, str(script), "0"], tmp_path / "tmp", lines.append, 60)[0] == 0
    assert lines[0].startswith("Collecting") and lines[-1].startswith("Successfully")


def test_sizes() -> None:
    assert announced_size("Downloading x.whl (3.9 MB)") == 3_900_000
    assert announced_size("Downloading x.whl (812 kB)") == 812_000
    assert announced_size("Collecting x") is None


def test_downloaded_counts_wheels_only(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.whl").write_bytes(b"1" * 10)
    (tmp_path / "a" / "x.py").write_bytes(b"1" * 99)
    assert downloaded(tmp_path) == 10
