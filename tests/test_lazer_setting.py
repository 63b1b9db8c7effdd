"""Lazer's paper setting (issue 39): the Helios-shaped generator, the calibration's arithmetic, the cost catalogue's
uniform draw and the runner's measures (on hand-made cell figures: no replay)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from features.traces.helios_shaped import HeliosShapedSpec, duration_sigma, generate
from pipelines.papers import lazer as runner
from pipelines.papers import lazer_calibrate as cal


def test_generator_is_seeded_and_follows_its_statistics():
    spec = HeliosShapedSpec(jobs=4000, series="flat", mean_interarrival=40.0, arrival_scale=2.0)
    a, b, c = generate(spec, seed=1).frame, generate(spec, seed=1).frame, generate(spec, seed=2).frame
    assert a["duration"].tolist() == b["duration"].tolist() and a["submit_time"].tolist() == b["submit_time"].tolist()
    assert a["duration"].tolist() != c["duration"].tolist()
    assert abs(a["duration"].median() / spec.median_duration - 1) < 0.1
    gaps = np.diff(np.sort(a["submit_time"].to_numpy()))
    assert abs(gaps.mean() / 20.0 - 1) < 0.1  # 40 s / arrival_scale 2
    assert a.attrs.get("synthetic") is True


def test_duration_sigma_gives_the_capped_mean():
    from scipy.stats import norm

    median, mean, cap = 234.0, 3570.0, 20 * 86400.0
    s = duration_sigma(median, mean, cap)
    z = (math.log(cap) - math.log(median)) / s
    capped = math.exp(math.log(median) + s * s / 2) * norm.cdf(z - s) + cap * norm.sf(z)
    assert capped == pytest.approx(mean, rel=1e-6)
    with pytest.raises(ValueError):
        duration_sigma(100.0, 1e9, 1e4)


def test_bursts_and_the_real_series_shape_arrivals():
    burst = generate(HeliosShapedSpec(jobs=3000, series="flat", burst_size=20, burst_gap=1.0), seed=0).frame
    gaps = np.diff(np.sort(burst["submit_time"].to_numpy()))
    assert (gaps < 5).mean() > 0.8  # most jobs follow the previous one within seconds
    real = generate(HeliosShapedSpec(jobs=20000, mean_interarrival=30.0), seed=0).frame
    per_bin = np.bincount((real["submit_time"].to_numpy() // 600).astype(int))
    assert per_bin.std() > 3 * math.sqrt(per_bin.mean())  # far burstier than a Poisson process


@pytest.mark.parametrize("bad", [{"median_duration": 5000.0}, {"series": "made-up"}, {"gpu_mix": {0: 1.0}},
                                 {"colour": 1}])
def test_bad_parameters_are_refused(bad):
    with pytest.raises(ValueError):
        HeliosShapedSpec(**bad)


def test_presets_are_registered_generators_on_lazers_cluster():
    from features.traces.synthetic import build_preset, generator_names

    assert "helios-shaped" in generator_names()
    for trace in cal.TRACES:
        table, cluster = build_preset(f"lazer-{trace}", seed=0, jobs=300)
        assert cluster == "lazer-512" and len(table.frame) == 300


def test_uniform_costs_draw_models_independently_of_size():
    from pipelines.replay import build_source

    params = {"jobs": 3000, "series": "flat"}
    _, lean = build_source(generator="helios-shaped", params=params, cluster="lazer-512", costs="lazer")
    _, flat = build_source(generator="helios-shaped", params=params, cluster="lazer-512", costs="lazer:uniform")
    assert flat.report["catalog"]["assignment_strength"] == 0.0 and lean.report["catalog"]["assignment_strength"] == 1.0
    with pytest.raises(ValueError, match="uniform"):
        build_source(generator="helios-shaped", params=params, cluster="lazer-512", costs="lazer:bogus")


def test_calibration_error_and_table():
    reached = {t.key: t.paper for t in cal.TARGETS["earth"]}
    assert cal.error("earth", reached) == 0.0
    rows = cal.table("earth", {**reached, "sjf_wait_p95_min": 50.7 * 3})
    assert [r["within_2x"] for r in rows] == [True, False, True, True]
    assert all(r["cite"].startswith("lazer.txt:") for r in rows)
    assert cal.futile_given_any(np.array([0.0, 0.0, 60.0, 120.0]))[:2] == (90.0, pytest.approx(117.0))


def _fake(lazer_wait50: float = 10.0, sjf_wait50: float = 30.0) -> runner.View:
    """Cells of every label on every trace for seeds 0 and 1, with hand-set figures."""
    results = {}
    for cell in runner._cells(runner.TRACES, [0, 1], None, quick=False):
        k = 1.0 + 0.1 * cell.seed
        base = {"jct_p50": 600.0 * k, "jct_p95": 6000.0 * k, "wait_p50": 60.0 * k, "wait_p95": 600.0 * k,
                "jct_mean": 1000.0, "wait_mean": 200.0, "futile_any_p50": 120.0, "futile_any_p95": 600.0,
                "futile_jobs": 10, "futile_gpu_share": 0.05, "cluster_gpus": 512, "jobs": 100}
        if cell.label == "SJF":
            base["wait_p50"] = sjf_wait50 * k
        if cell.label.startswith("Lazer"):
            base.update({"jct_p50": 300.0 * k, "wait_p50": lazer_wait50 * k, "futile_any_p50": 0.0, "deferrals": 5,
                         "f_mean": 10.0 if cell.label == "Lazer" else 15.0, "decision_cpu_ms": 2.0})
        results[cell] = base
    return runner.View(results)


def test_measures_cover_every_testable_claim_of_the_claims_file():
    from evaluation.claims import load_claims
    from pipelines.papers import paper_dir

    out = runner.measures(_fake(), runner.TRACES, quick=False)
    claims = load_claims(paper_dir("lazer") / "claims.yaml")
    for claim in claims.claims:
        if not claim.testable:
            continue
        for setting in claim.settings():
            m = out.get(claim.key(setting)) or out.get(claim.measure)
            assert m is not None, f"{claim.id}: no measure {claim.key(setting)}"
            for cond in claim.preconditions:
                assert (out.get(f"{cond.measure}@{setting}") or out.get(cond.measure)) is not None, cond.measure


def test_speedups_pair_seeds_and_take_the_best_baseline():
    out = runner.measures(_fake(), runner.TRACES, quick=False)
    m = out["jct_p50_speedup@earth"]
    assert m.samples == pytest.approx([2.0, 2.0])  # every baseline 600 k, Lazer 300 k
    assert m.causes["Lazer+PL"] == pytest.approx(2.0)
    # the best baseline for P50 wait is SJF (30 s) against Lazer's 10 s
    assert out["wait_p50_speedup@earth"].samples == pytest.approx([3.0, 3.0])
    assert out["bo_vs_random@earth"].samples == pytest.approx([1.5, 1.5])
    assert out["futile_p50_cut_srtf"].samples == pytest.approx([120.0, 120.0])  # Lazer's 0 read as 1 s


def test_a_tie_at_zero_is_not_a_number_and_a_zero_lazer_is_floored():
    assert math.isnan(runner._ratio(0.0, 0.0))
    assert runner._ratio(30.0, 0.0) == pytest.approx(10.0)  # 0 read as Table 2's 0.05 min
    out = runner.measures(_fake(lazer_wait50=0.0, sjf_wait50=0.0), runner.TRACES, quick=False)
    assert out["wait_p50_speedup@earth"].not_testable  # 0 / 0: never a hold


@pytest.mark.slow
def test_reproduce_lazer_quick_gives_every_claim_a_verdict(tmp_path, monkeypatch):
    """The documented command's whole path (CLI, runner, cells, replays, judge, ledger) on 400 Earth-shaped
    jobs instead of the quick mode's 3,000."""
    import json

    from evaluation.claims import VERDICTS, load_claims
    from pipelines.cli import main
    from pipelines.papers import paper_dir

    monkeypatch.setattr(runner, "QUICK_JOBS", 400)
    monkeypatch.chdir(tmp_path)
    assert main(["reproduce", "lazer", "--quick", "--out", "lz"]) == 0
    doc = json.loads((tmp_path / "lz" / "claims.json").read_text())
    verdicts = {c["claim"]: c for c in doc["claims"]}
    assert set(verdicts) == {c.id for c in load_claims(paper_dir("lazer") / "claims.yaml").claims}
    assert all(c["verdict"] in VERDICTS for c in doc["claims"])
    assert (tmp_path / "lz" / "earth" / "policies.csv").is_file()
