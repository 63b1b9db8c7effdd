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
    assert {c.measure for c in claims.claims} <= set(out)
    assert RUNNERS["gfs"] == "pipelines.papers.gfs"
    # 1 - 20 / 80 (YARN-CS's HP JQT); 1 - 1000 / 4000 (best baseline spot JQT); 0.02 / 0.16.
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
    verdicts = judge_all(claims, out, quick=quick)
    assert len(verdicts) == len(claims.claims)
    assert (tmp_path / "gfs_replays.md").is_file()
