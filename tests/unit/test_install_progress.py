"""A first-use build's progress (cli/render/install_progress.py): every line in a log; on a terminal
each step's line stays and its count updates in place (a spinner with the step's time)."""

from __future__ import annotations

import io
import re

from rich.console import Console

from cli.render.install_progress import InstallProgress

STEPS = ["Fetching librdkafka 2.12.1's sources...", "Applying 1 patch to librdkafka...",
         "Building librdkafka from /t...", "Compiling librdkafka: 20 C files so far...",
         "Compiling librdkafka: 40 C files so far...", "librdkafka 2.12.1 built from /t."]


def test_a_log_gets_every_line_as_it_comes() -> None:
    text = io.StringIO()
    with InstallProgress(Console(file=text, force_terminal=False, width=200)) as progress:
        for line in STEPS:
            progress(line)
    assert text.getvalue().splitlines() == STEPS


def test_a_terminal_keeps_the_steps_and_counts_in_place() -> None:
    text = io.StringIO()
    with InstallProgress(Console(file=text, force_terminal=True, width=200)) as progress:
        for line in STEPS:
            progress(line)
    plain = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", text.getvalue())
    kept = [line for line in plain.splitlines() if line in STEPS]  # printed, not drawn
    assert kept == [line for line in STEPS if not line.startswith("Compiling")]
    assert "Compiling librdkafka: 40 C files so far..." in plain  # drawn by the spinner
