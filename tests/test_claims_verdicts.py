"""Graded verdicts (evaluation.claims): intervals from seed samples, ties and 0/0 never a hold, preconditions,
parity and threshold claims, quick mode's one-seed label."""
from __future__ import annotations

import math

import pytest

from evaluation.claims import (DIRECTION, HOLDS, MISSES, UNTESTABLE, ClaimsFile, Measurement, interval, judge,
                               judge_all)


def claim(**kw):
    base = {"id": "c1", "source": "Table 1", "statement": "A beats B", "metric": "JCT, B / A", "comparator": "B",
            "unit": "ratio", "direction": "higher", "null": 1.0, "measure": "m",
            "values": [{"value": 1.5, "cite": "x.txt:1"}]}
    base.update(kw)
    return ClaimsFile.model_validate({"paper": "x", "title": "X", "claims": [base]}).claims[0]


def test_student_t_interval_matches_the_textbook():
    mean, lo, hi = interval([1.0, 2.0, 3.0])
    half = 4.302652729911275 * 1.0 / math.sqrt(3)  # t(0.975, 2) x sd / sqrt(n)
    assert mean == 2.0 and lo == pytest.approx(2.0 - half) and hi == pytest.approx(2.0 + half)


def test_an_effect_reaching_the_paper_figure_holds():
    v = judge(claim(), Measurement(samples=[1.6, 1.55, 1.62]))
    assert v.verdict == HOLDS and v.measured == pytest.approx(1.59)
    s = v.settings[0]
    assert s.lo > 1.0 and s.hi >= 1.5 and s.n == 3


def test_an_effect_beyond_noise_but_smaller_holds_in_direction():
    v = judge(claim(), Measurement(samples=[1.10, 1.12, 1.11]))
    assert v.verdict == DIRECTION and "short of the paper" in v.reason


@pytest.mark.parametrize("samples", [[1.0, 1.0, 1.0], [1.002, 0.999, 1.004], [0.0, 0.0, 0.0]])
def test_a_tie_or_a_noise_level_effect_is_never_a_hold(samples):
    c = claim() if samples[0] else claim(null=0.0, values=[{"value": None, "cite": "x.txt:1"}])
    v = judge(c, Measurement(samples=samples))
    assert v.verdict == MISSES and "noise" in v.reason


def test_the_opposite_effect_does_not_hold():
    v = judge(claim(), Measurement(samples=[0.8, 0.82, 0.79]))
    assert v.verdict == MISSES and "opposite" in v.reason


def test_lower_is_the_mirror_of_higher():
    c = claim(direction="lower", values=[{"value": 0.5, "cite": "x.txt:1"}])
    assert judge(c, Measurement(samples=[0.45, 0.5, 0.48])).verdict == HOLDS
    assert judge(c, Measurement(samples=[0.8, 0.82, 0.81])).verdict == DIRECTION
    assert judge(c, Measurement(samples=[0.9, 1.1, 1.0])).verdict == MISSES


@pytest.mark.parametrize("m", [None, Measurement(None, not_testable="no spot tasks here"), Measurement(float("nan")),
                               Measurement(samples=[1.2, float("nan"), 1.3]), Measurement(float("inf"))])
def test_missing_or_non_finite_measures_and_0_over_0_are_not_testable(m):
    v = judge(claim(), m)
    assert v.verdict == UNTESTABLE and v.measured is None and v.reason


def test_a_full_run_with_one_seed_is_not_testable_and_quick_labels_it():
    assert judge(claim(), Measurement(samples=[1.6])).verdict == UNTESTABLE
    v = judge(claim(), Measurement(samples=[1.6]), quick=True)
    assert v.verdict == HOLDS and "(1 seed)" in v.reason and v.settings[0].one_seed
    assert judge(claim(), Measurement(samples=[1.0]), quick=True).verdict == MISSES  # 1 seed, tie: no hold


def test_a_precondition_the_setting_lacks_makes_it_not_testable_with_the_figure():
    c = claim(values=[{"setting": "low", "value": 1.5, "cite": "x.txt:1"},
                      {"setting": "high", "value": 1.5, "cite": "x.txt:2"}],
              preconditions=[{"measure": "wait_share", "op": ">=", "value": 0.1, "why": "queueing"}])
    ms = {"m@low": Measurement(samples=[0.99, 1.0, 1.01]), "m@high": Measurement(samples=[1.6, 1.7, 1.65]),
          "wait_share@low": Measurement(0.001), "wait_share@high": Measurement(0.3)}
    v = judge(c, ms)
    low, high = v.settings
    assert low.verdict == UNTESTABLE and "setting lacks queueing" in low.reason and "0.001" in low.reason
    assert high.verdict == HOLDS and v.verdict == HOLDS and "1 of 2 settings not testable" in v.reason


def test_the_worst_testable_setting_decides_and_causes_are_kept_for_holds_too():
    c = claim(values=[{"setting": "a", "value": 1.5, "cite": "x.txt:1"}, {"setting": "b", "value": 1.5, "cite": "x.txt:1"}],
              causes=["off"], caveats="generated logs")
    ms = {"m@a": Measurement(samples=[1.6, 1.7, 1.65], causes={"off": 1.1, "other": 3.0}),
          "m@b": Measurement(samples=[1.2, 1.25, 1.22])}
    v = judge(c, ms)
    assert v.verdict == DIRECTION and "decided by b" in v.reason
    assert v.settings[0].causes == {"off": 1.1} and v.causes == {"off [a]": 1.1}
    assert v.caveats == ["generated logs"]


def test_parity_and_threshold_claims():
    p = claim(kind="parity", null=0.0, margin=0.05, unit="fraction")
    assert judge(p, Measurement(samples=[0.01, -0.01, 0.0])).verdict == HOLDS
    assert judge(p, Measurement(samples=[0.2, 0.21, 0.22])).verdict == MISSES
    assert judge(p, Measurement(samples=[0.0, 0.1, -0.1])).verdict == UNTESTABLE
    t = claim(kind="threshold", null=None, holds_if={"op": "<", "value": 3.0}, unit="ms")
    assert judge(t, Measurement(2.0, interval=(1.8, 2.2), n=500)).verdict == HOLDS
    assert judge(t, Measurement(2.9, interval=(2.7, 3.2), n=500)).verdict == DIRECTION
    assert judge(t, Measurement(5.0, interval=(4.0, 6.0), n=500)).verdict == MISSES


def test_untestable_claims_and_quick_only_claims():
    c = claim(testable=False, why_not="testbed")
    assert judge(c, Measurement(samples=[2.0, 2.0, 2.1])).reason == "testbed"
    cf = ClaimsFile.model_validate({"paper": "x", "title": "X", "claims": [
        claim().model_dump(), {**claim().model_dump(), "id": "c2", "quick": False}]})
    verdicts = judge_all(cf, {"m": Measurement(samples=[1.6])}, quick=True)
    assert [v.verdict for v in verdicts] == [HOLDS, UNTESTABLE] and "--quick" in verdicts[1].reason


@pytest.mark.parametrize("bad, needle", [
    ({"null": None}, "null"), ({"kind": "parity"}, "margin"), ({"kind": "threshold"}, "holds_if"),
    ({"testable": False}, "why_not"), ({"values": [{"value": 1.0, "cite": "page 3"}]}, "paper.txt:LINE"),
    ({"values": [{"setting": "a", "value": 1, "cite": "x.txt:1"}, {"setting": "a", "value": 1, "cite": "x.txt:1"}]},
     "once")])
def test_inconsistent_claims_are_refused(bad, needle):
    with pytest.raises(Exception) as exc:
        claim(**bad)
    assert needle in str(exc.value)
