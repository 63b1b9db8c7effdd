"""The training tasks (duration, iterations, throughput, demand, packing): one object per task holds
what differs between them (data loading, holdout, training, baselines, primary metric, units, plots).

:data:`TASKS` is the one registry of tasks (features.plugins; entry-point group ``schedcast.tasks``, whose
entries are Task subclasses or instances), so an installed package can add a task."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from evaluation import scores
from features.duration import duration_features
from features.jobtable import JobTable
from features.plugins import PluginError, Registry, new_registry
from models.tabular import make_duration_model, make_throughput_model

from pipelines.train_common import (DAY, DataSource, _as_source, _dataset_inputs, _dates, _fit_and_score,
                                    _table_dates, content_sha256, data_fingerprint_of, demand_windows,
                                    duration_split, first_jobs, make_forecaster, score_forecast, source_bytes,
                                    source_sha256, table_view)


# -- tasks -------------------------------------------------------------------------------------------
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
    lineage: dict[str, str] = field(default_factory=dict)  # source, sha256, rows, dates, split
    datasets: list = field(default_factory=list)  # models.registry.DatasetInput
    history: pd.DataFrame | None = None  # raw job history (duration / iterations) for raw-record serving

    @property
    def primary(self) -> float:
        return float(self.metrics[TASKS[self.task].primary])

    @property
    def holdout_rows(self) -> int:
        return TASKS[self.task].holdout_size(self.holdout)


class Task:
    """What one task needs: data loading, holdout, training, baselines, primary metric, units, plots."""

    name: ClassVar[str]
    #: The metric that decides "better" (lower is better for every task).
    primary: ClassVar[str]
    #: Default holdout at the end of the data, in days (None: the task has its own evaluation).
    holdout_days: ClassVar[float | None]
    #: Smallest holdout a retraining decision accepts (rows / steps / forecast origins / profiles).
    min_holdout: ClassVar[int]
    holdout_unit: ClassVar[str]
    #: Units of the metrics shown by the CLI (metrics not listed are logged but not printed).
    units: ClassVar[dict[str, str]]

    def load(self, source: DataSource) -> dict[str, Any]:
        """The inputs of :meth:`train` for ``source``, plus 'lineage' (source, sha256, rows, dates)."""
        raise NotImplementedError

    def train(self, data: dict[str, Any], *, algo: str, test_days: float | None, fast: bool = True,
              horizon: int | None = None, freq: str = "10min", **params) -> TrainResult:
        raise NotImplementedError

    def holdout(self, data: dict[str, Any], test_days: float | None = None, horizon: int | None = None,
                freq: str = "10min", labels: str = "solo"):
        raise NotImplementedError

    def evaluate(self, predictor, holdout) -> dict[str, float]:
        raise NotImplementedError

    def holdout_size(self, holdout) -> int:
        return int(len(holdout[0])) if holdout is not None else 0

    def data_sha256(self, data: dict[str, Any], labels: str = "solo") -> str:
        """The SHA-256 that lineage records for ``data`` as loaded by :meth:`load` (file or contents)."""
        raise NotImplementedError

    def days(self, test_days: float | None) -> float | None:
        return self.holdout_days if test_days is None else test_days


class DurationTask(Task):
    """Job duration from job features (QSSF LightGBM, Lucid GA2M, random forest)."""

    name, primary, holdout_days, min_holdout, holdout_unit = "duration", "log_mae", 30.0, 100, "jobs"
    units = {"log_mae": "log-s", "mae": "s", "rmse": "s", "spearman": "rank corr.", "r2": "", "unseen_share": "share"}

    def load(self, source: DataSource) -> dict[str, Any]:
        if source.kind == "synthetic":
            from features.traces.synthetic import generate_preset

            table = generate_preset(source.preset, seed=source.seed, jobs=source.jobs)
        else:
            from features.traces import load_trace

            table = load_trace(source.path, source.format)
            if source.jobs is not None:
                table = first_jobs(table, source.jobs)
        return {"table": table, "source": source}

    def split(self, frame: pd.DataFrame, test_days: float) -> tuple[np.ndarray, np.ndarray]:
        return duration_split(frame, test_days)

    def data_sha256(self, data, labels="solo"):
        return source_sha256(data.get("source"), table_view(data["table"]))

    def lineage(self, table: JobTable, source: DataSource | None, train: np.ndarray,
                test_days: float) -> dict[str, str]:
        view = table_view(table)
        start, end = _table_dates(table.frame)
        tr_start, tr_end = _table_dates(table.frame, train)
        ho_start, ho_end = _table_dates(table.frame, ~train)
        return {"source": source.to_json() if source else "", "source_desc": source.describe() if source else "",
                "sha256": source_sha256(source, view), "source_bytes": source_bytes(source),
                "content_sha256": content_sha256(view),
                "rows": str(len(view)), "start": start, "end": end, "train_start": tr_start, "train_end": tr_end,
                "holdout_start": ho_start, "holdout_end": ho_end, "test_days": f"{test_days:g}",
                "holdout_rows": str(int((~train).sum()))}

    def features(self, table: JobTable) -> pd.DataFrame:
        X = duration_features(table)
        return X.loc[:, X.notna().any()]

    def _prepare(self, data, test_days):
        """Table, source, holdout days, frame, features, durations and the time split, checked."""
        table, source = data["table"], _as_source(data.get("source"), "trace")
        test_days = self.days(test_days)
        frame = table.frame
        X = self.features(table)
        y = frame[self.target(frame)].to_numpy(dtype=float)
        train, test = self.split(frame, test_days)
        if train.sum() < 10 or test.sum() < 1:
            raise ValueError(f"not enough jobs for a {test_days:g}-day holdout ({train.sum()} train, "
                             f"{test.sum()} test)")
        return table, source, test_days, frame, X, y, train, test

    def train(self, data, *, algo="lightgbm", test_days=None, fast=True, horizon=None, freq="10min", **params):
        from evaluation import plots

        table, source, test_days, frame, X, y, train, test = self._prepare(data, test_days)
        model = make_duration_model(algo, fast, **params)
        pred, metrics, secs = _fit_and_score(model, X, y, train, test, scores.duration_scores)
        med = np.median(y[train])
        base = {"median": scores.duration_scores(y[test], np.full(test.sum(), med))}
        if "hist_group_roll_mean" in X:
            fallback = X["hist_group_roll_mean"].fillna(med).to_numpy()[test]
            base["group_history"] = scores.duration_scores(y[test], fallback)
        figures = {"importances": plots.importance_figure(model.importances(), f"{algo} duration: importance",
                                                          plots.importance_measure(model)),
                   "predicted_vs_actual": plots.prediction_figure(y[test], pred, f"{algo} duration on the holdout")}
        if algo == "ebm":
            for feat, unit in (("num_gpus", "GPUs"), ("hour", "hour of day")):
                if feat in X:
                    figures[f"shape_{feat}"] = plots.shape_figure(model, feat, "s", unit)
            figures["local_explanation"] = plots.local_explanation_figure(
                model, X[test].head(1), "one duration prediction", actual=float(y[test][0]),
                job=str(frame["job_id"].to_numpy()[test][0]) if "job_id" in frame else None)
        fp = data_fingerprint_of(source, frame[["submit_time", "duration", "num_gpus"]])
        lineage = self.lineage(table, source, train, test_days)
        return TrainResult(self.name, algo, model, metrics, {"algo": algo, "test_days": test_days, "fast": fast,
                           **params}, fp, X[test].head(20), figures, list(X.columns), train_seconds=secs,
                           baselines=base, holdout=(X[test], y[test]), lineage=lineage,
                           datasets=_dataset_inputs(self.name, table_view(table), train, source, lineage),
                           history=frame)

    def target(self, frame: pd.DataFrame) -> str:
        """The column the model learns: durations (s)."""
        return "duration"

    def holdout(self, data, test_days=None, horizon=None, freq="10min", labels="solo"):
        table = data["table"]
        _, test = self.split(table.frame, self.days(test_days))
        target = table.frame[self.target(table.frame)].to_numpy(dtype=float)
        return self.features_for_holdout(table)[test], target[test]

    def features_for_holdout(self, table: JobTable) -> pd.DataFrame:
        return duration_features(table)

    def evaluate(self, predictor, holdout):
        X, y = holdout
        return scores.duration_scores(y, np.asarray(predictor.predict(X), dtype=float))


class IterationsTask(DurationTask):
    """A-SRPT's random forest on (group id, user); unseen groups -> 0 (paper) or the fallback."""

    name, primary, holdout_days, min_holdout, holdout_unit = "iterations", "log_mae", 30.0, 100, "jobs"

    def features(self, table: JobTable) -> pd.DataFrame:
        return duration_features(table)[["group_id", "user"]]

    def target(self, frame: pd.DataFrame) -> str:
        """Iterations where the trace has them (A-SRPT predicts iterations; PAI-shaped traces carry the
        column), else durations — recorded as the run's ``target`` parameter, which predict_kind reads."""
        if "iterations" in frame and pd.to_numeric(frame["iterations"], errors="coerce").notna().all():
            return "iterations"
        return "duration"

    def train(self, data, *, algo="zero", test_days=None, fast=True, horizon=None, freq="10min", **params):
        from evaluation import plots
        from models.tabular import IterationForest

        table, source, test_days, frame, X, y, train, test = self._prepare(data, test_days)
        model = IterationForest(unseen=algo, **params)
        pred, metrics, secs = _fit_and_score(model, X, y, train, test, scores.duration_scores)
        metrics["unseen_share"] = float((~X[test]["group_id"].isin(model.groups_)).mean())
        med = float(np.median(y[train]))
        group_median = pd.Series(y[train]).groupby(X[train]["group_id"].to_numpy()).median()
        by_group = X[test]["group_id"].map(group_median).fillna(med).to_numpy(dtype=float)
        base = {"median": scores.duration_scores(y[test], np.full(test.sum(), med)),
                "group_median": scores.duration_scores(y[test], by_group)}
        figures = {"importances": plots.importance_figure(model.importances(), f"A-SRPT RF ({algo}): importance",
                                                          plots.importance_measure(model)),
                   "predicted_vs_actual": plots.prediction_figure(y[test], pred, f"A-SRPT RF ({algo}) on the holdout")}
        fp = data_fingerprint_of(source, frame[["submit_time", "duration", "num_gpus"]])
        lineage = self.lineage(table, source, train, test_days)
        return TrainResult(self.name, f"rf-{algo}", model, metrics, {"unseen": algo, "test_days": test_days,
                           "target": self.target(frame), **params}, fp, X[test].head(20), figures, list(X.columns), train_seconds=secs,
                           baselines=base, holdout=(X[test], y[test]), lineage=lineage,
                           datasets=_dataset_inputs(self.name, table_view(table), train, source, lineage),
                           history=frame)

    def features_for_holdout(self, table: JobTable) -> pd.DataFrame:
        return self.features(table)


class ThroughputTask(Task):
    """Lucid's throughput predictor on the 10-minute series; scored against the naive last value."""

    name, primary, holdout_days, min_holdout, holdout_unit = "throughput", "mae", 31.0, 144, "10-min steps"
    units = {"mae": "jobs/10 min", "rmse": "jobs/10 min", "r2": ""}

    def load(self, source: DataSource) -> dict[str, Any]:
        from features.series import VENUS_THROUGHPUT, load_throughput
        from features.paths import resolve_data_path

        path = source.path or str(resolve_data_path(VENUS_THROUGHPUT, source.data_dir))
        return {"series": load_throughput(path), "source": DataSource("series", path=path)}

    def data_sha256(self, data, labels="solo"):
        return source_sha256(data.get("source"), data["series"])

    def train(self, data, *, algo="blend-last", test_days=None, fast=True, horizon=None, freq="10min",
              target: str = "submit_gpu_job", **params):
        from evaluation import plots
        from features.series import throughput_features, time_split

        series, source = data["series"], _as_source(data.get("source"), "series")
        test_days, horizon = self.days(test_days), horizon or 1
        X, y = throughput_features(series, target=target, horizon=horizon)
        train, test = time_split(X.index, test_days=test_days)
        model = make_throughput_model(algo, fast, **params)
        pred, metrics, secs = _fit_and_score(model, X, y, train, test, scores.regression_scores)
        base = {"last_value": scores.regression_scores(y[test], X[test]["lag_0"]),
                "seasonal_day": scores.regression_scores(y[test], X[test]["lag_1d"])}
        figures = {"predicted_vs_actual": plots.prediction_figure(y[test], pred, f"{algo} throughput on the holdout",
                                                                  "GPU jobs / 10 min", log=False)}
        if hasattr(model, "importances"):  # a blend with the last value has none of its own
            figures["importances"] = plots.importance_figure(model.importances(), f"{algo} throughput: importance",
                                                             plots.importance_measure(model))
        if algo == "ebm":
            figures["shape_hour"] = plots.shape_figure(model, "hour", "GPU jobs / 10 min", "hour of day")
        fp = data_fingerprint_of(source, series)
        lineage = {"source": source.to_json() if source else "", "source_desc": source.describe() if source else "",
                   "sha256": source_sha256(source, series), "source_bytes": source_bytes(source),
                   "content_sha256": content_sha256(series),
                   "rows": str(len(series)), **_split_dates(series.index, X.index, train),
                   "test_days": f"{test_days:g}", "holdout_rows": str(int(test.sum()))}
        return TrainResult(self.name, algo, model, metrics, {"algo": algo, "target": target, "horizon": horizon,
                           "test_days": test_days, "fast": fast, **params}, fp, X[test].head(20), figures,
                           list(X.columns), train_seconds=secs, baselines=base, holdout=(X[test], y[test]),
                           lineage=lineage, datasets=_dataset_inputs(self.name, series, series.index <= X.index[train].max(),
                                                                     source, lineage))

    def holdout(self, data, test_days=None, horizon=None, freq="10min", labels="solo"):
        from features.series import throughput_features, time_split

        X, y = throughput_features(data["series"], horizon=horizon or 1)
        _, test = time_split(X.index, test_days=self.days(test_days))
        return X[test], y[test].to_numpy()

    def evaluate(self, predictor, holdout):
        X, y = holdout
        return scores.regression_scores(y, np.asarray(predictor.predict(X), dtype=float))


def _split_dates(full: pd.Index, rows: pd.Index, train: np.ndarray) -> dict[str, str]:
    start, end = _dates(full)
    tr = rows[np.asarray(train)]
    ho = rows[~np.asarray(train)]
    return {"start": start, "end": end, "train_start": _dates(tr)[0], "train_end": _dates(tr)[1],
            "holdout_start": _dates(ho)[0], "holdout_end": _dates(ho)[1]}


class DemandTask(Task):
    """Per-org demand forecaster: trained before the last ``test_days``, scored on rolling origins every
    ``horizon`` steps over the holdout."""

    name, primary, holdout_days, min_holdout, holdout_unit = "demand", "ql_0.9", 7.0, 4, "forecast origins"
    units = {"ql_0.9": "GPUs", "ql_0.95": "GPUs", "mae": "GPUs", "crps": "GPUs", "coverage_0.9": "share",
             "coverage_0.95": "share"}

    def load(self, source: DataSource) -> dict[str, Any]:
        from features.paths import resolve_data_path
        from features.series import EARTH_VC, load_demand

        path = source.path or str(resolve_data_path(EARTH_VC, source.data_dir))
        freq = source.freq or "10min"
        demand, attrs = load_demand(path, source.data_dir, freq=freq)
        return {"demand": demand, "attrs": attrs,
                "source": DataSource("series", path=path, freq=freq, data_dir=source.data_dir)}

    def data_sha256(self, data, labels="solo"):
        return source_sha256(data.get("source"), data["demand"])

    def train(self, data, *, algo="orglinear", test_days=None, fast=True, horizon=None, freq="10min",
              lookback: int | None = None, **params):
        from evaluation import plots
        from models.forecast import origins_for

        demand, attrs, source = data["demand"], data.get("attrs"), _as_source(data.get("source"), "series")
        test_days = self.days(test_days)
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
        base = {}  # the two model-free forecasts (GFS's previous-week peak is GFS-E)
        for name in ("seasonal-naive", "gfs-e"):
            if algo != name:
                ref = make_forecaster(name, lookback, horizon, freq).fit(train, attrs)
                base[name.replace("-", "_")], _ = score_forecast(ref, demand, attrs, origins, horizon)
        fp = data_fingerprint_of(source, demand)
        needed = getattr(model, "lookback", lookback)
        history = demand.iloc[-needed:].rename_axis("time").reset_index().melt(id_vars="time", var_name="org",
                                                                              value_name="demand")
        extra = {"orgs": list(demand.columns), "freq": freq, "attrs": attrs.to_dict() if attrs is not None else None}
        mask = demand.index <= cut
        lineage = {"source": source.to_json() if source else "", "source_desc": source.describe() if source else "",
                   "sha256": source_sha256(source, demand), "source_bytes": source_bytes(source),
                   "content_sha256": content_sha256(demand),
                   "rows": str(len(demand)), **_split_dates(demand.index, demand.index, mask),
                   "test_days": f"{test_days:g}", "holdout_rows": str(len(origins))}
        return TrainResult(self.name, algo, model, metrics, {"algo": algo, "freq": freq, "lookback": lookback,
                           "horizon": horizon, "test_days": test_days, **params}, fp, history,
                           {"fan_chart": plots.fan_figure(fc, y, freq=freq)}, None, extra, secs, baselines=base,
                           holdout=(demand, attrs, origins), lineage=lineage,
                           datasets=_dataset_inputs(self.name, demand, mask, source, lineage))

    def holdout(self, data, test_days=None, horizon=None, freq="10min", labels="solo"):
        _, origins, _, _ = demand_windows(data["demand"], freq, horizon, self.days(test_days))
        return data["demand"], data["attrs"], origins

    def evaluate(self, predictor, holdout):
        demand, attrs, origins = holdout
        m, _ = score_forecast(predictor, demand, attrs, origins, predictor.horizon)
        return m

    def holdout_size(self, holdout) -> int:
        return len(holdout[2]) if holdout is not None else 0


class PackingTask(Task):
    """Lucid's packing tree, scored by leave-one-model-out cross-validation, then fitted on all rows.
    `schedcast evaluate packing` scores a fitted tree on the profiled rows (in-sample): a tree cannot be
    re-scored out of sample without refitting it."""

    name, primary, holdout_days, min_holdout, holdout_unit = "packing", "error_rate", None, 30, "profiles"
    units = {"error_rate": "share", "accuracy": "share", "macro_f1": "", "random_split_accuracy": "share",
             "train_accuracy": "share"}

    def load(self, source: DataSource) -> dict[str, Any]:
        return {"data_dir": source.path, "source": source}

    def data_sha256(self, data, labels="solo"):
        from features.packing import FEATURES, packing_dataset

        return content_sha256(packing_dataset(data.get("data_dir"), labels=labels)[list(FEATURES) + ["target"]])

    def train(self, data, *, algo="solo", test_days=None, fast=True, horizon=None, freq="10min", **params):
        from sklearn.model_selection import StratifiedKFold, cross_val_predict
        from sklearn.tree import DecisionTreeClassifier

        from evaluation import plots
        from features.packing import FEATURES, packing_dataset
        from models.packing import PackingClassifier, leave_one_model_out

        labels, source = algo, _as_source(data.get("source"), "packing")
        ds = packing_dataset(data.get("data_dir"), labels=labels)
        y, pred = leave_one_model_out(ds, **params)
        cls = scores.classification_scores(y, pred)
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
        majority = float(pd.Series(y).value_counts(normalize=True).iloc[0])
        base = {"majority_class": {"accuracy": majority, "error_rate": 1 - majority}}
        figures = {"confusion_lomo": plots.confusion_figure(cls["confusion"]),
                   "tree": plots.tree_figure(model.model_, FEATURES, model.classes_)}
        view = ds[list(FEATURES) + ["target"]]
        fp = data_fingerprint_of(None, view)
        sha = content_sha256(view)
        lineage = {"source": source.to_json() if source else "", "source_desc": source.describe() if source else "",
                   "sha256": sha, "content_sha256": sha, "rows": str(len(ds)), "labels": labels,
                   "split": "leave-one-model-out", "holdout_rows": str(len(ds))}
        return TrainResult(self.name, "tree", model, metrics, {"labels": labels, **params}, fp,
                           ds[list(FEATURES)].head(10), figures, list(FEATURES), train_seconds=secs, baselines=base,
                           holdout=(ds, labels), lineage=lineage,
                           datasets=_dataset_inputs(self.name, view, np.ones(len(view), bool), source, lineage)[:1])

    def holdout(self, data, test_days=None, horizon=None, freq="10min", labels="solo"):
        from features.packing import packing_dataset

        return packing_dataset(data.get("data_dir"), labels=labels), labels

    def evaluate(self, predictor, holdout):
        ds, _ = holdout
        pred = np.asarray(predictor.predict(ds[["gpu_util", "gmem_util", "gmem", "amp"]]))
        acc = float((pred == ds["target"].to_numpy()).mean())
        return {"accuracy": acc, "error_rate": 1 - acc}


def _as_task(name: str, entry: Any) -> "Task":
    """What the registry stores: a Task instance (a Task subclass, e.g. an entry point's, is instantiated)."""
    if isinstance(entry, type) and issubclass(entry, Task):
        entry = entry()
    if not isinstance(entry, Task):
        raise PluginError(f"task {name!r} must be a pipelines.train_tasks.Task subclass or instance, not {entry!r}")
    return entry


_BUILTIN = (DurationTask(), IterationsTask(), ThroughputTask(), DemandTask(), PackingTask())
#: name -> Task: the one registry of training tasks.
TASKS: Registry[Task] = new_registry("tasks", noun="task", adapt=_as_task)
for _task in _BUILTIN:
    TASKS.register(_task.name, _task)
#: Which metric decides "better" per built-in task (lower is better for all of them).
PRIMARY_METRIC = {t.name: t.primary for t in _BUILTIN}
#: Default holdout at the end of each built-in task's data, in days.
HOLDOUT_DAYS = {t.name: t.holdout_days for t in _BUILTIN if t.holdout_days is not None}
#: Smallest holdout a retraining decision accepts, per built-in task (see Task.min_holdout / holdout_unit).
MIN_HOLDOUT = {t.name: t.min_holdout for t in _BUILTIN}
