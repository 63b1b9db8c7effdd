"""Training entry points: data -> features -> time-based split -> fit -> scores -> MLflow run + registry.

Every task trains on the data before a holdout window at the end of the data (relative to the data's
own end, never fixed dates) and scores on the holdout. ``TrainResult`` carries what the CLI prints and
what retraining compares.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from evaluation import scores
from features.duration import duration_features
from features.jobtable import JobTable
from models.tabular import make_duration_model, make_throughput_model  # noqa: F401  (re-exported)

DAY = 86400.0
#: Which metric decides "better" per task (lower is better for all of them except packing accuracy).
PRIMARY_METRIC = {"duration": "log_mae", "iterations": "log_mae", "throughput": "mae", "demand": "ql_0.9",
                  "packing": "error_rate"}


@dataclass
class TrainResult:
    task: str
    algo: str
    estimator: Any
    metrics: dict[str, float]
    params: dict[str, Any]
    fingerprint: dict[str, Any]
    X_example: pd.DataFrame
    figures: dict[str, Any] = field(default_factory=dict)
    columns: list[str] | None = None
    extra: dict | None = None
    train_seconds: float = 0.0
    baselines: dict[str, dict[str, float]] = field(default_factory=dict)
    holdout: Any = None  # what evaluate_on_holdout needs

    @property
    def primary(self) -> float:
        return float(self.metrics[PRIMARY_METRIC[self.task]])


# -- plots -------------------------------------------------------------------------------------------
def _fig():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def importance_figure(importances: pd.Series, title: str):
    plt = _fig()
    top = importances.head(15)[::-1]
    fig, ax = plt.subplots(figsize=(6, 4.5))
    ax.barh(top.index.astype(str), top.to_numpy())
    ax.set_title(title)
    fig.tight_layout()
    return fig


def shape_figure(model, feature: str):
    """A GA2M shape function: the feature's additive contribution (model's target space)."""
    plt = _fig()
    sf = model.shape_function(feature)
    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    if "level" in sf:
        ax.bar(sf["level"].astype(str).head(30), sf["score"].head(30))
        ax.tick_params(axis="x", rotation=90)
    else:
        x = sf["from"].replace(-np.inf, np.nan).bfill()
        ax.step(x, sf["score"], where="post")
    ax.set_title(f"shape function: {feature}")
    ax.set_ylabel("contribution")
    fig.tight_layout()
    return fig


def local_explanation_figure(model, row: pd.DataFrame, title: str):
    plt = _fig()
    contrib = model.explain_local(row).iloc[0].sort_values(key=np.abs, ascending=False).head(12)[::-1]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.barh(contrib.index.astype(str), contrib.to_numpy(), color=np.where(contrib.to_numpy() > 0, "#d95f02", "#1b9e77"))
    ax.set_title(title)
    fig.tight_layout()
    return fig


# -- durations ---------------------------------------------------------------------------------------
#: Default holdout at the end of each task's data, in days.
HOLDOUT_DAYS = {"duration": 30.0, "iterations": 30.0, "throughput": 31.0, "demand": 7.0}


def demand_windows(demand: pd.DataFrame, freq: str, horizon: int | None, test_days: float,
                   lookback: int | None = None) -> tuple[pd.Timestamp, list[pd.Timestamp], int, int]:
    """(cut, forecast origins over the holdout, horizon, lookback) with the defaults of train_demand:
    one day of look-back and a quarter-day horizon."""
    from models.forecast import origins_for

    per_day = int(round(pd.Timedelta("1D") / pd.Timedelta(freq)))
    lookback = lookback or per_day
    horizon = horizon or max(1, per_day // 4)
    cut = demand.index.max() - pd.Timedelta(days=test_days)
    return cut, origins_for(demand.index, cut + pd.Timedelta(freq), horizon, lookback), horizon, lookback


def holdout(task: str, data: dict[str, Any], test_days: float | None = None, horizon: int | None = None,
            freq: str = "10min", labels: str = "solo"):
    """The holdout a training run of ``task`` on ``data`` scores on, built without training a model (what
    `schedcast evaluate` scores a registered model on). ``data`` holds what the train_* function takes:
    table / series / demand + attrs / data_dir."""
    days = test_days if test_days is not None else HOLDOUT_DAYS.get(task)
    if task in ("duration", "iterations"):
        table = data["table"]
        _, test = duration_split(table.frame, days)
        return duration_features(table)[test], table.frame["duration"].to_numpy(dtype=float)[test]
    if task == "throughput":
        from features.series import throughput_features, time_split

        X, y = throughput_features(data["series"], horizon=horizon or 1)
        _, test = time_split(X.index, test_days=days)
        return X[test], y[test].to_numpy()
    if task == "demand":
        _, origins, _, _ = demand_windows(data["demand"], freq, horizon, days)
        return data["demand"], data["attrs"], origins
    if task == "packing":
        from features.packing import packing_dataset

        return packing_dataset(data.get("data_dir"), labels=labels), labels
    raise ValueError(f"unknown task {task!r}")


def duration_split(frame: pd.DataFrame, test_days: float) -> tuple[np.ndarray, np.ndarray]:
    t = frame["submit_time"].to_numpy(dtype=float)
    test = t > t.max() - test_days * DAY
    return ~test, test


def _fit_and_score(model, X: pd.DataFrame, y, train, test, score: Callable) -> tuple[np.ndarray, dict, float]:
    """Fit on the training rows (timed), predict the holdout and score it: (predictions, metrics, seconds)."""
    t0 = time.perf_counter()
    model.fit(X[train], y[train])
    secs = time.perf_counter() - t0
    pred = model.predict(X[test])
    return pred, {**score(y[test], pred), "train_seconds": secs}, secs


def train_duration(table: JobTable, *, algo: str = "lightgbm", test_days: float = 30.0, fast: bool = True,
                   source: str | Path | None = None, **params) -> TrainResult:
    """Duration model on job features (QSSF LightGBM, Lucid GA2M, RF baseline). Scores on the jobs
    submitted in the last ``test_days``; the baselines are the training median and each job's
    rolling mean of its group's past durations."""
    from models.registry import data_fingerprint

    frame = table.frame
    X = duration_features(table)
    X = X.loc[:, X.notna().any()]
    y = frame["duration"].to_numpy(dtype=float)
    train, test = duration_split(frame, test_days)
    if train.sum() < 10 or test.sum() < 1:
        raise ValueError(f"not enough jobs for a {test_days}-day holdout ({train.sum()} train, {test.sum()} test)")
    model = make_duration_model(algo, fast, **params)
    pred, metrics, secs = _fit_and_score(model, X, y, train, test, scores.duration_scores)
    base = {"median": scores.duration_scores(y[test], np.full(test.sum(), np.median(y[train])))}
    if "hist_group_roll_mean" in X:
        fallback = X["hist_group_roll_mean"].fillna(np.median(y[train])).to_numpy()[test]
        base["group_history"] = scores.duration_scores(y[test], fallback)
    figures = {"importances": importance_figure(model.importances(), f"{algo} duration: importance")}
    if algo == "ebm":
        for feat in [c for c in ("num_gpus", "hour") if c in X]:
            figures[f"shape_{feat}"] = shape_figure(model, feat)
        figures["local_explanation"] = local_explanation_figure(model, X[test].head(1), "one duration prediction")
    fp = data_fingerprint(source, frame[["submit_time", "duration", "num_gpus"]])
    return TrainResult("duration", algo, model, metrics, {"algo": algo, "test_days": test_days, "fast": fast,
                       **params}, fp, X[test].head(20), figures, list(X.columns), train_seconds=secs, baselines=base,
                       holdout=(X[test], y[test]))


def train_iterations(table: JobTable, *, unseen: str = "zero", test_days: float = 30.0,
                     source: str | Path | None = None, **params) -> TrainResult:
    """A-SRPT's random forest on (group id, user); unseen groups -> 0 (paper) or the fallback."""
    from models.registry import data_fingerprint
    from models.tabular import IterationForest

    frame = table.frame
    X = duration_features(table)[["group_id", "user"]]
    y = frame["duration"].to_numpy(dtype=float)
    train, test = duration_split(frame, test_days)
    model = IterationForest(unseen=unseen, **params)
    pred, metrics, secs = _fit_and_score(model, X, y, train, test, scores.duration_scores)
    metrics["unseen_share"] = float((~X[test]["group_id"].isin(model.groups_)).mean())
    fp = data_fingerprint(source, frame[["submit_time", "duration", "num_gpus"]])
    return TrainResult("iterations", f"rf-{unseen}", model, metrics, {"unseen": unseen, "test_days": test_days,
                       **params}, fp, X[test].head(20), {}, list(X.columns), train_seconds=secs,
                       holdout=(X[test], y[test]))


# -- throughput --------------------------------------------------------------------------------------
def train_throughput(series: pd.DataFrame, *, algo: str = "ebm", target: str = "submit_gpu_job", horizon: int = 1,
                     test_days: float = 31.0, fast: bool = True, source: str | Path | None = None,
                     **params) -> TrainResult:
    """Lucid's throughput predictor on the 10-minute series; scored against the naive last value."""
    from features.series import throughput_features, time_split
    from models.registry import data_fingerprint

    X, y = throughput_features(series, target=target, horizon=horizon)
    train, test = time_split(X.index, test_days=test_days)
    model = make_throughput_model(algo, fast, **params)
    pred, metrics, secs = _fit_and_score(model, X, y, train, test, scores.regression_scores)
    base = {"last_value": scores.regression_scores(y[test], X[test]["lag_0"]),
            "seasonal_day": scores.regression_scores(y[test], X[test]["lag_1d"])}
    figures = {"importances": importance_figure(model.importances(), f"{algo} throughput: importance")}
    if algo == "ebm":
        figures["shape_hour"] = shape_figure(model, "hour")
    fp = data_fingerprint(source, series)
    return TrainResult("throughput", algo, model, metrics, {"algo": algo, "target": target, "horizon": horizon,
                       "test_days": test_days, "fast": fast, **params}, fp, X[test].head(20), figures,
                       list(X.columns), train_seconds=secs, baselines=base, holdout=(X[test], y[test]))


# -- demand ------------------------------------------------------------------------------------------
def make_forecaster(algo: str, lookback: int, horizon: int, freq: str, **params):
    from models.forecast import DeepARForecaster, DLinear, OrgLinear, PreviousWeekPeak, SeasonalNaive

    per_day = int(round(pd.Timedelta("1D") / pd.Timedelta(freq)))
    if algo == "orglinear":
        return OrgLinear(lookback=lookback, horizon=horizon, **params)
    if algo == "dlinear":
        return DLinear(lookback=lookback, horizon=horizon, **params)
    if algo == "deepar":
        return DeepARForecaster(lookback=lookback, horizon=horizon, freq=freq, **params)
    if algo == "seasonal-naive":
        return SeasonalNaive(horizon, per_day, lookback=max(lookback, per_day))
    if algo == "gfs-e":
        return PreviousWeekPeak(horizon, 7 * per_day)
    raise ValueError(f"unknown demand algorithm {algo!r}: orglinear, dlinear, deepar, seasonal-naive, gfs-e")


def score_forecast(model, demand: pd.DataFrame, attrs, origins, horizon: int) -> tuple[dict[str, float], Any]:
    from models.forecast import truth

    fc = model.forecast(demand, attrs, origins)
    y = truth(demand, origins, horizon)
    q = {p: fc.quantile(p).ravel() for p in (0.9, 0.95)}
    kw = {"mu": fc.mean.ravel(), "sigma": fc.scale.ravel()} if fc.scale is not None else {}
    if fc.samples is not None:
        s = fc.samples.reshape(fc.samples.shape[0], -1)
        kw = {"samples": s[: min(50, len(s))]}
    return scores.forecast_scores(y.ravel(), fc.mean.ravel(), q, **kw), (fc, y)


def fan_figure(fc, y, org_index: int = 0):
    plt = _fig()
    m = np.concatenate(list(fc.mean[:, org_index, :]))
    q9 = np.concatenate(list(fc.quantile(0.9)[:, org_index, :]))
    q95 = np.concatenate(list(fc.quantile(0.95)[:, org_index, :]))
    t = np.concatenate(list(y[:, org_index, :]))
    fig, ax = plt.subplots(figsize=(8, 3.5))
    ax.plot(t, color="k", lw=0.8, label="demand")
    ax.plot(m, color="C0", lw=1, label="mean")
    ax.fill_between(np.arange(len(m)), m, q95, color="C0", alpha=0.2, label="to q0.95")
    ax.plot(q9, color="C1", lw=0.7, label="q0.9")
    ax.set_title(f"demand forecast, {fc.orgs[org_index]} (holdout)")
    ax.set_xlabel("forecast step (concatenated horizons)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def train_demand(demand: pd.DataFrame, attrs: pd.DataFrame, *, algo: str = "orglinear", freq: str = "10min",
                 lookback: int | None = None, horizon: int | None = None, test_days: float = 7.0,
                 source: str | Path | None = None, **params) -> TrainResult:
    """Per-org demand forecaster: trained before the last ``test_days``, scored on rolling origins
    every ``horizon`` steps over the holdout."""
    from models.forecast import origins_for
    from models.registry import data_fingerprint

    cut, _, horizon, lookback = demand_windows(demand, freq, horizon, test_days, lookback)
    train = demand[demand.index <= cut]
    model = make_forecaster(algo, lookback, horizon, freq, **params)
    if algo in ("orglinear", "deepar"):
        import lightning  # noqa: F401 - import before timing, as both models pay it once per process
    t0 = time.perf_counter()
    model.fit(train, attrs)
    secs = time.perf_counter() - t0
    origins = origins_for(demand.index, cut + pd.Timedelta(freq), horizon, getattr(model, "lookback", lookback))
    metrics, (fc, y) = score_forecast(model, demand, attrs, origins, horizon)
    metrics["train_seconds"] = secs
    fp = data_fingerprint(source, demand)
    needed = getattr(model, "lookback", lookback)
    history = demand.iloc[-needed:].rename_axis("time").reset_index().melt(id_vars="time", var_name="org",
                                                                          value_name="demand")
    extra = {"orgs": list(demand.columns), "freq": freq, "attrs": attrs.to_dict() if attrs is not None else None}
    return TrainResult("demand", algo, model, metrics, {"algo": algo, "freq": freq, "lookback": lookback,
                       "horizon": horizon, "test_days": test_days, **params}, fp, history,
                       {"fan_chart": fan_figure(fc, y)}, None, extra, secs, holdout=(demand, attrs, origins))


# -- packing -----------------------------------------------------------------------------------------
def confusion_figure(conf: pd.DataFrame):
    plt = _fig()
    fig, ax = plt.subplots(figsize=(4, 3.5))
    ax.imshow(conf.to_numpy(), cmap="Blues")
    names = ["tiny", "medium", "jumbo"]
    ax.set_xticks(range(3), names)
    ax.set_yticks(range(3), names)
    for i in range(3):
        for j in range(3):
            ax.text(j, i, int(conf.iloc[i, j]), ha="center", va="center")
    ax.set_xlabel("predicted")
    ax.set_ylabel("label")
    fig.tight_layout()
    return fig


def train_packing(data: str | Path | None = None, *, labels: str = "solo", **params) -> TrainResult:
    """Lucid's packing tree, scored by leave-one-model-out cross-validation, then fitted on all rows."""
    from features.packing import FEATURES, packing_dataset
    from models.packing import PackingClassifier, leave_one_model_out
    from models.registry import data_fingerprint

    ds = packing_dataset(data, labels=labels)
    y, pred = leave_one_model_out(ds, **params)
    cls = scores.classification_scores(y, pred)
    from sklearn.model_selection import StratifiedKFold, cross_val_predict
    from sklearn.tree import DecisionTreeClassifier

    t0 = time.perf_counter()
    model = PackingClassifier(**params).fit(ds, ds["target"])
    secs = time.perf_counter() - t0
    random_split = cross_val_predict(DecisionTreeClassifier(ccp_alpha=model.alpha_, random_state=0),
                                     ds[list(FEATURES)].astype(float), ds["target"],
                                     cv=StratifiedKFold(5, shuffle=True, random_state=0))
    metrics = {"accuracy": cls["accuracy"], "macro_f1": cls["macro_f1"], "error_rate": 1 - cls["accuracy"],
               "random_split_accuracy": float((random_split == ds["target"].to_numpy()).mean()),
               "train_accuracy": float((model.predict(ds) == ds["target"].to_numpy()).mean()),
               "ccp_alpha": model.alpha_, "train_seconds": secs}
    plt = _fig()
    fig, ax = plt.subplots(figsize=(10, 6))
    from sklearn.tree import plot_tree

    plot_tree(model.model_, feature_names=list(FEATURES), filled=True, ax=ax, fontsize=8)
    fig.tight_layout()
    fp = data_fingerprint(None, ds[list(FEATURES) + ["target"]])
    return TrainResult("packing", "tree", model, metrics, {"labels": labels, **params}, fp,
                       ds[list(FEATURES)].head(10), {"confusion_lomo": confusion_figure(cls["confusion"]), "tree": fig},
                       list(FEATURES), train_seconds=secs, holdout=(ds, labels))


TASKS: dict[str, Callable[..., TrainResult]] = {
    "duration": train_duration, "iterations": train_iterations, "throughput": train_throughput,
    "demand": train_demand, "packing": train_packing,
}


def evaluate_on_holdout(task: str, predictor, holdout) -> dict[str, float]:
    """Score any model with the task's predict protocol (a schedcast estimator or a loaded pyfunc) on a
    holdout produced by the training function above, so champion and challenger see the same rows."""
    if task in ("duration", "iterations"):
        X, y = holdout
        return scores.duration_scores(y, np.asarray(predictor.predict(X), dtype=float))
    if task == "throughput":
        X, y = holdout
        return scores.regression_scores(y, np.asarray(predictor.predict(X), dtype=float))
    if task == "demand":
        demand, attrs, origins = holdout
        model = predictor
        m, _ = score_forecast(model, demand, attrs, origins, model.horizon)
        return m
    if task == "packing":
        ds, _ = holdout
        pred = np.asarray(predictor.predict(ds[["gpu_util", "gmem_util", "gmem", "amp"]]))
        acc = float((pred == ds["target"].to_numpy()).mean())
        return {"accuracy": acc, "error_rate": 1 - acc}
    raise ValueError(task)


def log_result(result: TrainResult, *, register: bool = True, alias: str | None = "challenger",
               tags: dict | None = None):
    """Log a TrainResult to MLflow (and register it under the task's name)."""
    from models.registry import log_estimator

    metrics = dict(result.metrics)
    for name, base in result.baselines.items():
        for k, v in base.items():
            metrics[f"baseline.{name}.{k}"] = v
    logged = log_estimator(result.estimator, kind=result.task, X_example=result.X_example, params=result.params,
                           metrics=metrics, fingerprint=result.fingerprint, figures=result.figures,
                           register_as=result.task if register else None, alias=alias if register else None,
                           columns=result.columns, extra=result.extra, tags=tags,
                           run_name=f"{result.task}-{result.algo}")
    import matplotlib.pyplot as plt

    for fig in result.figures.values():
        plt.close(fig)
    return logged
