"""Exit codes from results: failed/unknown (3), --verify problems (4), --allow-failures."""

from __future__ import annotations

import os
import signal

import pytest

from cli.app.errors import Interrupted
from cli.app.stopping import StopOnSignal, accepts_stop
from cli.render.outcome import EXIT_OK, EXIT_UNDELIVERED, EXIT_VERIFY, exit_code


def run(failed: int = 0, unknown: int | None = None, problems: list[str] | None = None,
        **extra) -> dict:
    messages = {"acknowledged": 10, "failed": failed}
    if unknown is not None:
        messages["unknown"] = unknown
    document = {"mode": "partition", "messages": messages, **extra}
    if problems is not None:
        document["verify"] = {"problems": problems}
    return document


def test_clean_run_exits_0() -> None:
    assert exit_code([run()], allow_failures=False) == (EXIT_OK, [])


@pytest.mark.parametrize("failed,unknown", [(2, None), (0, 3), (1, 1)])
def test_failed_or_unknown_exit_3(failed, unknown) -> None:
    code, reasons = exit_code([run(failed, unknown)], allow_failures=False)
    assert code == EXIT_UNDELIVERED
    assert f"{failed:,} messages failed and {unknown or 0:,} have an unknown outcome" in reasons[0]


def test_allow_failures_keeps_0_but_says_so() -> None:
    code, reasons = exit_code([run(5, 2)], allow_failures=True)
    assert code == EXIT_OK
    assert "allowed by --allow-failures" in reasons[0]


def test_verify_problem_exits_4_even_with_allow_failures() -> None:
    runs = [run(1, problems=["3 acknowledged messages missing"])]
    for allow in (False, True):
        code, reasons = exit_code(runs, allow_failures=allow)
        assert code == EXIT_VERIFY
        assert any("3 acknowledged messages missing" in r for r in reasons)


def test_clean_verify_keeps_0() -> None:
    assert exit_code([run(problems=[])], allow_failures=False)[0] == EXIT_OK


def test_comparison_takes_the_worst_run() -> None:
    runs = [run(round=1), run(failed=1, round=1), run(problems=["x"], round=2)]
    code, reasons = exit_code(runs, allow_failures=False)
    assert code == EXIT_VERIFY
    assert any("round 2" in r for r in reasons)


def test_first_signal_sets_the_event_second_interrupts() -> None:
    with StopOnSignal() as stopper:
        os.kill(os.getpid(), signal.SIGTERM)
        assert stopper.event.wait(1)
        assert stopper.exit_code == 143 and stopper.name == "SIGTERM"
        with pytest.raises(Interrupted) as caught:
            os.kill(os.getpid(), signal.SIGINT)  # handled at the next bytecode
        assert caught.value.signum == signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_a_run_that_cannot_stop_is_interrupted_at_once() -> None:
    with StopOnSignal(stoppable=False) as stopper, pytest.raises(Interrupted):
        os.kill(os.getpid(), signal.SIGINT)
    assert stopper.exit_code == 130


def test_accepts_stop() -> None:
    def old(workload, settings, mode, bootstrap, on_progress=None, deliveries=None):
        return None

    def new(workload, settings, mode, bootstrap, on_progress=None, deliveries=None,
            stop=None):
        return None

    assert not accepts_stop(old)
    assert accepts_stop(new)


@pytest.mark.parametrize("failed,allow,code", [
    (0, False, EXIT_VERIFY),        # nothing failed, delivery unconfirmed: 4
    (5, False, EXIT_UNDELIVERED),   # the run's own code: 3
    (5, True, EXIT_VERIFY),         # failures allowed, delivery still unconfirmed
])
def test_a_failed_read_back_keeps_the_runs_own_code(failed, allow, code) -> None:
    failed_read = run(failed=failed)
    failed_read["verify"] = {"problems": [], "read_error": "brokers unreachable"}
    got, reasons = exit_code([failed_read], allow_failures=allow)
    assert got == code
    assert any("could not read the topics back" in r and "brokers unreachable" in r
               for r in reasons)


def test_a_failed_read_back_document_matches_the_schema() -> None:
    from producer_core.engine.drivers.run_types import Delivery
    from producer_core.measure.verify_read import failed_read_document
    deliveries = [Delivery("t", 0, 0, [1, 2, 3]), Delivery("t", 1, 0, [4], aborted=True)]
    document = failed_read_document(deliveries, {"idempotence": {"enabled": True}},
                                    "gone", 1.25)
    assert document["acknowledged"] == 3 and document["read_complete"] is False
    assert document["idempotence"] is True and document["read_error"] == "gone"
