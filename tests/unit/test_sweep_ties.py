"""Sweep recommendations that noise cannot flip: requests/s within the noise are ties,
broken by lower latency, then by the simpler setting, and the sentence says so."""

from __future__ import annotations

from producer_core.analysis.sweep import Cell, parse_slo, recommend, ties
from tests.unit.test_sweep import result, run

SLO8 = parse_slo("p99<=8ms")


def test_the_issues_sweep_recommends_linger_0_not_the_noise_winner():
    # 200.412 vs 200.385 requests/s (2 s runs): noise; p99 4.0 ms vs 6.7 ms decides
    cells = [result(Cell("partition", 0), run(400.77, 4.0, duration=2.0)),
             result(Cell("partition", 5), run(400.824, 6.7, duration=2.0)),
             result(Cell("broker", 0), run(400.8, 4.4, duration=2.0)),
             result(Cell("broker", 5), run(400.9, 6.9, duration=2.0))]
    rec = recommend(cells, SLO8)
    assert rec["cell"] == "partition_w0"
    assert set(rec["tied_cells"]) == {"partition_w5", "broker_w0", "broker_w5"}
    assert "chosen among ties" in rec["text"] and "differ by under 2%" in rec["text"]
    assert rec["text"].endswith("so it won on lower p99).")


def test_a_real_difference_is_not_a_tie():
    fewer = result(Cell("broker", 5), run(900, 7.0))
    more = result(Cell("partition", 0), run(1000, 3.0))
    assert not ties(fewer, more)
    rec = recommend([fewer, more], SLO8)
    assert rec["cell"] == "broker_w5" and "tied_cells" not in rec
    assert "10% fewer than the best partition setting" in rec["text"]


def test_with_repeats_the_measured_spread_decides_what_ties():
    noisy_a = result(Cell("partition", 0), run(1000, 3.0), run(1100, 3.0), run(1050, 3.0))
    noisy_b = result(Cell("partition", 5), run(980, 5.0), run(1080, 5.0), run(1020, 5.0))
    assert ties(noisy_a, noisy_b)  # medians 105 vs 102 requests/s, spreads 10
    assert recommend([noisy_a, noisy_b], SLO8)["cell"] == "partition_w0"
    steady_a = result(Cell("partition", 0), run(1050, 3.0), run(1051, 3.0), run(1052, 3.0))
    steady_b = result(Cell("partition", 5), run(1040, 5.0), run(1041, 5.0), run(1042, 5.0))
    # 1% apart (a tie by the 2% rule) but 5 spreads apart: repeats know better
    assert not ties(steady_a, steady_b)
    assert recommend([steady_a, steady_b], SLO8)["cell"] == "partition_w5"
    assert "spread over the repeats" in recommend([noisy_a, noisy_b], SLO8)["text"]


def test_equal_latency_falls_back_to_the_simpler_setting():
    cells = [result(Cell("broker", 20), run(1000, 5.0)),
             result(Cell("broker", 5), run(1001, 5.0)),
             result(Cell("broker", 10), run(999, 5.0))]
    rec = recommend(cells, SLO8)
    assert rec["cell"] == "broker_w5"
    assert "the same latency and the simpler setting" in rec["text"]


def test_a_tie_never_picks_a_cell_that_misses_the_slo():
    fast_but_late = result(Cell("partition", 0), run(1000, 9.0))
    on_time = result(Cell("partition", 5), run(1001, 7.0))
    assert recommend([fast_but_late, on_time], SLO8)["cell"] == "partition_w5"
