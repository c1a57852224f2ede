"""Offered, sent and acknowledged rates over the schedule's window, and the overrun, on
synthetic interval rows (issue 47)."""

from __future__ import annotations

from producer_core.results.rates import schedule_s, window_rates

WORKLOAD = {"rate": 5000.0, "duration_s": 8.0, "warmup_s": 0.0}


def rows(acked_per_s: list[float], generated_per_s: float = 5000.0) -> list[dict]:
    """One 1 s row per value: `acked_per_s[i]` acknowledged in second i; messages
    generated only within the 8 s schedule."""
    return [{"start_s": float(i), "end_s": float(i + 1), "acknowledged": a, "aborted": 0,
             "generated": generated_per_s if i < 8 else 0} for i, a in enumerate(acked_per_s)]


def test_a_run_that_kept_its_schedule_has_every_rate_at_the_target():
    rates = window_rates(WORKLOAD, 40_000, 5000.0, 40_000, 40_000, 8.01, rows([5000] * 8))
    assert rates == {"window_s": 8.0, "offered_msgs_per_s": 5000.0, "sent_msgs_per_s": 5000.0,
                     "acked_msgs_per_s": 5000.0, "overrun_s": 0.01}


def test_a_stall_shows_as_acks_short_in_the_window_and_an_overrun():
    """The issue's first run: acknowledgements stopped at 6 s and came back at 20 s."""
    acked = [5000] * 6 + [0] * 14 + [10_000]
    rates = window_rates(WORKLOAD, 40_000, 5000.0, 40_000, 40_000, 21.0, rows(acked))
    assert rates["offered_msgs_per_s"] == 5000.0 and rates["sent_msgs_per_s"] == 5000.0
    assert rates["acked_msgs_per_s"] == 3750.0  # 30,000 in the 8 s window
    assert rates["overrun_s"] == 13.0


def test_a_lagging_generator_shows_in_the_sent_rate():
    rates = window_rates(WORKLOAD, 40_000, 5000.0, 40_000, 40_000, 8.0,
                         rows([3000] * 8, generated_per_s=3000))
    assert rates["sent_msgs_per_s"] == 3000.0 and rates["offered_msgs_per_s"] == 5000.0


def test_the_warmup_is_left_out_and_a_row_across_an_edge_counts_pro_rata():
    workload = {**WORKLOAD, "warmup_s": 2.5}
    acked = [1000, 1000, 2000, 5000, 5000, 5000, 5000, 5000]
    rates = window_rates(workload, 40_000, 5000.0, 40_000, 29_000, 8.0, rows(acked))
    assert rates["window_s"] == 5.5
    assert rates["acked_msgs_per_s"] == round((1000 + 5 * 5000) / 5.5, 1)


def test_an_unthrottled_count_has_no_offered_rate_and_no_overrun():
    workload = {"rate": None, "duration_s": None, "messages": 10_000}
    assert schedule_s(workload, 10_000, None) is None
    rates = window_rates(workload, 10_000, None, 10_000, 10_000, 2.0, [])
    assert rates == {"window_s": 2.0, "offered_msgs_per_s": None, "sent_msgs_per_s": 5000.0,
                     "acked_msgs_per_s": 5000.0, "overrun_s": 0.0}


def test_without_rows_the_messages_are_spread_over_the_longer_of_schedule_and_run():
    rates = window_rates(WORKLOAD, 40_000, 5000.0, 40_000, 40_000, 16.0, [])
    assert rates["acked_msgs_per_s"] == 2500.0 and rates["overrun_s"] == 8.0


def test_compare_words_an_overrun_as_seconds_more_or_less():
    from producer_core.analysis.compare import change_text

    assert change_text("overrun_s", 0.001, 0.003) == "+0.0 s"
    assert change_text("overrun_s", 0.0, 23.4) == "+23.4 s"
    assert change_text("acked_msgs_per_s", 5000.0, 3123.0) == "-37.5%"


def test_a_coarse_last_row_counts_its_generated_messages_in_the_window():
    """A 5 s run reported every 5 s has one row to 5.07 s: the messages generated in it
    were all due in the schedule, so the sent rate is not cut by the row's tail."""
    workload = {"rate": 2000.0, "duration_s": 5.0, "warmup_s": 0.0}
    row = [{"start_s": 0.0, "end_s": 5.07, "generated": 10_000, "acknowledged": 10_000,
            "aborted": 0}]
    rates = window_rates(workload, 10_000, 2000.0, 10_000, 10_000, 5.07, row)
    assert rates["sent_msgs_per_s"] == 2000.0
    assert rates["acked_msgs_per_s"] == round(10_000 * 5 / 5.07 / 5, 1)  # acks pro rata
