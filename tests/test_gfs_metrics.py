"""GFS metrics on the hand-worked preemption (one eviction, numbers by hand)."""
import pytest

from evaluation.gfs_metrics import allocation_series, gfs_summary, quota_fidelity
from sim import simulate
from tests.helpers import workload


def test_metrics_of_the_hand_worked_eviction(tmp_path):
    # See tests/test_gfs_engine.py::test_gfs_preemption_hand_worked: spot JCT 11,580 (wait 140), HP JCT 140.
    w = workload([(0, 10_000, 4), (5000, 100, 8)], nodes=1, gpus=8, org=["a", "b"],
                 job_class=["spot", "hp"], checkpoint_interval=[3600.0, None])
    r = simulate(w, "yarn-cs")
    s = gfs_summary(r)
    assert s["hp_jct_mean"] == pytest.approx(140.0) and s["hp_jqt_mean"] == 0.0
    assert s["spot_jct_mean"] == pytest.approx(11_580.0) and s["spot_jqt_mean"] == pytest.approx(140.0)
    assert s["evictions"] == 1 and s["hp_evictions"] == 0
    assert s["evict_rate_runs"] == pytest.approx(0.5)  # 2 runs, 1 evicted
    # 4 GPUs x 1,400 s lost of 4 GPUs x 11,400 s run.
    assert s["evict_rate_hours"] == pytest.approx(1400 / 11400)
    alloc = allocation_series(r, bin_s=5000.0)
    # First 5,000 s: 4 of 8 GPUs; 5,000-10,000: HP 8 GPUs for 140 s (40 s loading counts), then spot 4 GPUs.
    assert alloc["allocation"].iloc[0] == pytest.approx(0.5)
    assert alloc["allocation"].iloc[1] == pytest.approx((8 * 140 + 4 * 4860) / (5000 * 8))
    assert quota_fidelity(r)["hours"] == 0


def test_quota_plot_is_written(tmp_path):
    from evaluation.gfs_metrics import plot_quota

    w = workload([(0, 20_000, 4), (3600, 100, 2)], nodes=1, gpus=8, org=["a", "b"], job_class=["hp", "spot"])
    r = simulate(w, "gfs")
    plot_quota({"gfs": r}, str(tmp_path / "q.png"))
    assert (tmp_path / "q.png").stat().st_size > 1000
    assert quota_fidelity(r)["hours"] >= 1
