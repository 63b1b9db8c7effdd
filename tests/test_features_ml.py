"""Feature pipelines for the models: past-only history features, names, series, packing data, scores."""
import numpy as np
import pandas as pd
import pytest

from evaluation import scores
from features.duration import duration_features, history_features, normalise_name, recurring_group_id
from features.names import NameBucketer
from features.series import throughput_features, time_split
from tests.helpers import table


def _jobs():
    # submit, duration, gpus; one user / org for all.
    t = table([(0, 100, 1), (10, 5, 1), (20, 50, 1), (200, 7, 1), (300, 9, 1)], org=["a"] * 5)
    t.frame["user"] = pd.array(["u"] * 5, dtype="string")
    return t


def test_history_uses_only_jobs_finished_before_submission():
    f = _jobs().frame
    h = history_features(f)
    # Job 3 (submitted at 200): jobs 0 (ends 100), 1 (ends 15), 2 (ends 70) have finished.
    assert h.loc[3, "hist_user_count"] == 3
    assert h.loc[3, "hist_user_mean"] == pytest.approx((100 + 5 + 50) / 3)
    assert h.loc[3, "hist_user_last"] == 100  # the most recently finished (at 100)
    # Job 2 (submitted at 20): only job 1 (ends 15) has finished.
    assert h.loc[2, "hist_user_count"] == 1 and h.loc[2, "hist_user_last"] == 5
    assert h.loc[0, "hist_user_count"] == 0 and np.isnan(h.loc[0, "hist_user_mean"])


def test_no_leakage_from_the_future_or_the_job_itself():
    t = _jobs()
    before = duration_features(t)
    changed = t.frame.copy()
    changed.loc[3:, "duration"] = [1e6, 2e6]  # the future (and job 3 itself) changes
    after = duration_features(changed)
    pd.testing.assert_frame_equal(before.loc[:3], after.loc[:3])


def test_group_ids_and_names():
    f = pd.DataFrame({"job_name": ["bert_lr0.1_s1", "bert_lr0.2_s2", None], "user": ["u1", "u1", None],
                      "org": ["a", "a", "b"], "num_gpus": [1, 1, 8]})
    g = recurring_group_id(f)
    assert g[0] == g[1] != g[2]
    assert g.tolist() == recurring_group_id(f).tolist()  # stable across calls / processes (md5)
    assert normalise_name("BERT_lr0.01-seed3") == "bert_lr_seed"
    names = pd.Series(["resnet_train_1", "resnet_train_2", "resnet_trains", "gpt_eval_1", "gpt_evals", "gpt_eval"])
    b = NameBucketer().fit_transform(names)
    assert b[0] == b[1] == b[2] and b[3] == b[4] == b[5] and b[0] != b[3]


def test_throughput_features_are_past_only():
    idx = pd.date_range("2020-04-01", periods=24 * 6 * 10, freq="10min")
    rng = np.random.default_rng(0)
    series = pd.DataFrame({"submit_gpu_job": rng.poisson(5, len(idx)).astype(float),
                           "submit_job_all": rng.poisson(9, len(idx)).astype(float)}, index=idx)
    X, y = throughput_features(series, horizon=6)
    t = X.index[100]
    assert y.loc[t] == series["submit_gpu_job"].loc[t + pd.Timedelta("60min")]
    changed = series.copy()
    changed.loc[changed.index > t, :] = 999.0
    X2, _ = throughput_features(changed, horizon=6)
    pd.testing.assert_series_equal(X.loc[t], X2.loc[t])
    train, test = time_split(X.index, test_days=2)
    assert X.index[train].max() < X.index[test].min()


def test_real_series_and_packing_data(shared_data):
    from features.packing import pair_labels, packing_dataset
    from features.series import load_demand, load_throughput

    s = load_throughput(data=shared_data)
    assert (s.index[1] - s.index[0]) == pd.Timedelta("10min") and "submit_gpu_job" in s
    demand, attrs = load_demand(data=shared_data, freq="1h")
    assert demand.shape[1] == 16 and (demand >= 0).all().all() and (attrs["quota_gpus"] > 0).all()
    raw = pd.read_csv(shared_data / "helios/earth_vc_1min_2020-05-01_2020-05-21.csv.gz", nrows=120)
    vc = raw["vc"].iloc[0]
    first = raw[raw["vc"] == vc].head(60)
    assert demand[vc].iloc[0] == pytest.approx((first["running_gpu_num"] + first["pending_gpu_num"]).mean())
    ds = packing_dataset(shared_data)
    assert len(ds) == 66 and set(ds["target"]) == {0, 1, 2}
    pl = pair_labels(shared_data)
    assert ((pl["partner_speed"] >= 0.95) == (pl["pair_label"] == 0)).all()


def test_scores_are_exact():
    y, q = np.array([10.0, 0.0, 5.0]), np.array([8.0, 1.0, 5.0])
    # p = 0.9: under-forecast 2 -> 1.8; over-forecast 1 -> 0.1; exact -> 0.
    assert scores.quantile_loss(y, q, 0.9) == pytest.approx((1.8 + 0.1) / 3)
    assert scores.coverage(y, q) == pytest.approx(2 / 3)
    r = scores.regression_scores(y, q)
    assert r["mape"] == pytest.approx((0.2 + 0.0) / 2) and r["mape_share"] == pytest.approx(2 / 3)
    # Gaussian CRPS against numerical integration of (F(x) - 1{x >= y})^2.
    from scipy import stats
    x = np.linspace(-20, 20, 200001)
    F = stats.norm.cdf(x, 1.0, 2.0)
    numeric = np.trapezoid((F - (x >= 0.5)) ** 2, x)
    assert scores.crps_gaussian([0.5], [1.0], [2.0]) == pytest.approx(numeric, rel=1e-4)
    rng = np.random.default_rng(0)
    assert scores.crps_samples([0.5], rng.normal(1, 2, (4000, 1))) == pytest.approx(numeric, rel=0.05)
    c = scores.classification_scores([0, 1, 2, 2], [0, 1, 1, 2])
    assert c["accuracy"] == 0.75 and c["confusion"].loc[2, 1] == 1
