"""Training entry points: data -> features -> time-based split -> fit -> scores -> MLflow run + registry.

One task object per task (:data:`TASKS`: duration, iterations, throughput, demand, packing) holds what
differs between tasks: how its data is loaded from a :class:`DataSource` (and so reloaded for a
retraining comparison), its holdout, how it trains, its baselines, its primary metric, units and plots
(drawn by :mod:`evaluation.plots`). Every task trains on the data before a holdout window at the end of
the data (relative to the data's own end, never fixed dates) and scores on the holdout.
``TrainResult`` carries what the CLI prints, what MLflow logs (including the data lineage) and what
retraining compares. ``schedcast evaluate`` rebuilds the same holdout with :func:`holdout` and scores
with :func:`evaluate_on_holdout`, so it reproduces the training run's holdout scores.

The module-level ``train_duration`` ... ``train_packing``, ``holdout``, ``evaluate_on_holdout``,
``make_forecaster`` and ``log_result`` are the stable API (benchmarks import them).
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar

import numpy as np
import pandas as pd

from evaluation import scores
from features.duration import duration_features
from features.jobtable import JobTable
from models.tabular import make_duration_model, make_throughput_model  # noqa: F401  (re-exported)

DAY = 86400.0


# -- data sources and lineage ------------------------------------------------------------------------
@dataclass
class DataSource:
    """Where a task's data comes from, recorded with every run so the data can be reloaded and checked
    (its SHA-256) when a later retraining compares against the model.

    kind: 'trace' (path, format, jobs = first N jobs by submission), 'synthetic' (preset, seed, jobs),
    'series' (a throughput / demand file; freq for demand), 'packing' (the profiling data directory).
    """
    kind: str
    path: str | None = None
    format: str | None = None
    preset: str | None = None
    seed: int = 0
    jobs: int | None = None
    freq: str | None = None
    data_dir: str | None = None  # demand: where the per-VC daily quota file is looked up

    def to_json(self) -> str:
        return json.dumps({k: v for k, v in asdict(self).items() if v is not None}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "DataSource":
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in json.loads(text).items() if k in known})

    def describe(self) -> str:
        if self.kind == "synthetic":
            return f"synthetic:{self.preset} (seed {self.seed}" + (f", {self.jobs} jobs)" if self.jobs else ")")
        if self.kind == "packing":
            return f"packing profiles in {self.path or 'the data directory'}"
        name = Path(self.path).name if self.path else "?"
        return name + (f" (first {self.jobs} jobs)" if self.jobs else "")

    def same_origin(self, other: "DataSource") -> bool:
        """Same file / preset (the data may have grown since): the same lineage."""
        if self.kind != other.kind:
            return False
        if self.kind == "synthetic":
            return (self.preset, self.seed) == (other.preset, other.seed)
        a, b = self.path, other.path
        return bool(a and b and Path(a).resolve() == Path(b).resolve())


def _stamp(v) -> str:
    return pd.Timestamp(v).strftime("%Y-%m-%d %H:%M") if isinstance(v, (pd.Timestamp, np.datetime64)) else str(v)


def _dates(values) -> tuple[str, str]:
    s = pd.Series(values).dropna()
    return (_stamp(s.min()), _stamp(s.max())) if len(s) else ("", "")


def _table_dates(frame: pd.DataFrame, mask: np.ndarray | None = None) -> tuple[str, str]:
    f = frame if mask is None else frame[mask]
    if "submit_ts" in f and f["submit_ts"].notna().any():
        return _dates(f["submit_ts"])
    if not len(f):
        return "", ""
    t = f["submit_time"].to_numpy(dtype=float)
    return f"{t.min():.0f} s", f"{t.max():.0f} s"


TABLE_LINEAGE_COLUMNS = ("submit_time", "submit_ts", "duration", "num_gpus", "num_nodes", "user", "org",
                         "job_name", "group_id")


def table_view(table: JobTable) -> pd.DataFrame:
    """The columns of a job table that a dataset input shows (its own fields, no engineered features)."""
    return table.frame[[c for c in TABLE_LINEAGE_COLUMNS if c in table.frame]]


def content_sha256(frame: pd.DataFrame) -> str:
    from models.registry import frame_fingerprint

    return frame_fingerprint(frame)


def source_sha256(source: "DataSource | str | Path | None", frame: pd.DataFrame) -> str:
    """SHA-256 of the source file when there is one, else of the data's contents."""
    from models.registry import file_fingerprint

    path = source.path if isinstance(source, DataSource) else source
    if path is not None and Path(path).is_file():
        return file_fingerprint(path)
    return content_sha256(frame)


def source_bytes(source: "DataSource | str | Path | None") -> str:
    """Size in bytes of the source file when there is one (recorded so that a later retraining can check
    that the champion's file is a prefix of the challenger's), else ''."""
    path = source.path if isinstance(source, DataSource) else source
    try:
        return str(Path(path).stat().st_size) if path is not None and Path(path).is_file() else ""
    except OSError:
        return ""


def _prefix_sha256(path: str | Path, size: int) -> str | None:
    """SHA-256 of the first ``size`` bytes of ``path`` (None when it is shorter or unreadable)."""
    import hashlib

    h, left = hashlib.sha256(), size
    try:
        with open(path, "rb") as fh:
            while left > 0:
                chunk = fh.read(min(left, 1 << 20))
                if not chunk:
                    return None
                h.update(chunk)
                left -= len(chunk)
    except OSError:
        return None
    return h.hexdigest()


def extends(champion: dict[str, str], result: "TrainResult") -> str | None:
    """How the challenger's data extends the champion's, judged by content, never by path: ``'file'`` when
    the champion's source file (its recorded size and SHA-256) is a byte prefix of the challenger's file
    (rows appended to a CSV); ``'rows'`` when the champion's rows (their content SHA-256) are the first rows
    of the challenger's job table (a re-compressed or re-exported trace that grew); None otherwise, e.g.
    a trace rewritten in place with other durations."""
    new = result.lineage
    src = DataSource.from_json(new["source"]) if new.get("source") else None
    size = champion.get("source_bytes", "")
    if src is not None and src.path and size.isdigit() and champion.get("sha256"):
        if _prefix_sha256(src.path, int(size)) == champion["sha256"]:
            return "file"
    rows = champion.get("rows", "")
    if result.history is not None and rows.isdigit() and champion.get("content_sha256"):
        frame = result.history
        view = frame[[c for c in TABLE_LINEAGE_COLUMNS if c in frame]]
        if 0 < int(rows) <= len(view) and content_sha256(view.iloc[: int(rows)]) == champion["content_sha256"]:
            return "rows"
    return None


def check_params(task: str, algo: str, fast: bool, params: dict[str, Any]) -> None:
    """Refuse hyper-parameters the task's estimator does not take, before any data is loaded: one line
    naming the parameter and the ones that exist (ValueError: exit 2)."""
    if not params:
        return
    import inspect

    try:
        if task == "duration":
            make_duration_model(algo, fast, **params)
        elif task == "iterations":
            from models.tabular import IterationForest

            IterationForest(unseen=algo, **params)
        elif task == "throughput":
            make_throughput_model(algo, fast, **{k: v for k, v in params.items() if k != "target"})
        elif task == "packing":
            from models.packing import PackingClassifier

            PackingClassifier(**params)
        elif task == "demand":
            make_forecaster(algo, params.get("lookback") or 1, 1, "10min",
                            **{k: v for k, v in params.items() if k != "lookback"})
    except TypeError as exc:
        import re

        m = re.search(r"(\w+)\.__init__\(\) got an unexpected keyword argument '(\w+)'", str(exc))
        if m is None:
            raise ValueError(f"--param: the {task} model ({algo}) rejects {params}: {exc}") from None
        known = ""
        import models.forecast as forecast
        import models.packing as packing
        import models.tabular as tabular

        for module in (tabular, packing, forecast):
            cls = getattr(module, m.group(1), None)
            if cls is not None:
                names = [n for n, p in inspect.signature(cls.__init__).parameters.items()
                         if n != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
                known = f"; it takes {', '.join(names)}" if names else ""
                break
        raise ValueError(f"--param {m.group(2)}: not a hyper-parameter of the {task} model ({algo}, "
                         f"{m.group(1)}){known}") from None


def _as_source(source, kind: str) -> DataSource | None:
    if source is None or isinstance(source, DataSource):
        return source
    return DataSource(kind, path=str(source))


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


def _dataset_inputs(name: str, frame: pd.DataFrame, train_mask, source: DataSource | None,
                    lineage: dict[str, str]):
    """Two dataset inputs (contexts 'training' and 'holdout') with the lineage as tags."""
    from models.registry import DatasetInput

    path = source.path if source is not None else None
    train_mask = np.asarray(train_mask, dtype=bool)
    return [DatasetInput(frame[train_mask], name=f"{name}-train", context="training", source=path, tags=lineage),
            DatasetInput(frame[~train_mask], name=f"{name}-holdout", context="holdout", source=path, tags=lineage)]


def _fit_and_score(model, X: pd.DataFrame, y, train, test, score: Callable) -> tuple[np.ndarray, dict, float]:
    """Fit on the training rows (timed), predict the holdout and score it: (predictions, metrics, seconds)."""
    t0 = time.perf_counter()
    model.fit(X[train], y[train])
    secs = time.perf_counter() - t0
    pred = model.predict(X[test])
    return pred, {**score(y[test], pred), "train_seconds": secs}, secs


# -- tasks -------------------------------------------------------------------------------------------
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


TASKS: dict[str, Task] = {t.name: t for t in (DurationTask(), IterationsTask(), ThroughputTask(), DemandTask(),
                                                PackingTask())}
#: Which metric decides "better" per task (lower is better for all of them).
PRIMARY_METRIC = {name: t.primary for name, t in TASKS.items()}
#: Default holdout at the end of each task's data, in days.
HOLDOUT_DAYS = {name: t.holdout_days for name, t in TASKS.items() if t.holdout_days is not None}
#: Smallest holdout a retraining decision accepts, per task (see Task.min_holdout / holdout_unit).
MIN_HOLDOUT = {name: t.min_holdout for name, t in TASKS.items()}


def first_jobs(table: JobTable, n: int) -> JobTable:
    """The first ``n`` jobs by submission (``--jobs`` for traces), as a JobTable."""
    if isinstance(n, bool) or int(n) < 1:
        raise ValueError(f"--jobs must be a whole number >= 1, got {n!r}")
    frame = table.frame.sort_values("submit_time", kind="stable").iloc[: int(n)].reset_index(drop=True)
    return JobTable(frame, table.report)


def data_fingerprint_of(source: DataSource | None, frame: pd.DataFrame) -> dict[str, Any]:
    from models.registry import data_fingerprint

    return data_fingerprint(source.path if source is not None else None, frame)


# -- the stable module-level API ---------------------------------------------------------------------
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
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}")
    return TASKS[task].holdout(data, test_days, horizon, freq, labels)


def duration_split(frame: pd.DataFrame, test_days: float) -> tuple[np.ndarray, np.ndarray]:
    t = frame["submit_time"].to_numpy(dtype=float)
    test = t > t.max() - test_days * DAY
    return ~test, test


def train_duration(table: JobTable, *, algo: str = "lightgbm", test_days: float = 30.0, fast: bool = True,
                   source: str | Path | DataSource | None = None, **params) -> TrainResult:
    """Duration model on job features (QSSF LightGBM, Lucid GA2M, RF baseline). Scores on the jobs
    submitted in the last ``test_days``; the baselines are the training median and each job's
    rolling mean of its group's past durations."""
    return TASKS["duration"].train({"table": table, "source": source}, algo=algo, test_days=test_days, fast=fast,
                                   **params)


def train_iterations(table: JobTable, *, unseen: str = "zero", test_days: float = 30.0,
                     source: str | Path | DataSource | None = None, **params) -> TrainResult:
    """A-SRPT's random forest on (group id, user); unseen groups -> 0 (paper) or the fallback. Baselines:
    the training median and each group's training median."""
    return TASKS["iterations"].train({"table": table, "source": source}, algo=unseen, test_days=test_days,
                                     **params)


def train_throughput(series: pd.DataFrame, *, algo: str = "blend-last", target: str = "submit_gpu_job", horizon: int = 1,
                     test_days: float = 31.0, fast: bool = True, source: str | Path | DataSource | None = None,
                     **params) -> TrainResult:
    """Lucid's throughput predictor on the 10-minute series; scored against the naive last value."""
    return TASKS["throughput"].train({"series": series, "source": source}, algo=algo, test_days=test_days,
                                     fast=fast, horizon=horizon, target=target, **params)


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


def train_demand(demand: pd.DataFrame, attrs: pd.DataFrame, *, algo: str = "orglinear", freq: str = "10min",
                 lookback: int | None = None, horizon: int | None = None, test_days: float = 7.0,
                 source: str | Path | DataSource | None = None, **params) -> TrainResult:
    """Per-org demand forecaster: trained before the last ``test_days``, scored on rolling origins
    every ``horizon`` steps over the holdout; baseline: the seasonal-naive forecast."""
    return TASKS["demand"].train({"demand": demand, "attrs": attrs, "source": source}, algo=algo,
                                 test_days=test_days, horizon=horizon, freq=freq, lookback=lookback, **params)


def train_packing(data: str | Path | None = None, *, labels: str = "solo", **params) -> TrainResult:
    """Lucid's packing tree, scored by leave-one-model-out cross-validation, then fitted on all rows."""
    return TASKS["packing"].train({"data_dir": data, "source": DataSource("packing", path=str(data) if data else None)},
                                  algo=labels, **params)


def evaluate_on_holdout(task: str, predictor, holdout) -> dict[str, float]:
    """Score any model with the task's predict protocol (a schedcast estimator or a loaded pyfunc) on a
    holdout produced by the training function above, so champion and challenger see the same rows."""
    if task not in TASKS:
        raise ValueError(task)
    return TASKS[task].evaluate(predictor, holdout)


# -- logging -----------------------------------------------------------------------------------------
def best_baseline(result: TrainResult) -> tuple[str, float] | None:
    """The baseline with the lowest primary metric (name, value), if any baseline has it."""
    metric = TASKS[result.task].primary
    found = [(name, float(b[metric])) for name, b in result.baselines.items()
             if metric in b and b[metric] is not None and np.isfinite(b[metric])]
    return min(found, key=lambda x: x[1]) if found else None


def describe(result: TrainResult) -> str:
    """The model version's description: what, on which data, how well against the baselines."""
    task = TASKS[result.task]
    lin = result.lineage
    text = (f"{result.task} model ({result.algo}) trained on {lin.get('source_desc') or 'in-memory data'}"
            f" ({lin.get('rows', '?')} rows, {lin.get('start', '')} .. {lin.get('end', '')}; sha256 "
            f"{lin.get('sha256', '')[:12]}...). Holdout: {lin.get('holdout_rows', '?')} {task.holdout_unit}"
            + (f" from {lin['holdout_start']}" if lin.get("holdout_start") else "")
            + f". {task.primary} = {result.primary:.4g} {task.units.get(task.primary, '')}".rstrip())
    base = best_baseline(result)
    if base:
        text += f" vs baseline {base[0]} {base[1]:.4g}"
    return text + "."


def log_result(result: TrainResult, *, register: bool = True, alias: str | None = "challenger",
               tags: dict | None = None, champion_if_none: bool = False, serving: bool = True):
    """Log a TrainResult to MLflow (and register it under the task's name) with its dataset inputs,
    description and version tags (algorithm, data, code version, primary metric and best baseline).
    Duration / iterations models are logged with models.serving's raw-record pyfunc when available."""
    from evaluation import plots
    from models.registry import log_estimator

    task = TASKS[result.task]
    metrics = dict(result.metrics)
    for name, base in result.baselines.items():
        for k, v in base.items():
            metrics[f"baseline.{name}.{k}"] = v
    lin = result.lineage
    run_tags = {f"schedcast.data.{k}": v for k, v in lin.items() if v not in (None, "")}
    run_tags.update({"schedcast.algorithm": result.algo, "schedcast.primary_metric": task.primary, **(tags or {})})
    # rows and date range stay on the run (schedcast.data.*): the version keeps what identifies it
    version_tags = {"algorithm": result.algo, "primary_metric": task.primary,
                    "data": lin.get("source_desc", ""), "data.sha256": lin.get("sha256", "")}
    base = best_baseline(result)
    if base:
        version_tags["best_baseline"] = f"{base[0]} {base[1]:.4g}"
    serving_kw = _serving_model(result) if serving else {}
    logged = log_estimator(result.estimator, kind=result.task, X_example=result.X_example, params=result.params,
                           metrics=metrics, fingerprint=result.fingerprint, figures=result.figures,
                           register_as=result.task if register else None, alias=alias if register else None,
                           columns=result.columns, extra=result.extra, tags=run_tags,
                           run_name=f"{result.task}-{result.algo}", datasets=result.datasets,
                           description=describe(result), version_tags=version_tags,
                           champion_if_none=champion_if_none, **serving_kw)
    plots.close(result.figures)
    return logged


def _serving_model(result: TrainResult) -> dict[str, Any]:
    """python_model / input_example / signature of models.serving's raw-record pyfunc for duration and
    iterations (a scheduler sends raw job records); {} when it is not available."""
    if result.task not in ("duration", "iterations") or result.history is None:
        return {}
    try:
        from models.serving import raw_record_model
    except ImportError:
        return {}
    model, example = raw_record_model(result.task, result.estimator, result.history)
    return {"python_model": model, "input_example": example, "signature": getattr(model, "signature", None)}
