"""MB/s as a gate metric: a summary metric like msgs/s; absent from old results, an error."""

from __future__ import annotations

from producer_core.analysis.gate import EXIT_ERROR, MetricSource, evaluate, exit_code, parse_gates
from tests.results_fakes import fake_results


def _run(payload_bytes: int) -> dict:
    results = fake_results("partition")
    results.metrics.payload_bytes = payload_bytes
    return results.to_dict()


def test_mb_per_s_gates_on_acknowledged_payload() -> None:
    run = _run(4_000_000)  # all 2,000 messages acknowledged, 2000 bytes each
    assert run["rate"]["mb_per_s"] == round(4.0 / run["duration_s"], 3)
    source = MetricSource.from_documents([run])
    verdicts = evaluate(parse_gates('[[rule]]\ncheck = "partition.mb_per_s >= 1.9"\n'
                                    '[[rule]]\ncheck = "mb_per_s >= 2.5"\n'), source)
    assert [v.passed for v in verdicts] == [True, False]
    assert verdicts[0].measured == run["rate"]["mb_per_s"]


def test_results_without_mb_per_s_are_an_error_not_a_pass() -> None:
    old = _run(1000)
    del old["rate"]["mb_per_s"]
    verdicts = evaluate(parse_gates('[[rule]]\ncheck = "partition.mb_per_s >= 0"\n'),
                        MetricSource.from_documents([old]))
    assert exit_code(verdicts) == EXIT_ERROR
    assert "older kbatch" in (verdicts[0].error or "")
