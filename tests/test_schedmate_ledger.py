"""Issue 41: the SchedMate runner's real-log parts (Table 4 and the tracker's success rate on the
committed held-out excerpts) and its interval helpers."""
from __future__ import annotations

import math

import pytest

from pipelines.papers import schedmate as sm


def test_wilson_interval_brackets_the_proportion():
    lo, hi = sm.wilson(8, 10)
    assert lo < 0.8 < hi and 0.0 <= lo and hi <= 1.0
    assert sm.wilson(0, 5)[0] == 0.0 and sm.wilson(5, 5)[1] == 1.0
    assert all(math.isnan(x) for x in sm.wilson(0, 0))


def test_table4_scores_held_out_real_logs_and_gives_per_type_rates():
    out, rates = sm.table4(sm.QUICK)
    f1 = out["t4_f1@real"]
    if f1.not_testable:
        pytest.skip(f1.not_testable)
    assert 0.0 <= f1.value <= 1.0 and f1.interval[0] <= f1.value <= f1.interval[1] and f1.n >= 10
    assert set(rates) == {"recall", "false_alarm_framework", "false_alarm_script"}
    assert all(0.0 <= v <= 1.0 for v in rates.values())
    assert out["t4_locator_minus_tail_f1@real"].not_testable  # short excerpts: tail = whole excerpt
    rows = sm.real_failures()
    assert rows and all(r["truth"] in ("infrastructure", "framework", "script") for r in rows)


def test_tracker_success_is_measured_on_held_out_progress_logs():
    out, rate = sm.tracker(sm.QUICK)
    m = out["f13_tracker_success@real"]
    if m.not_testable:
        pytest.skip(m.not_testable)
    assert rate == m.value and 0.0 <= rate <= 1.0 and m.n == len(sm.real_progress())
