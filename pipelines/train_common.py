"""What every training task shares: data sources and their lineage (SHA-256, rows, dates), the
result of a training run, the time-based splits and the forecasting helpers (pipelines.train re-exports
all of it; the tasks are in pipelines.train_tasks)."""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from evaluation import scores
from features.jobtable import JobTable
from models.tabular import make_duration_model, make_throughput_model

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

    if task == "duration":  # a value of another type than the default's (num_leaves=abc): refused here,
        defaults = getattr(make_duration_model(algo, fast), "get_params", dict)()  # not in fit after loading
        for key, value in params.items():
            default = defaults.get(key)
            if default is None or key not in defaults:
                continue
            number = isinstance(default, (int, float)) and not isinstance(default, bool)
            if (number and (isinstance(value, bool) or not isinstance(value, (int, float)))) or \
                    (isinstance(default, bool) and not isinstance(value, bool)) or \
                    (isinstance(default, str) and not isinstance(value, str)):
                raise ValueError(f"--param {key}={value!r}: the {task} model ({algo}) takes a "
                                 f"value of type {type(default).__name__} for {key} (default {default!r})")
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




def first_jobs(table: JobTable, n: int) -> JobTable:
    """The first ``n`` jobs by submission (``--jobs`` for traces), as a JobTable."""
    if isinstance(n, bool) or int(n) < 1:
        raise ValueError(f"--jobs must be a whole number >= 1, got {n!r}")
    frame = table.frame.sort_values("submit_time", kind="stable").iloc[: int(n)].reset_index(drop=True)
    return JobTable(frame, table.report)


def data_fingerprint_of(source: DataSource | None, frame: pd.DataFrame) -> dict[str, Any]:
    from models.registry import data_fingerprint

    return data_fingerprint(source.path if source is not None else None, frame)


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


def duration_split(frame: pd.DataFrame, test_days: float) -> tuple[np.ndarray, np.ndarray]:
    t = frame["submit_time"].to_numpy(dtype=float)
    test = t > t.max() - test_days * DAY
    return ~test, test


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
    from models.forecast_zoo import GLUONTS_MODELS, GluonTSForecaster

    if algo in GLUONTS_MODELS:  # the Transformer-family baselines of GFS's comparison (GluonTS)
        return GluonTSForecaster(algo, lookback=lookback, horizon=horizon, freq=freq, **params)
    raise ValueError(f"unknown demand algorithm {algo!r}: orglinear, dlinear, deepar, seasonal-naive, gfs-e, "
                     f"{', '.join(GLUONTS_MODELS)}")


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
