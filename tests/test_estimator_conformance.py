"""One conformance test over every estimator of every task (models.base's contract, scikit-learn's habits):
parameters stored by name and read back, set_params refusing unknown names, clone unfitted, predict before
fit refused, fit returning self with learned state in `_` attributes, deterministic and picklable fits."""
from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

from models.base import Estimator, NotFittedError, clone


def _tabular(n: int = 120, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"num_gpus": rng.choice([1, 2, 4, 8], n).astype(float), "hour": rng.integers(0, 24, n),
                      "user": rng.choice(["a", "b", "c"], n)})
    y = np.exp(rng.normal(7, 1, n)) * X["num_gpus"].to_numpy()
    return X, y


def _iterations(n: int = 120, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"group_id": rng.choice(["g1", "g2", "g3", "g4"], n), "user": rng.choice(["u1", "u2"], n)})
    y = X["group_id"].map({"g1": 100.0, "g2": 2000.0, "g3": 50.0, "g4": 800.0}).to_numpy() + rng.normal(0, 5, n)
    return X, y


def _series(n: int = 24 * 6 * 30, seed: int = 0):
    rng = np.random.default_rng(seed)
    index = pd.date_range("2020-06-01", periods=n, freq="10min")
    lag = rng.poisson(20, n).astype(float)
    X = pd.DataFrame({"lag_0": lag, "hour": index.hour, "lag_1": np.roll(lag, 1)}, index=index)
    y = lag + rng.normal(0, 2, n)
    return X, y


def _packing(seed: int = 0):
    rng = np.random.default_rng(seed)
    n = 90
    X = pd.DataFrame({"gpu_util": rng.uniform(0, 100, n), "gmem_util": rng.uniform(0, 100, n),
                      "gmem": rng.uniform(1, 30, n), "amp": rng.integers(0, 2, n)})
    y = np.digitize(X["gpu_util"], [35, 70])
    return X, y


def _cases():
    from models.packing import PackingClassifier
    from models.tabular import (GA2MRegressor, IterationForest, LastValueBlend, LightGBMRegressorModel,
                                RandomForestModel)

    return [
        ("ga2m", lambda: GA2MRegressor(outer_bags=1, max_rounds=60, categorical=("user",)), _tabular),
        ("lightgbm", lambda: LightGBMRegressorModel(n_estimators=15, num_leaves=7, categorical=("user",)), _tabular),
        ("random-forest", lambda: RandomForestModel(n_estimators=5, categorical=("user",)), _tabular),
        ("iteration-forest", lambda: IterationForest(n_estimators=5), _iterations),
        ("last-value-blend", lambda: LastValueBlend(base="lightgbm", base_params={"n_estimators": 10},
                                                    folds=2, fold_days=3.0, min_train_days=7.0), _series),
        ("packing-tree", lambda: PackingClassifier(cv=2), _packing),
    ]


CASES = _cases()


@pytest.mark.parametrize("name, make, data", CASES, ids=[c[0] for c in CASES])
def test_parameters_are_stored_and_read_back(name, make, data):
    est = make()
    assert isinstance(est, Estimator)
    params = est.get_params()
    assert list(params) == type(est).param_names()
    assert est.set_params(**params) is est and est.get_params() == params
    with pytest.raises(ValueError, match="has no parameter 'bogus'"):
        est.set_params(bogus=1)
    assert type(est).__name__ in repr(est)


@pytest.mark.parametrize("name, make, data", CASES, ids=[c[0] for c in CASES])
def test_predict_before_fit_is_refused(name, make, data):
    X, _ = data()
    with pytest.raises(NotFittedError, match="not fitted"):
        make().predict(X)


@pytest.mark.parametrize("name, make, data", CASES, ids=[c[0] for c in CASES])
def test_fit_returns_self_learns_into_underscore_attributes_and_keeps_parameters(name, make, data):
    X, y = data()
    est = make()
    before = est.get_params()
    assert est.fit(X, y) is est
    assert est.get_params() == before
    assert est.fitted_attributes() and all(a.endswith("_") for a in est.fitted_attributes())
    pred = np.asarray(est.predict(X))
    assert pred.shape[0] == len(X) and np.isfinite(pred.astype(float)).all()
    fresh = clone(est)
    assert fresh is not est and fresh.get_params() == est.get_params() and not fresh.fitted_attributes()


@pytest.mark.parametrize("name, make, data", CASES, ids=[c[0] for c in CASES])
def test_fits_are_deterministic_and_survive_pickling(name, make, data):
    X, y = data()
    a, b = make().fit(X, y), make().fit(X, y)
    np.testing.assert_array_equal(np.asarray(a.predict(X)), np.asarray(b.predict(X)))
    back = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(np.asarray(back.predict(X)), np.asarray(a.predict(X)))


def test_clone_refuses_what_is_not_an_estimator():
    with pytest.raises(TypeError):
        clone(object())
