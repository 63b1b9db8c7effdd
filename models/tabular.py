"""Tabular regressors in scikit-learn's manner: GA2M (interpret's EBM), LightGBM and random forest.

All take a feature DataFrame (numeric columns plus string categoricals listed in ``categorical``),
learn on log1p(y) when ``log_target`` (durations are heavy-tailed: errors in log space are what a
ranking policy feels) and predict on the original scale. Category levels are fixed at fit time;
unseen levels become missing values (LightGBM, EBM) or -1 (random forest).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from models.base import Estimator


class _TabularBase(Estimator):
    log_target: bool
    categorical: Sequence[str]

    def _prepare_y(self, y) -> np.ndarray:
        y = np.asarray(y, dtype=float)
        return np.log1p(np.maximum(y, 0.0)) if self.log_target else y

    def _finish(self, pred) -> np.ndarray:
        pred = np.asarray(pred, dtype=float)
        return np.maximum(np.expm1(pred), 0.0) if self.log_target else pred

    def _cats(self, X: pd.DataFrame) -> list[str]:
        return [c for c in self.categorical if c in X.columns]

    def _fit_levels(self, X: pd.DataFrame) -> None:
        self.columns_ = list(X.columns)
        self.levels_ = {c: sorted(X[c].astype(str).unique().tolist()) for c in self._cats(X)}

    def _check_columns(self, X: pd.DataFrame) -> pd.DataFrame:
        missing = [c for c in self.columns_ if c not in X.columns]
        if missing:
            raise ValueError(f"missing feature columns {missing}")
        return X[self.columns_]


class GA2MRegressor(_TabularBase):
    """Interpretable GA2M: interpret's ExplainableBoostingRegressor (Lucid §3.5).

    ``monotone_increasing``: features whose shape function is made monotone after fitting with
    interpret's ``monotonize`` (isotonic regression / PAV, as Lucid's System Tuner does on gpu_num).
    Defaults are small enough for tests; pipelines pass full settings.
    """

    def __init__(self, interactions: int | float = 0, outer_bags: int = 2, max_rounds: int = 2000,
                 learning_rate: float = 0.05, log_target: bool = True, categorical: Sequence[str] = (),
                 monotone_increasing: Sequence[str] = (), random_state: int = 0, n_jobs: int = 1):
        self.interactions, self.outer_bags, self.max_rounds = interactions, outer_bags, max_rounds
        self.learning_rate, self.log_target, self.categorical = learning_rate, log_target, tuple(categorical)
        self.monotone_increasing, self.random_state, self.n_jobs = tuple(monotone_increasing), random_state, n_jobs

    def _frame(self, X: pd.DataFrame) -> pd.DataFrame:
        if not self._cats(X):
            return X  # nothing to convert, no copy: per-row predictions in a replay stay cheap
        X = X.copy()
        for c in self._cats(X):
            X[c] = X[c].astype(str)
        return X

    def fit(self, X: pd.DataFrame, y) -> "GA2MRegressor":
        from interpret.glassbox import ExplainableBoostingRegressor

        self._fit_levels(X)
        types = ["nominal" if c in self.categorical else "continuous" for c in X.columns]
        self.model_ = ExplainableBoostingRegressor(
            feature_types=types, interactions=self.interactions, outer_bags=self.outer_bags,
            max_rounds=self.max_rounds, learning_rate=self.learning_rate, random_state=self.random_state,
            n_jobs=self.n_jobs)
        import warnings

        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Missing values detected")
            warnings.filterwarnings("ignore", message="All-NaN slice")
            self.model_.fit(self._frame(X), self._prepare_y(y))
        self.monotonized_ = []
        for name in self.monotone_increasing:
            if name in self.columns_:
                self.model_.monotonize(name, increasing=True)
                self.monotonized_.append(name)
        return self

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        self.check_is_fitted()
        return self._finish(self.model_.predict(self._frame(self._check_columns(X))))

    def shape_function(self, feature: str) -> pd.DataFrame:
        """The learned shape function of one main-effect term (bin edges / levels and scores)."""
        idx = self.model_.term_names_.index(feature)
        scores = np.asarray(self.model_.term_scores_[idx])[1:-1]  # drop missing / unknown bins
        bins = self.model_.bins_[self.model_.term_features_[idx][0]][0]
        if isinstance(bins, dict):
            return pd.DataFrame({"level": list(bins.keys()), "score": scores[: len(bins)]})
        edges = np.asarray(bins, dtype=float)
        lo = np.concatenate([[-np.inf], edges])
        return pd.DataFrame({"from": lo[: len(scores)], "score": scores})

    def importances(self) -> pd.Series:
        return pd.Series(self.model_.term_importances(), index=self.model_.term_names_).sort_values(ascending=False)

    def explain_local(self, X: pd.DataFrame) -> pd.DataFrame:
        """Per-term contributions (in the model's target space) for each row of X."""
        exp = self.model_.explain_local(self._frame(self._check_columns(X)))
        rows = []
        for i in range(len(X)):
            d = exp.data(i)
            rows.append(pd.Series(d["scores"], index=d["names"], name=X.index[i]))
        return pd.DataFrame(rows)


class LightGBMRegressorModel(_TabularBase):
    """Gradient-boosted trees (LightGBM): Helios' QSSF duration baseline and a throughput baseline."""

    def __init__(self, n_estimators: int = 300, learning_rate: float = 0.05, num_leaves: int = 63,
                 min_child_samples: int = 20, log_target: bool = True, categorical: Sequence[str] = (),
                 monotone: Sequence[str] = (), random_state: int = 0, n_jobs: int = 1,
                 objective: str = "regression", alpha: float | None = None, colsample_bytree: float = 1.0):
        """``monotone``: features whose effect is constrained to be non-decreasing (LightGBM's
        monotone_constraints), e.g. num_gpus for Lucid's System Tuner. ``objective``: LightGBM's loss;
        train for the metric you report (``"l1"`` or ``"quantile"`` with ``alpha=0.5`` for MAE on bursty
        counts: the conditional median, not the mean that bursts drag up). ``alpha``: the quantile level
        (quantile) or delta (huber); None keeps LightGBM's default."""
        self.monotone = tuple(monotone)
        self.objective, self.alpha, self.colsample_bytree = objective, alpha, colsample_bytree
        self.n_estimators, self.learning_rate, self.num_leaves = n_estimators, learning_rate, num_leaves
        self.min_child_samples, self.log_target, self.categorical = min_child_samples, log_target, tuple(categorical)
        self.random_state, self.n_jobs = random_state, n_jobs

    def _frame(self, X: pd.DataFrame) -> pd.DataFrame:
        if not self._cats(X):
            return X  # nothing to convert, no copy: per-row predictions in a replay stay cheap
        X = X.copy()
        for c in self._cats(X):
            X[c] = pd.Categorical(X[c].astype(str), categories=self.levels_[c])
        return X

    def _extra_params(self, X: pd.DataFrame) -> dict:
        extra = {} if self.alpha is None else {"alpha": self.alpha}
        if any(c in self.monotone for c in X.columns):  # LightGBM refuses constraints with an L1 loss
            extra["monotone_constraints"] = [1 if c in self.monotone else 0 for c in X.columns]
        return extra

    def fit(self, X: pd.DataFrame, y) -> "LightGBMRegressorModel":
        import lightgbm as lgb

        self._fit_levels(X)
        self.model_ = lgb.LGBMRegressor(n_estimators=self.n_estimators, learning_rate=self.learning_rate,
                                        num_leaves=self.num_leaves, min_child_samples=self.min_child_samples,
                                        random_state=self.random_state, n_jobs=self.n_jobs, verbose=-1,
                                        deterministic=True, force_row_wise=True, objective=self.objective,
                                        colsample_bytree=self.colsample_bytree,
                                        **self._extra_params(X))
        self.model_.fit(self._frame(X), self._prepare_y(y))
        return self

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        self.check_is_fitted()
        return self._finish(self.model_.predict(self._frame(self._check_columns(X))))

    def importances(self) -> pd.Series:
        return pd.Series(self.model_.booster_.feature_importance("gain"), index=self.columns_).sort_values(
            ascending=False)


class RandomForestModel(_TabularBase):
    """scikit-learn random forest with bounded trees (min_samples_leaf, max_samples) so that models stay
    small enough to log (an unbounded 100-tree forest on 700k rows pickles to GBs)."""

    def __init__(self, n_estimators: int = 100, min_samples_leaf: int = 20, max_samples: float | None = 0.5,
                 max_features: float | str | None = 1.0, log_target: bool = True, categorical: Sequence[str] = (),
                 random_state: int = 0, n_jobs: int = 1, bootstrap: bool = True):
        self.bootstrap = bootstrap  # False: every tree sees every row (max_samples unused)
        self.n_estimators, self.min_samples_leaf, self.max_samples = n_estimators, min_samples_leaf, max_samples
        self.max_features, self.log_target, self.categorical = max_features, log_target, tuple(categorical)
        self.random_state, self.n_jobs = random_state, n_jobs

    def _frame(self, X: pd.DataFrame) -> pd.DataFrame:
        X = X.copy()
        for c in self._cats(X):
            lookup = {v: i for i, v in enumerate(self.levels_[c])}
            X[c] = X[c].astype(str).map(lookup).fillna(-1).astype(float)
        return X.astype(float)

    def fit(self, X: pd.DataFrame, y) -> "RandomForestModel":
        from sklearn.ensemble import RandomForestRegressor

        self._fit_levels(X)
        self.model_ = RandomForestRegressor(n_estimators=self.n_estimators, criterion="squared_error",
                                            min_samples_leaf=self.min_samples_leaf,
                                            max_samples=self.max_samples if self.bootstrap else None,
                                            bootstrap=self.bootstrap,
                                            max_features=self.max_features, random_state=self.random_state,
                                            n_jobs=self.n_jobs)
        self.model_.fit(self._frame(X), self._prepare_y(y))
        return self

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        self.check_is_fitted()
        return self._finish(self.model_.predict(self._frame(self._check_columns(X))))

    def importances(self) -> pd.Series:
        return pd.Series(self.model_.feature_importances_, index=self.columns_).sort_values(ascending=False)


class IterationForest(RandomForestModel):
    """A-SRPT's iteration / duration predictor (§IV-C3): a 100-tree random forest with MSE splits on
    the recurring-group id and the user. Jobs whose group was never seen in training are predicted 0
    (treated as immediately complete), exactly as the paper says, unless ``unseen='fallback'``: then
    they get the mean duration, in training, of jobs with the same user, else the same GPU count,
    else the training median (schedcast's documented better fallback)."""

    def __init__(self, unseen: str = "zero", n_estimators: int = 100, min_samples_leaf: int = 5,
                 max_samples: float | None = 0.5, random_state: int = 0, n_jobs: int = 1, bootstrap: bool = True):
        if unseen not in ("zero", "fallback"):
            raise ValueError("unseen must be 'zero' or 'fallback'")
        super().__init__(n_estimators=n_estimators, min_samples_leaf=min_samples_leaf, max_samples=max_samples,
                         bootstrap=bootstrap,
                         log_target=False, categorical=("group_id", "user"), random_state=random_state,
                         n_jobs=n_jobs)
        self.unseen = unseen

    FEATURES = ("group_id", "user")

    def fit(self, X: pd.DataFrame, y) -> "IterationForest":
        X = X[[c for c in self.FEATURES if c in X]]
        super().fit(X, y)
        y = np.asarray(y, dtype=float)
        self.groups_ = set(X["group_id"].astype(str))
        self.user_mean_ = pd.Series(y).groupby(X["user"].astype(str).to_numpy()).mean().to_dict() \
            if "user" in X else {}
        self.median_ = float(np.median(y)) if len(y) else 0.0
        return self

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        self.check_is_fitted()
        pred = super().predict(X[[c for c in self.FEATURES if c in X]])
        unseen = ~X["group_id"].astype(str).isin(self.groups_).to_numpy()
        if self.unseen == "zero":
            pred[unseen] = 0.0
        else:
            users = X["user"].astype(str).to_numpy() if "user" in X else np.array(["<unknown>"] * len(X))
            pred[unseen] = [self.user_mean_.get(u, self.median_) for u in users[unseen]]
        return pred


def make_duration_model(algo: str, fast: bool, **params) -> _TabularBase:
    """A duration estimator on :func:`features.duration.duration_features` columns: ``lightgbm``
    (Helios' QSSF), ``ebm`` (Lucid's GA2M Workload Estimate, gpu_num monotone) or ``rf``. ``fast``:
    small EBM settings (tests, in-replay retraining)."""
    from features.duration import CATEGORICAL

    if algo == "lightgbm":
        return LightGBMRegressorModel(categorical=CATEGORICAL, **params)
    if algo == "rf":
        return RandomForestModel(categorical=CATEGORICAL, **params)
    if algo == "ebm":
        defaults = dict(interactions=0, outer_bags=2) if fast else dict(interactions=10, outer_bags=8)
        return GA2MRegressor(categorical=CATEGORICAL, **{"monotone_increasing": ("num_gpus",), **defaults, **params})
    raise ValueError(f"unknown duration algorithm {algo!r}: lightgbm, ebm, rf")


class LastValueBlend(Estimator):
    """Convex blend ``w * model + (1 - w) * last value`` for a next-bin count forecast, with the weight
    chosen inside ``fit`` by rolling-origin validation on the training data (why: on an unseen month a
    model can lose to repeating the last value; the blend falls back to it when the model does not earn
    its keep on the latest ``folds`` x ``fold_days`` of its own past).

    ``base`` / ``base_params``: the throughput algorithm wrapped (a :func:`make_throughput_model` name).
    ``last``: the feature holding the last observed value. ``weights``: the grid searched. A fold
    needs ``min_train_days`` of rows before it; without any fold the weight is 1 (the model alone).
    """

    def __init__(self, base: str = "lightgbm-l1", base_params: dict | None = None, last: str = "lag_0",
                 folds: int = 3, fold_days: float = 7.0, min_train_days: float = 14.0,
                 weights: Sequence[float] = tuple(i / 10 for i in range(11))):
        self.base, self.base_params, self.last = base, base_params, last
        self.folds, self.fold_days, self.min_train_days, self.weights = folds, fold_days, min_train_days, weights

    def _make(self):
        return make_throughput_model(self.base, True, **(self.base_params or {}))

    def fit(self, X: pd.DataFrame, y) -> "LastValueBlend":
        if self.last not in X.columns:
            raise ValueError(f"missing last-value feature {self.last!r}")
        y = np.asarray(y, dtype=float)
        index = pd.DatetimeIndex(X.index)
        end = index.max() + pd.Timedelta(1, "ns")
        preds, lasts, truth, rows = [], [], [], []
        for k in range(self.folds, 0, -1):
            lo = end - pd.Timedelta(days=k * self.fold_days)
            hi = end - pd.Timedelta(days=(k - 1) * self.fold_days)
            train, test = np.asarray(index < lo), np.asarray((index >= lo) & (index < hi))
            if not test.any() or not train.any() or lo - index.min() < pd.Timedelta(days=self.min_train_days):
                continue
            p = self._make().fit(X[train], y[train]).predict(X[test])
            preds.append(p)
            lasts.append(X[test][self.last].to_numpy(dtype=float))
            truth.append(y[test])
            rows.append({"fold_start": lo, "rows": int(test.sum()),
                         "mae_model": float(np.mean(np.abs(y[test] - p))),
                         "mae_last_value": float(np.mean(np.abs(y[test] - lasts[-1])))})
        if preds:
            p, last, t = np.concatenate(preds), np.concatenate(lasts), np.concatenate(truth)
            maes = [float(np.mean(np.abs(t - (w * p + (1 - w) * last)))) for w in self.weights]
            self.weight_ = float(self.weights[int(np.argmin(maes))])
            self.validation_mae_ = dict(zip([float(w) for w in self.weights], maes))
        else:
            self.weight_, self.validation_mae_ = 1.0, {}
        self.validation_ = pd.DataFrame(rows)
        self.model_ = self._make().fit(X, y)
        self.columns_ = list(self.model_.columns_)
        return self

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        self.check_is_fitted()
        last = X[self.last].to_numpy(dtype=float)
        if self.weight_ == 0.0:
            return last
        return self.weight_ * self.model_.predict(X) + (1.0 - self.weight_) * last

    def importances(self) -> pd.Series:
        """The wrapped model's importances (the blend adds only the last value, with weight 1 - w)."""
        return self.model_.importances()


THROUGHPUT_ALGOS = ("ebm", "lightgbm", "rf", "lightgbm-l1", "rf-log", "blend-last")
# Chosen by rolling-origin evaluation over months and weeks (benchmarks/bench_throughput.py): a small,
# column-subsampled L1 booster is within noise of the best settings tried and the fastest of them.
LIGHTGBM_L1_DEFAULTS = dict(objective="l1", n_estimators=500, learning_rate=0.03, num_leaves=15,
                            min_child_samples=100, colsample_bytree=0.7)


def make_throughput_model(algo: str, fast: bool, **params):
    """Lucid's Throughput Predict Model on :func:`features.series.throughput_features` columns.

    ``ebm`` (GA2M), ``lightgbm`` or ``rf``: least squares on the counts as they are (Lucid's and the
    in-replay update engine's settings; unchanged). Trained for MAE: ``lightgbm-l1`` (L1 objective: the
    conditional median, which bursts do not drag up), ``rf-log`` (a bounded forest on log1p counts) and
    ``blend-last`` (:class:`LastValueBlend` of ``lightgbm-l1`` and the last value)."""
    if algo == "ebm":
        defaults = dict(interactions=0, outer_bags=2) if fast else dict(interactions=10, outer_bags=8)
        return GA2MRegressor(log_target=False, **{**defaults, **params})
    if algo == "lightgbm":
        return LightGBMRegressorModel(log_target=False, **params)
    if algo == "rf":
        return RandomForestModel(log_target=False, min_samples_leaf=5, **params)
    if algo == "lightgbm-l1":
        return LightGBMRegressorModel(log_target=False, **{**LIGHTGBM_L1_DEFAULTS, **params})
    if algo == "rf-log":
        defaults = dict(n_estimators=60, min_samples_leaf=20, max_samples=0.5, max_features=0.5)
        return RandomForestModel(log_target=True, **{**defaults, **params})
    if algo == "blend-last":
        return LastValueBlend(**params)
    raise ValueError(f"unknown throughput algorithm {algo!r}: {', '.join(THROUGHPUT_ALGOS)}")
