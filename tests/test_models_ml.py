"""Estimators: fit / predict protocols, the paper-specific rules, and forecasters on small data."""
import os

import numpy as np
import pandas as pd
import pytest

from features.duration import CATEGORICAL, duration_features
from features.traces.synthetic import generate_preset


@pytest.fixture(scope="module")
def jobs():
    t = generate_preset("demo", seed=5, jobs=1500)
    return t, duration_features(t), t.frame["duration"].to_numpy()


def _signal(n=1500, seed=0):
    """Durations with a known structure: org and GPU count set the median, history is informative."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"num_gpus": rng.choice([1.0, 2.0, 4.0, 8.0], n), "org": rng.choice(["a", "b", "c"], n),
                      "user": "<unknown>", "group_id": "<unknown>", "name_bucket": "<unknown>",
                      "hour": rng.integers(0, 24, n).astype(float)})
    log_median = 5 + 0.5 * np.log2(X["num_gpus"]) + X["org"].map({"a": 0.0, "b": 1.5, "c": 3.0})
    y = np.exp(log_median + rng.normal(0, 0.5, n)).to_numpy()
    X["hist_group_mean"] = np.exp(log_median + rng.normal(0, 0.3, n))
    return X, y


@pytest.mark.parametrize("name", ["lightgbm", "rf", "ebm"])
def test_duration_models_learn_something(name):
    from evaluation.scores import duration_scores
    from pipelines.train import make_duration_model

    X, y = _signal()
    train = np.arange(len(y)) < 1100
    model = make_duration_model(name, fast=True).fit(X[train], y[train])
    pred = model.predict(X[~train])
    s = duration_scores(y[~train], pred)
    base = duration_scores(y[~train], np.full((~train).sum(), np.median(y[train])))
    assert (pred >= 0).all() and s["log_mae"] < base["log_mae"]


def test_ga2m_monotone_gpu_shape(jobs):
    from models.tabular import GA2MRegressor

    t, X, y = jobs
    m = GA2MRegressor(categorical=CATEGORICAL, monotone_increasing=["num_gpus"]).fit(X, y)
    shape = m.shape_function("num_gpus")["score"].to_numpy()
    assert (np.diff(shape) >= -1e-9).all() and m.monotonized_ == ["num_gpus"]
    local = m.explain_local(X.head(2))
    assert local.shape[0] == 2 and "num_gpus" in local.columns


def test_iteration_forest_unseen_groups():
    from models.tabular import IterationForest

    X = pd.DataFrame({"group_id": ["g1", "g1", "g2", "g2"] * 5, "user": ["u1", "u1", "u2", "u2"] * 5})
    y = np.array([100.0, 110.0, 10.0, 12.0] * 5)
    new = pd.DataFrame({"group_id": ["g1", "g9"], "user": ["u1", "u2"]})
    paper = IterationForest(min_samples_leaf=1).fit(X, y).predict(new)
    better = IterationForest(unseen="fallback", min_samples_leaf=1).fit(X, y).predict(new)
    assert paper[0] > 90 and paper[1] == 0.0  # unseen -> 0, as A-SRPT says
    assert better[1] == pytest.approx(11.0)  # unseen -> the user's mean duration


def test_packing_tree_pruned_and_lomo(shared_data):
    from features.packing import packing_dataset
    from models.packing import PackingClassifier, leave_one_model_out

    ds = packing_dataset(shared_data)
    pruned = PackingClassifier().fit(ds, ds["target"])
    full = PackingClassifier(ccp_alpha=0.0).fit(ds, ds["target"])
    assert pruned.model_.get_n_leaves() < full.model_.get_n_leaves()
    y, pred = leave_one_model_out(ds)
    assert len(pred) == len(ds) and (pred == y).mean() > 0.5  # well above chance (1/3)
    assert "gmem" in pruned.rules() or "gpu_util" in pruned.rules()


def test_packing_cv_is_cross_val_score(shared_data):
    """PackingClassifier's ccp_alpha search scores each alpha with its own fold loop (models/packing.py): the
    accuracies are sklearn's cross_val_score on the same StratifiedKFold, exactly, on the real profiles and on
    random data with many candidate alphas."""
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    from features.packing import FEATURES, packing_dataset
    from models.packing import PackingClassifier

    rng = np.random.default_rng(3)
    noisy = pd.DataFrame(rng.random((90, 4)), columns=list(FEATURES))
    for X, y in ((packing_dataset(shared_data)[list(FEATURES)], packing_dataset(shared_data)["target"]),
                 (noisy, rng.integers(0, 3, 90))):
        X, y = X.astype(float), np.asarray(y, dtype=int)
        clf = PackingClassifier()
        path = clf._tree(0.0).cost_complexity_pruning_path(X, y)
        alphas = np.unique(np.round(path.ccp_alphas[:-1], 6))
        alphas = alphas[::max(1, len(alphas) // 6)]  # about 6 of them: the check, not the search
        assert len(alphas) > 4
        cv = StratifiedKFold(5, shuffle=True, random_state=0)
        expected = [cross_val_score(clf._tree(a), X, y, cv=cv).mean() for a in alphas]
        assert clf._cv_accuracies(X.to_numpy(), y, alphas, 5) == expected


def _series(days=12, orgs=3, seed=0):
    idx = pd.date_range("2020-05-01", periods=days * 144, freq="10min")
    rng = np.random.default_rng(seed)
    day = np.sin(2 * np.pi * np.arange(len(idx)) / 144)
    cols = {f"vc{i}": np.maximum(0, 20 * (i + 1) + 10 * (i + 1) * day + rng.normal(0, 2, len(idx))) for i in range(orgs)}
    demand = pd.DataFrame(cols, index=idx)
    attrs = pd.DataFrame({"quota_gpus": [40.0, 80.0, 120.0][:orgs]}, index=demand.columns)
    return demand, attrs


def test_orglinear_learns_a_daily_cycle_and_gives_ordered_quantiles():
    from models.forecast import OrgLinear, SeasonalNaive, origins_for, truth
    from evaluation.scores import forecast_scores

    os.environ["OMP_NUM_THREADS"] = "1"
    demand, attrs = _series()
    cut = demand.index[-2 * 144]
    train = demand[demand.index <= cut]
    model = OrgLinear(max_epochs=4, batch_size=128, holiday_country=None).fit(train, attrs)
    origins = origins_for(demand.index, cut, 36, 144)
    fc = model.forecast(demand, attrs, origins)
    y = truth(demand, origins, 36)
    s = forecast_scores(y.ravel(), fc.mean.ravel(), {0.9: fc.quantile(0.9).ravel()})
    flat = forecast_scores(y.ravel(), np.full(y.size, train.to_numpy().mean()), {0.9: np.full(y.size, 0.0)})
    assert s["mae"] < 0.5 * flat["mae"]
    assert (fc.quantile(0.95) >= fc.quantile(0.9)).all() and (fc.scale > 0).all()
    naive = SeasonalNaive(36, 144).fit(train, attrs).forecast(demand, attrs, origins)
    assert naive.mean.shape == fc.mean.shape


def test_forecast_baselines_and_deepar_wiring():
    from models.forecast import DeepARForecaster, DLinear, PreviousWeekPeak, origins_for

    demand, attrs = _series(days=9, orgs=2)
    cut = demand.index[-144]
    train = demand[demand.index <= cut]
    origins = origins_for(demand.index, cut, 36, 144)
    peak = PreviousWeekPeak(36, 7 * 144).fit(train).forecast(demand, attrs, origins)
    assert (peak.quantile(0.9) == peak.mean).all()
    dl = DLinear(max_epochs=2).fit(train, attrs).forecast(demand, attrs, origins)
    assert np.isfinite(dl.quantile(0.95)).all()
    deepar = DeepARForecaster(max_epochs=1, num_batches_per_epoch=3, num_samples=20).fit(train, attrs)
    fc = deepar.forecast(demand, attrs, origins[:1])
    assert fc.samples.shape == (20, 1, 2, 36) and np.isfinite(fc.mean).all()
