"""The GFS ledger runner returns a Measurement for every measure its claims file names (quick and full mode),
and computes the reductions and ratios by hand-checkable rules (replays stubbed: no simulation here)."""
from pathlib import Path

import pytest

from evaluation.claims import ReproduceContext, judge_all, load_claims
from pipelines.papers import RUNNERS, paper_dir

SUMMARY = {"gfs": dict(hp_jqt_mean=20.0, spot_jqt_mean=1000.0, spot_jct_mean=5000.0, evict_rate_runs=0.02),
           "yarn-cs": dict(hp_jqt_mean=80.0, spot_jqt_mean=4000.0, spot_jct_mean=9000.0, evict_rate_runs=0.16),
           "gfs-e": dict(hp_jqt_mean=20.0, spot_jqt_mean=2000.0, spot_jct_mean=10000.0, evict_rate_runs=0.04)}


def _ctx(tmp_path: Path, quick: bool) -> ReproduceContext:
    return ReproduceContext(quick=quick, out=tmp_path, seeds=[0], data_dir=tmp_path)


@pytest.mark.parametrize("quick", [True, False])
def test_runner_measures_every_claim(tmp_path, monkeypatch, quick):
    from pipelines.papers import gfs

    def get(self, level, policy):
        base = SUMMARY.get(policy, SUMMARY["gfs-e" if policy.startswith("gfs") and policy != "gfs" else "yarn-cs"])
        s = dict(base, alloc_mean=0.9, hp_jct_mean=3600.0, cpu_s=1.0, sqa_estimator="orglinear",
                 sqa_model_forecasts=10, sqa_model_fits=2)
        self.summaries[(level, policy)] = s
        return s

    monkeypatch.setattr(gfs._Runs, "get", get)
    monkeypatch.setattr(gfs._Runs, "workload", lambda self, level: [0] * 7)
    out = gfs.run(_ctx(tmp_path, quick))
    claims = load_claims(paper_dir("gfs") / "claims.yaml")
    levels = ("medium",) if quick else ("low", "medium", "high")
    wanted = {c.key(pv.setting) for c in claims.claims for pv in c.values if pv.setting in (None, *levels)}
    assert wanted <= set(out)
    assert RUNNERS["gfs"] == "pipelines.papers.gfs"
    # 1 - 20 / 80 (the best baseline's HP JQT: every baseline here has YARN-CS's summary); 1 - 1000 / 4000 (best baseline spot JQT); 0.02 / 0.16.
    assert out["t5_medium_hp_jqt_reduction"].value == pytest.approx(0.75)
    assert out["t5_medium_spot_jqt_reduction"].value == pytest.approx(0.75)
    assert out["t5_medium_evict_ratio"].value == pytest.approx(0.125)
    # §4.6.1: 1 - OrgLinear / GFS-e: JCT 1 - 5000/10000, JQT 1 - 1000/2000, e 1 - 0.02/0.04.
    assert [out[f"est_{k}_reduction"].value for k in ("jct", "jqt", "evict")] == pytest.approx([0.5, 0.5, 0.5])
    assert "orglinear" in out["t5_medium_hp_jqt_reduction"].detail
    assert "estimator_persistence" in out["t5_medium_hp_jqt_reduction"].causes
    if quick:
        assert out["t5_low_hp_jqt_reduction"].not_testable and out["t6_evict_h4_over_h1"].not_testable
    else:
        assert set(gfs.CAUSES) <= set(out["t5_medium_spot_jqt_reduction"].causes)
        for level in ("low", "high"):  # GFS taken apart at every load, not only at Medium
            assert set(out[f"t5_{level}_spot_jqt_reduction"].causes) == set(gfs.MECHANISMS)
        for name in ("s", "p", "sp"):  # the eviction ablations with the anti-windup raise on both sides
            assert "eta_raise_binding" in out[f"abl_gfs_{name}_ratio"].causes
            assert "both with eta_raise=binding" in out[f"abl_gfs_{name}_ratio"].detail
    verdicts = judge_all(claims, out, quick=quick)
    assert len(verdicts) == len(claims.claims)
    assert (tmp_path / "gfs_replays.md").is_file()


def test_plan_lists_every_replay_the_claims_read(tmp_path, monkeypatch):
    from pipelines.papers import gfs

    for quick in (True, False):
        asked = []

        def get(self, level, policy):
            asked.append((level, policy))
            s = dict(SUMMARY["gfs"], alloc_mean=0.9, hp_jct_mean=1.0, cpu_s=1.0)
            self.summaries[(level, policy)] = s
            return s

        monkeypatch.setattr(gfs._Runs, "get", get)
        monkeypatch.setattr(gfs._Runs, "workload", lambda self, level: [0] * 7)
        monkeypatch.setattr(gfs._Runs, "prefetch", lambda self, pairs, forecasting=False: None)
        try:  # the forecasting table (no replays) is not what this test covers
            import pipelines.papers.gfs_forecasting as fcm

            monkeypatch.setattr(fcm, "forecasting_measurements", lambda ctx, **kw: {})
        except ImportError:
            pass
        gfs.run(_ctx(tmp_path, quick))
        assert set(asked) == set(gfs.plan(quick)), quick
    # 30 + 4 mechanisms x 3 loads + GFS-s / -p / -sp with the anti-windup raise
    assert len(gfs.plan(False)) == 45 and len(gfs.plan(True)) == 7
    assert {("medium", f"{a}:eta_raise=binding") for a in ("gfs-s", "gfs-p", "gfs-sp")} <= set(gfs.plan(False))


def test_replays_on_worker_processes_equal_the_serial_ones(tmp_path, monkeypatch):
    import numpy as np

    from pipelines.papers import gfs
    from pipelines.replay import ReplaySpec, prepare_replay
    from tests.helpers import workload

    rng = np.random.default_rng(0)
    rows, orgs, cls = [], [], []
    for k in range(120):
        spot = k % 3 == 0
        rows.append((k * 600.0, float(rng.integers(1800, 9000)), int(rng.choice([1, 2, 4]))))
        orgs.append("s" if spot else f"o{k % 2}")
        cls.append("spot" if spot else "hp")
    w = workload(rows, nodes=2, gpus=8, org=orgs, job_class=cls,
                 checkpoint_interval=[3600.0 if c == "spot" else None for c in cls])
    prepared = prepare_replay(ReplaySpec(failures="none"), built=(None, w))
    monkeypatch.setattr(gfs._Runs, "prepared", lambda self, level: prepared)
    pairs = [("medium", "gfs:estimator=persistence"), ("medium", "yarn-cs"), ("medium", "gfs-e")]
    serial = gfs._Runs(ReproduceContext(quick=True, out=tmp_path, seeds=[0], data_dir=tmp_path))
    lines: list[str] = []
    forked = gfs._Runs(ReproduceContext(quick=True, out=tmp_path, seeds=[0], data_dir=tmp_path, workers=2,
                                        progress=lines.append))
    import pipelines.papers.gfs_forecasting as fcm
    from models.forecast import PreviousWeekPeak, SeasonalNaive
    from tests.test_forecast_zoo import SPEC, _demand

    demand, attrs = _demand()  # a small study whose fits run on the pool, one task per (model, origin)
    factories = {"OrgLinear": lambda: SeasonalNaive(6, 144), "DLinear": lambda: PreviousWeekPeak(6, 288),
                 "TFT (GluonTS)": lambda: SeasonalNaive(6, 72)}  # named heavy: submitted before the replays
    study = fcm.ForecastingStudy(demand, attrs, SPEC, factories, fcm.rolling_blocks(len(demand), SPEC, 72))
    monkeypatch.setattr(fcm.ForecastingStudy, "load", classmethod(lambda cls, ctx: study))
    forked.prefetch(pairs, forecasting=True)  # the table runs on the pool beside the replays
    serial_table = fcm.forecasting_measurements(serial.ctx, study=study)  # the same fits, in this process
    assert forked.forecasting is not None and set(forked.forecasting) == set(serial_table)
    assert {k: (m.value, m.detail) for k, m in forked.forecasting.items()} == \
        {k: (m.value, m.detail) for k, m in serial_table.items()}
    assert set(forked.summaries) == set(pairs)
    fit_lines = [ln for ln in lines if ln.startswith("forecasting fit ")]  # one per fit, as each ends
    assert len(fit_lines) == len(study.tasks()) and all("s CPU" in ln and "MAE" in ln for ln in fit_lines)
    assert sum(ln.startswith("forecasting fit OrgLinear @ ") for ln in fit_lines) == len(study.blocks)
    for pair in pairs:
        timing = lambda s: {k: v for k, v in s.items() if not k.endswith(("seconds", "cpu_s"))}  # noqa: E731
        a, b = timing(serial.get(*pair)), timing(forked.summaries[pair])
        assert a.keys() == b.keys() and all(a[k] == b[k] or (a[k] != a[k] and b[k] != b[k]) for k in a), pair


def test_skip_forecasting_leaves_its_claims_not_testable_and_an_unknown_part_is_refused(tmp_path, monkeypatch,
                                                                                        capsys):
    """`reproduce gfs --skip forecasting`: the scheduling tables alone (the forecasting table's fits are most of
    the full run's CPU); the table is never loaded and its claims say why they are not testable. A part the
    paper does not have is a one-line error (exit 2) before anything runs or is written."""
    import dataclasses

    import pipelines.papers.gfs_forecasting as fcm
    from pipelines.cli import main
    from pipelines.papers import gfs, parts

    def get(self, level, policy):
        base = SUMMARY.get(policy, SUMMARY["gfs-e" if policy.startswith("gfs") and policy != "gfs" else "yarn-cs"])
        s = dict(base, alloc_mean=0.9, hp_jct_mean=3600.0, cpu_s=1.0, sqa_estimator="orglinear")
        self.summaries[(level, policy)] = s
        return s

    monkeypatch.setattr(gfs._Runs, "get", get)
    monkeypatch.setattr(gfs._Runs, "workload", lambda self, level: [0] * 7)
    monkeypatch.setattr(fcm.ForecastingStudy, "load", classmethod(lambda cls, ctx: pytest.fail("table loaded")))
    ctx = dataclasses.replace(_ctx(tmp_path, False), skip=frozenset({"forecasting"}))
    out = gfs.run(ctx)
    fc = {k: m for k, m in out.items() if k.startswith("fc_")}
    assert fc and all(m.value is None and "--skip forecasting" in m.not_testable for m in fc.values())
    assert out["t5_medium_hp_jqt_reduction"].value is not None  # the scheduling tables still measured
    assert parts("gfs") == ("forecasting",) and parts("lazer") == ()

    assert main(["reproduce", "gfs", "--skip", "tables", "--out", str(tmp_path / "ledger")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "gfs has no part 'tables' (its parts: forecasting)" in err
    assert not (tmp_path / "ledger").exists()
