"""GFS with the demand forecaster from a real MLflow registry (sqlite store in tmp_path): a demand model is
trained and registered as the product does (`schedcast train demand`, which makes the first version the
champion), and a GFS replay long enough to pass the model's 168 h look-back uses ``models:/demand@champion``
for its quotas."""
import numpy as np
import pytest

from pipelines.cli import main


@pytest.fixture()
def store(tmp_path, monkeypatch, migrated_store):
    uri = migrated_store(tmp_path / "mlflow.db")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.chdir(tmp_path)
    return uri


@pytest.mark.slow
def test_gfs_quota_uses_the_registered_demand_champion(store, shared_data):
    from features.traces.gfs import GfsSpec, generate
    from models.registry import alias_version, configure
    from sim import simulate
    from sim.cluster import load_cluster
    from sim.workload import build_workload

    assert main(["train", "demand", "--algo", "seasonal-naive", "--data-dir", str(shared_data), "--freq", "1h",
                 "--allow-worse-than-baseline"]) == 0  # (a first version is champion only if not worse, else)
    configure(store)
    assert alias_version("demand", "champion") == "1"

    # 12 h warm-up + 7.5 days: the SQA sees more than 168 hourly maxima, so the model answers the last day.
    table = generate(GfsSpec(cluster_gpus=432, days=7.5, warmup_hours=12, spot_multiplier=2, max_orgs=4), seed=0)
    w = build_workload(table, load_cluster("gfs-a100-small"))
    r = simulate(w, "gfs:estimator=models:/demand@champion,period_s=3600", check_invariants=True)
    stats = r.policy_stats
    assert stats["sqa_model_forecasts"] > 0  # the registry model answered (0 if only the fallback did)
    assert np.isfinite(r.end).all()
    # Before the look-back is full the fallback answers, as persistence does: the quotas agree there and
    # differ once the model answers.
    base = simulate(w, "gfs:estimator=persistence,period_s=3600").policy_stats  # (the default is OrgLinear now)
    assert base["sqa_model_forecasts"] == 0
    quota, quota_base = stats["sqa_quota_log"], base["sqa_quota_log"]
    lookback = 168 * 3600.0
    first = float(w.frame["submit_time"].min())
    early = [(a, b) for a, b in zip(quota, quota_base) if a[1] - first < lookback - 3600.0]
    late = [(a, b) for a, b in zip(quota, quota_base) if a[1] - first > lookback + 3600.0]
    assert early and late
    assert all(a == b for a, b in early)
    assert any(a[2:] != b[2:] for a, b in late)
