"""A finished run's exit code: what the results say about delivery, not only whether it ran.

The codes (docs/reference/exit-codes.md): 0 ok; 3 some messages failed or have an unknown outcome
(`--allow-failures` keeps 0 for runs that expect faults; they are still printed); 4
`--verify` found a problem (an acknowledged message missing, or a duplicate or reorder
with idempotence on), whatever `--allow-failures` says, because the run was told its data
was safe. A `--verify` whose read-back failed keeps the run's own code: 3 when messages
failed (and --allow-failures does not allow it), else 4 (delivery was not confirmed). A
run stopped by a signal exits 128 + the signal (130 SIGINT, 143 SIGTERM).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

EXIT_OK = 0
EXIT_UNDELIVERED = 3
EXIT_VERIFY = 4


def undelivered(run: Mapping[str, Any]) -> int:
    """Messages of one run that failed or whose outcome is unknown."""
    messages = run.get("messages", {})
    return int(messages.get("failed", 0)) + int(messages.get("unknown", 0))


def verify_problems(run: Mapping[str, Any]) -> list[str]:
    verify = run.get("verify")
    return list(verify.get("problems", [])) if isinstance(verify, Mapping) else []


def exit_code(runs: Iterable[Mapping[str, Any]], allow_failures: bool) -> tuple[int, list[str]]:
    """The exit code of runs that finished, and the sentences that explain it."""
    runs = list(runs)
    reasons: list[str] = []
    code = EXIT_OK
    unconfirmed = False
    for run in runs:
        label = f"mode {run.get('mode')}" + (f" round {run['round']}" if "round" in run else "")
        problems = verify_problems(run)
        if problems:
            code = EXIT_VERIFY
            reasons.append(f"--verify ({label}): " + "; ".join(problems) + ".")
        read_error = read_failure(run)
        if read_error is not None:
            unconfirmed = True
            reasons.append(f"--verify ({label}) could not read the topics back, so delivery "
                           f"is unconfirmed: {read_error}")
    lost = sum(undelivered(run) for run in runs)
    if lost:
        messages = [run.get("messages", {}) for run in runs]
        failed = sum(int(m.get("failed", 0)) for m in messages)
        unknown = sum(int(m.get("unknown", 0)) for m in messages)
        text = f"{failed:,} messages failed and {unknown:,} have an unknown outcome"
        if allow_failures:
            reasons.append(text + " (allowed by --allow-failures).")
        else:
            reasons.append(text + ".")
            code = code or EXIT_UNDELIVERED
    if unconfirmed and not code:
        code = EXIT_VERIFY
    return code, reasons


def read_failure(run: Mapping[str, Any]) -> str | None:
    """Why a run's `--verify` read-back failed, if it did."""
    verify = run.get("verify")
    error = verify.get("read_error") if isinstance(verify, Mapping) else None
    return str(error) if error else None
