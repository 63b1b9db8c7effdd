"""One conformance test over every estimator of every task (models.base's contract, scikit-learn's habits):
parameters stored by name and read back, set_params refusing unknown names, clone unfitted with equal
parameters, predict (forecast, expected cost) before fit refused, fit returning self with learned state in
`_` attributes, deterministic fits for a seed, and fitted models that survive cloudpickle (what MLflow
logs them with). The case table is checked against the source: every class of the models package that
defines `fit` must have a case, so a new estimator cannot skip the contract."""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import pytest

from models.base import Estimator, NotFittedError, clone

MODELS = Path(__file__).resolve().parents[1] / "models"


# -- tiny data, one maker per task ---------------------------------------------------------------------
def _tabular(n: int = 120, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"num_gpus": rng.choice([1, 2, 4, 8], n).astype(float), "hour": rng.integers(0, 24, n),
                      "user": rng.choice(["a", "b", "c"], n)})
    y = np.exp(rng.normal(7, 1, n)) * X["num_gpus"].to_numpy()
    return (X, y), X


def _iterations(n: int = 120, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"group_id": rng.choice(["g1", "g2", "g3", "g4"], n), "user": rng.choice(["u1", "u2"], n)})
    y = X["group_id"].map({"g1": 100.0, "g2": 2000.0, "g3": 50.0, "g4": 800.0}).to_numpy() + rng.normal(0, 5, n)
    return (X, y), X


def _series(n: int = 24 * 6 * 30, seed: int = 0):
    rng = np.random.default_rng(seed)
    index = pd.date_range("2020-06-01", periods=n, freq="10min")
    lag = rng.poisson(20, n).astype(float)
    X = pd.DataFrame({"lag_0": lag, "hour": index.hour, "lag_1": np.roll(lag, 1)}, index=index)
    y = lag + rng.normal(0, 2, n)
    return (X, y), X


def _packing(seed: int = 0):
    rng = np.random.default_rng(seed)
    n = 90
    X = pd.DataFrame({"gpu_util": rng.uniform(0, 100, n), "gmem_util": rng.uniform(0, 100, n),
                      "gmem": rng.uniform(1, 30, n), "amp": rng.integers(0, 2, n)})
    y = np.digitize(X["gpu_util"], [35, 70])
    return (X, y), X


HORIZON, LOOKBACK = 6, 24


def _demand(days: int = 3, seed: int = 0):
    """Three organisations' GPU demand every 10 minutes with a daily cycle; forecasts from the third day."""
    from models.forecast import origins_for

    rng = np.random.default_rng(seed)
    index = pd.date_range("2020-05-01", periods=days * 144, freq="10min")
    day = np.sin(np.arange(len(index)) * 2 * np.pi / 144)
    demand = pd.DataFrame({f"org{i}": np.maximum(0.0, 20 + 8 * (i + 1) * day + rng.normal(0, 2, len(index)))
                           for i in range(3)}, index=index)
    attrs = pd.DataFrame({"quota_gpus": [40.0, 50.0, 60.0]}, index=demand.columns)
    origins = origins_for(index, index[2 * 144], HORIZON, LOOKBACK)[:4]
    return (demand, attrs), (demand, attrs, origins)


def _gp(seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.random((30, 5))
    y = -np.abs(X[:, 0] - 0.3) + 0.1 * X[:, 1]
    return (X, y), X


def _deferrals(seed: int = 0):
    """Observed deferral costs f = |X - 30| in two contexts (X in seconds, then the four context values)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 100, 16)
    ctx = np.where(rng.random(16)[:, None] < 0.5, [[60.0, 3600.0, 30.0, 20.0]], [[300.0, 7200.0, 60.0, 40.0]])
    return (np.column_stack([x, ctx]), np.abs(x - 30.0)), ([60.0, 3600.0, 30.0, 20.0], np.linspace(0, 100, 11))


def _predict(est, inputs):
    return np.asarray(est.predict(inputs))


def _forecast(est, inputs):
    fc = est.forecast(*inputs)
    return np.concatenate([fc.mean.ravel(), fc.quantile(0.9).ravel()])


def _expected_cost(est, inputs):
    return est.expected_cost(*inputs)


@dataclass(frozen=True)
class Case:
    name: str
    make: Callable[[], Estimator]
    data: Callable[[], tuple[tuple, Any]]  # -> (fit arguments, what the predict function takes)
    predict: Callable[[Any, Any], np.ndarray] = _predict
    online: bool = False  # learns from observations while it answers (its state is not in `_` attributes)


def _cases() -> list[Case]:
    from models.deferral import BODeferralPredictor, GaussianProcess
    from models.forecast import DeepARForecaster, DLinear, OrgLinear, PreviousWeekPeak, SeasonalNaive
    from models.forecast_zoo import GluonTSForecaster
    from models.packing import PackingClassifier
    from models.tabular import (GA2MRegressor, IterationForest, LastValueBlend, LightGBMRegressorModel,
                                RandomForestModel)

    small = dict(lookback=LOOKBACK, horizon=HORIZON)
    return [
        # duration / throughput / iterations (tabular)
        Case("ga2m", lambda: GA2MRegressor(outer_bags=1, max_rounds=60, categorical=("user",)), _tabular),
        Case("lightgbm", lambda: LightGBMRegressorModel(n_estimators=15, num_leaves=7, categorical=("user",)),
             _tabular),
        Case("random-forest", lambda: RandomForestModel(n_estimators=5, categorical=("user",)), _tabular),
        Case("iteration-forest", lambda: IterationForest(n_estimators=5), _iterations),
        Case("last-value-blend", lambda: LastValueBlend(base="lightgbm", base_params={"n_estimators": 10},
                                                        folds=2, fold_days=3.0, min_train_days=7.0), _series),
        # packing
        Case("packing-tree", lambda: PackingClassifier(cv=2), _packing),
        # demand forecasters
        Case("orglinear", lambda: OrgLinear(**small, kernel=5, max_epochs=1, batch_size=64, holiday_country=None,
                                            engine="torch"), _demand, _forecast),
        Case("orglinear-lightning", lambda: OrgLinear(**small, kernel=5, max_epochs=1, batch_size=128,
                                                      holiday_country=None), _demand, _forecast),
        Case("dlinear", lambda: DLinear(**small, kernel=5, max_epochs=1, batch_size=64), _demand, _forecast),
        Case("deepar", lambda: DeepARForecaster(**small, max_epochs=1, num_batches_per_epoch=2, num_samples=8),
             _demand, _forecast),
        Case("gluonts-patchtst", lambda: GluonTSForecaster("patchtst", **small, max_epochs=1, num_batches_per_epoch=2,
                                                           num_samples=8, patch_len=6), _demand, _forecast),
        Case("seasonal-naive", lambda: SeasonalNaive(HORIZON, 144, lookback=144), _demand, _forecast),
        Case("gfs-e", lambda: PreviousWeekPeak(HORIZON, 144), _demand, _forecast),
        # deferral (Lazer)
        Case("gaussian-process", lambda: GaussianProcess(noise=1e-3), _gp),
        Case("bo-deferral", lambda: BODeferralPredictor(n_bootstrap=4, min_updates=8, max_points=40, grid=21,
                                                        num_fantasies=4, seed=3), _deferrals, _expected_cost,
             online=True),
    ]


CASES = _cases()
IDS = [c.name for c in CASES]


def _classes_with_fit() -> set[str]:
    """``module.Class`` for every class in models/ whose body defines ``fit`` (read from the source, so
    nothing heavy is imported)."""
    found = set()
    for path in MODELS.rglob("*.py"):
        module = ".".join(path.relative_to(MODELS.parent).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(isinstance(b, ast.FunctionDef) and b.name == "fit"
                                                      for b in node.body):
                found.add(f"{module}.{node.name}")
    return found


def test_every_estimator_of_the_models_package_has_a_case():
    covered = {f"{type(c.make()).__module__}.{type(c.make()).__name__}" for c in CASES}
    missing = sorted(_classes_with_fit() - covered)
    assert not missing, f"estimators without a conformance case: {missing}"
    assert _classes_with_fit() >= {"models.forecast.OrgLinear", "models.deferral.BODeferralPredictor"}


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_parameters_are_stored_and_read_back(case):
    est = case.make()
    assert isinstance(est, Estimator)
    params = est.get_params()
    assert list(params) == type(est).param_names()
    assert est.set_params(**params) is est and est.get_params() == params
    with pytest.raises(ValueError, match="has no parameter 'bogus'"):
        est.set_params(bogus=1)
    assert type(est).__name__ in repr(est)
    fresh = clone(est)
    assert fresh is not est and type(fresh) is type(est) and fresh.get_params() == params


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_predict_before_fit_is_refused(case):
    _, inputs = case.data()
    with pytest.raises(NotFittedError, match="not fitted"):
        case.predict(case.make(), inputs)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_fit_returns_self_is_deterministic_clones_unfitted_and_pickles(case):
    import cloudpickle

    args, inputs = case.data()
    est = case.make()
    before = est.get_params()
    assert est.fit(*args) is est
    assert est.get_params() == before
    learned = est.fitted_attributes()
    assert learned and (case.online or all(a.endswith("_") for a in learned))
    pred = case.predict(est, inputs)
    assert len(pred) and np.isfinite(pred.astype(float)).all()
    # the same seed and data: the same model
    np.testing.assert_array_equal(case.predict(case.make().fit(*args), inputs), pred)
    fresh = clone(est)
    assert fresh is not est and fresh.get_params() == est.get_params() and not fresh.fitted_attributes()
    with pytest.raises(NotFittedError):
        case.predict(fresh, inputs)
    back = cloudpickle.loads(cloudpickle.dumps(est))
    np.testing.assert_array_equal(case.predict(back, inputs), pred)


def test_set_params_is_checked_again_where_construction_checks(tmp_path):
    from models.forecast import OrgLinear

    (demand, attrs), _ = _demand()
    est = OrgLinear(lookback=LOOKBACK, horizon=HORIZON, engine="torch").set_params(calendar="mean")
    with pytest.raises(ValueError, match="calendar must be one of"):
        est.fit(demand, attrs)


def test_a_bo_predictor_answers_before_observations_and_set_params_starts_afresh():
    from models.deferral import BODeferralPredictor

    context = [60.0, 3600.0, 30.0, 20.0]
    a, b = BODeferralPredictor(seed=5), BODeferralPredictor(seed=5)
    assert [a.suggest(context) for _ in range(3)] == [b.suggest(context) for _ in range(3)]  # bootstrap
    (X, y), _ = _deferrals()
    a.fit(X, y)
    assert a.updates == len(y) and a.set_params(seed=5) is a and a.updates == 0 and not a.fitted_attributes()
    assert a.suggest(context) == BODeferralPredictor(seed=5).suggest(context)


def test_clone_refuses_what_is_not_an_estimator():
    with pytest.raises(TypeError):
        clone(object())
