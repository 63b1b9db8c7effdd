"""Throughput forecast: past-only features, rolling origins, MAE-trained models and the last-value blend.
Synthetic series written here; small models so the file runs in seconds."""
from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

from models.base import NotFittedError
from features.series import rolling_origins, throughput_features
from models.tabular import (LastValueBlend, LightGBMRegressorModel, RandomForestModel, GA2MRegressor,
                            make_throughput_model)

SMALL = dict(n_estimators=60, learning_rate=0.1)


def _series(days: int, seed: int = 0, burst: float = 0.0) -> pd.DataFrame:
    """10-minute counts with a daily shape (busy afternoons) and optional rare large bursts."""
    idx = pd.date_range("2020-04-01", periods=days * 144, freq="10min")
    rng = np.random.default_rng(seed)
    hour = idx.hour.to_numpy()
    lam = 2.0 + 8.0 * ((hour >= 12) & (hour < 20))
    y = rng.poisson(lam).astype(float)
    if burst:
        y += burst * (rng.random(len(idx)) < 0.04)
    other = rng.poisson(9, len(idx)).astype(float)
    return pd.DataFrame({"submit_gpu_job": y, "submit_job_all": other}, index=idx)


@pytest.mark.parametrize("horizon", [1, 3, 150])
def test_features_never_read_bins_after_their_own(horizon):
    """Changing every value after bin t (target and other counters) leaves the features of bins <= t
    unchanged, also for horizons beyond a day (same-time-yesterday must not look ahead)."""
    series = _series(10)
    X, y = throughput_features(series, horizon=horizon)
    for t in (X.index[5], X.index[len(X) // 2], X.index[-horizon - 1]):
        changed = series.copy()
        changed.loc[changed.index > t, :] = 999.0
        X2, _ = throughput_features(changed, horizon=horizon)
        pd.testing.assert_frame_equal(X.loc[:t], X2.loc[:t])
    t = X.index[40]
    target_time = t + pd.Timedelta(minutes=10 * horizon)
    assert y.loc[t] == series["submit_gpu_job"].loc[target_time]
    # same time of day as the target, on the latest day already observed at t
    days_back = -(-horizon // 144)
    assert X.loc[t, "lag_1d"] == series["submit_gpu_job"].loc[target_time - pd.Timedelta(days=max(days_back, 1))]


def test_rolling_origins_train_strictly_before_each_period():
    idx = pd.date_range("2020-04-08", "2020-08-31 23:50", freq="10min")
    months = rolling_origins(idx, "MS", "50D")
    assert [m[0] for m in months] == ["2020-06", "2020-07", "2020-08"]  # May has 23 days of history only
    for _, train, test in months:
        assert idx[train].max() < idx[test].min() and train.sum() + test.sum() <= len(idx)
        assert not (train & test).any()
    assert idx[months[0][2]].min() == pd.Timestamp("2020-06-01") and idx[months[0][2]].max() < pd.Timestamp("2020-07-01")
    weeks = rolling_origins(idx, "W-MON", "50D", min_test_rows=500)
    starts = [pd.Timestamp(w[0]) for w in weeks]
    assert all(s.weekday() == 0 for s in starts) and starts[0] == pd.Timestamp("2020-06-01")
    assert all(w[2].sum() == 1008 for w in weeks)  # the trailing one-day week is dropped
    assert rolling_origins(idx, "MS", "200D") == []


def test_l1_loss_beats_least_squares_on_bursty_counts():
    """Trained for the metric reported: on counts with rare large bursts, the L1 booster (conditional
    median) has a lower MAE than the least-squares one, whose mean the bursts drag up."""
    X, y = throughput_features(_series(28, seed=1, burst=60.0))
    train = np.asarray(X.index < X.index[-1] - pd.Timedelta(days=7))
    mae = {}
    for name, algo, params in (("l2", "lightgbm", dict(SMALL, num_leaves=15)), ("l1", "lightgbm-l1", SMALL),
                               ("q50", "lightgbm-l1", dict(SMALL, objective="quantile", alpha=0.5))):
        model = make_throughput_model(algo, True, **params).fit(X[train], y[train])
        mae[name] = float(np.mean(np.abs(model.predict(X[~train]) - y[~train])))
    last = float(np.mean(np.abs(X[~train]["lag_0"] - y[~train])))
    assert mae["l1"] < 0.9 * mae["l2"] and mae["q50"] < 0.9 * mae["l2"]
    assert mae["l1"] < last


def test_existing_throughput_algorithms_keep_their_settings():
    """Lucid's in-replay model and old registered runs use these names: same classes, same losses."""
    ebm = make_throughput_model("ebm", True)
    assert isinstance(ebm, GA2MRegressor) and not ebm.log_target and ebm.interactions == 0
    assert make_throughput_model("ebm", False).outer_bags == 8
    lgb = make_throughput_model("lightgbm", True, num_leaves=7)
    assert isinstance(lgb, LightGBMRegressorModel) and lgb.objective == "regression" and lgb.num_leaves == 7
    assert not lgb.log_target and lgb.colsample_bytree == 1.0 and lgb.alpha is None
    rf = make_throughput_model("rf", True)
    assert isinstance(rf, RandomForestModel) and rf.min_samples_leaf == 5 and not rf.log_target
    l1 = make_throughput_model("lightgbm-l1", True, num_leaves=7)
    assert l1.objective == "l1" and l1.num_leaves == 7
    assert make_throughput_model("rf-log", True).log_target
    assert isinstance(make_throughput_model("blend-last", True, folds=2), LastValueBlend)
    with pytest.raises(ValueError, match="lightgbm-l1"):
        make_throughput_model("gbm", True)


def test_monotone_constraints_still_work_with_least_squares():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"g": rng.integers(1, 9, 400).astype(float), "z": rng.normal(size=400)})
    y = 10 * X["g"] - 30 * (X["g"] == 4) + rng.normal(size=400)
    pred = LightGBMRegressorModel(log_target=False, monotone=("g",), **SMALL).fit(X, y).predict(
        pd.DataFrame({"g": np.arange(1.0, 9.0), "z": 0.0}))
    assert np.all(np.diff(pred) >= -1e-9)


def test_blend_trusts_the_model_where_it_earns_it():
    X, y = throughput_features(_series(40, seed=2))
    blend = LastValueBlend(base_params=SMALL, folds=2).fit(X, y)
    assert blend.weight_ >= 0.7 and len(blend.validation_) == 2
    assert (blend.validation_["mae_model"] < blend.validation_["mae_last_value"]).all()
    p = blend.predict(X.iloc[-50:])
    expected = blend.weight_ * blend.model_.predict(X.iloc[-50:]) + (1 - blend.weight_) * X.iloc[-50:]["lag_0"]
    np.testing.assert_allclose(p, expected)
    again = pickle.loads(pickle.dumps(blend))  # MLflow stores the fitted estimator with (cloud)pickle
    np.testing.assert_allclose(again.predict(X.iloc[-50:]), p)
    assert list(blend.importances().index)[:1] and set(blend.importances().index) == set(X.columns)


def test_blend_falls_back_to_the_last_value_when_the_level_drifts():
    """Trees cannot predict above what they saw: on a steadily rising level the last value wins each
    inner fold and the blend returns it exactly."""
    idx = pd.date_range("2020-04-01", periods=30 * 144, freq="10min")
    rng = np.random.default_rng(3)
    level = np.arange(len(idx)) / 10.0
    series = pd.DataFrame({"submit_gpu_job": np.round(level + rng.normal(0, 0.5, len(idx)))}, index=idx)
    X, y = throughput_features(series)
    blend = make_throughput_model("blend-last", True, base_params=SMALL, folds=2, fold_days=3.0).fit(X, y)
    assert blend.weight_ == 0.0
    np.testing.assert_array_equal(blend.predict(X.iloc[-10:]), X.iloc[-10:]["lag_0"].to_numpy())


def test_blend_refuses_to_predict_unfitted_and_keeps_params():
    blend = LastValueBlend(base="rf-log", base_params={"n_estimators": 5}, folds=4, weights=(0.0, 1.0))
    assert (blend.base, blend.base_params, blend.folds, blend.weights) == ("rf-log", {"n_estimators": 5}, 4, (0.0, 1.0))
    with pytest.raises(NotFittedError, match="not fitted"):
        blend.predict(pd.DataFrame({"lag_0": [1.0]}))
    with pytest.raises(ValueError, match="lag_0"):
        blend.fit(pd.DataFrame({"x": [1.0, 2.0]}, index=pd.date_range("2020-01-01", periods=2, freq="10min")),
                  [1.0, 2.0])
