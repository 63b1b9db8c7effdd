"""Duration / iteration models a scheduler can call with raw job records.

A trained duration model needs engineered features per job (``hist_org_roll_median``, ``hour``, ...;
see :func:`features.duration.duration_features`); a scheduler only knows the job it is about to queue.
:func:`raw_record_model` wraps a fitted estimator in an MLflow ``PythonModel`` that takes raw job
records and computes the features itself, exactly as training did, from the job history the model
was trained with (kept with the model), optionally extended by recently finished jobs sent along.

Request (one pandas DataFrame; over REST ``{"dataframe_records": [...]}``), one row per job:

=============  ========  ====================================================================
column         needed    meaning
=============  ========  ====================================================================
submit_ts      one of    submission time, ISO-8601 (no offset = UTC); converted to the trace's
submit_time    the two   clock; or seconds since the training trace's first submission (used only
                         where submit_ts is absent, or when the training trace had no timestamps)
num_gpus       yes       GPUs requested
user, org      no        user and virtual cluster / org (``vc`` is accepted for ``org``)
job_name       no        job name (recurring-job id = hash of user and normalised name)
group_id       no        recurring-group id, when the scheduler has one (else derived as above)
num_nodes      no        nodes requested
job_id         no        echoed nowhere; identifies a finished record that replaces a history job
finished       no        true: a job that has finished (needs ``duration``; ``queue_time``
duration       finished  optional); it extends the history and gets no prediction
queue_time     no        seconds the finished job waited (its end = submit + queue + duration)
=============  ========  ====================================================================

Response: one predicted duration in seconds (task ``duration``) or A-SRPT's prediction (task
``iterations``) per row that is not ``finished``, in request order. A request whose columns include
every engineered feature and neither ``submit_time`` nor ``submit_ts`` is taken as a feature frame and
predicted as is (so ``schedcast evaluate`` and older clients keep working with the same model).

Logging contract (what :mod:`models.registry` does with it)::

    model, example = raw_record_model("duration", estimator, table.frame)
    artifacts = history_artifacts(model, tmpdir)        # optional: the history as a parquet artifact
    mlflow.pyfunc.log_model(name="model", python_model=model, artifacts=artifacts,
                            signature=model.signature, input_example=example, pip_requirements=...)

Without ``history_artifacts`` the history travels inside the pickled model (as parquet bytes); with it
the history is a visible model artifact (``artifacts/history.parquet``) and the pickle stays small.
Pass ``signature=model.signature``: every column is optional there, and the engineered feature
columns are declared too, so MLflow neither rejects a record without ``user`` nor drops the feature
columns of a feature frame.
"""
from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

#: Raw job fields kept in the history snapshot (those the duration features read).
HISTORY_COLUMNS: dict[str, str] = {
    "job_id": "string", "submit_time": "float64", "submit_ts": "datetime64[ns, UTC]", "duration": "float64",
    "queue_time": "float64", "num_gpus": "Int64", "num_nodes": "Int64", "user": "string", "org": "string",
    "job_name": "string", "group_id": "string",
}
#: Request columns and their MLflow schema types (all optional in the signature).
#: Numbers and the flag are declared Any: MLflow refuses int64 for a double column in a local predict
#: (its "safe conversion" rule), and it casts a boolean column with astype(bool), which turns the flag
#: of a record that leaves it out into True. The model converts them itself.
RAW_SCHEMA: dict[str, str] = {
    "job_id": "string", "submit_ts": "string", "submit_time": "any", "num_gpus": "any",
    "num_nodes": "any", "user": "string", "org": "string", "vc": "string", "job_name": "string",
    "group_id": "string", "finished": "any", "duration": "any", "queue_time": "any",
}
TASKS = ("duration", "iterations")


def _request_error(message: str):
    from mlflow.exceptions import INVALID_PARAMETER_VALUE, MlflowException

    return MlflowException(message, error_code=INVALID_PARAMETER_VALUE)


def _canonical(frame: pd.DataFrame) -> pd.DataFrame:
    """The history columns with the job table's dtypes (so hashing and joins see what training saw)."""
    out = pd.DataFrame(index=frame.index)
    for col, dtype in HISTORY_COLUMNS.items():
        values = frame[col] if col in frame else pd.Series(pd.NA, index=frame.index)
        if dtype == "Int64":
            out[col] = pd.to_numeric(values, errors="coerce").round().astype("Int64")
        elif dtype.startswith("datetime"):
            iso = {"format": "ISO8601"} if values.dtype == object or isinstance(values.dtype, pd.StringDtype) else {}
            out[col] = pd.to_datetime(values, utc=True, errors="coerce", **iso).astype("datetime64[ns, UTC]")
        elif dtype == "float64":
            out[col] = pd.to_numeric(values, errors="coerce").astype(float)
        else:
            out[col] = values.astype("string")
    return out


def _flag(values: pd.Series) -> np.ndarray:
    """Truthy 'finished' values (True, 1, 'true', 'yes'); nulls are False."""
    def one(v: Any) -> bool:
        if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)):
            return False
        if isinstance(v, str):
            return v.strip().lower() in ("true", "1", "yes", "y", "t")
        return bool(v)

    return np.array([one(v) for v in values], dtype=bool)


def _key_strings(frame: pd.DataFrame, cols: tuple[str, ...]) -> pd.Series:
    """features.duration.history_features' key for ``cols`` (None where any part is missing)."""
    if not len(frame):  # agg(axis=1) of an empty frame is a DataFrame, not a Series
        return pd.Series([], index=frame.index, dtype=object)
    key = frame[list(cols)].astype(str).agg("|".join, axis=1) if len(cols) > 1 else frame[cols[0]].astype(str)
    return key.where(frame[list(cols)].notna().all(axis=1), None)


def _python_model_base():
    import mlflow.pyfunc

    return mlflow.pyfunc.PythonModel


class RawRecordModel(_python_model_base()):
    """Raw job records in, predictions out; the features are computed inside (see the module doc)."""

    def __init__(self, task: str, estimator: Any, history: pd.DataFrame, columns: list[str]):
        if task not in TASKS:
            raise ValueError(f"raw-record serving supports the tasks {TASKS}, not {task!r}")
        self.task, self.estimator, self.columns = task, estimator, list(columns)
        self.history_in_artifact = False
        self._set_history(history)

    # -- state -------------------------------------------------------------------------------------
    def _set_history(self, history: pd.DataFrame) -> None:
        from features.duration import recurring_group_id

        hist = _canonical(history).reset_index(drop=True)
        hist["group_id"] = hist["group_id"].fillna(recurring_group_id(hist))
        self.history = hist
        ts = hist["submit_ts"]
        #: Training's calendar features use the timestamps only when every job has one.
        self.clock = "ts" if len(hist) and ts.notna().all() else "seconds"
        first = int(np.argmin(hist["submit_time"].to_numpy())) if len(hist) else None
        #: The timestamp of time zero of the training trace's clock (None without a clock).
        self.origin = ts.iloc[first] if first is not None and pd.notna(ts.iloc[first]) else None
        self._keys = None  # per history key: its _KeyIndex (built on load, or on first use)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_keys"] = None
        if self.history_in_artifact:
            state["history"] = None
        else:
            buf = io.BytesIO()
            self.history.to_parquet(buf, index=False)
            state["history"] = buf.getvalue()
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if isinstance(self.history, (bytes, bytearray)):
            self.history = _canonical(pd.read_parquet(io.BytesIO(self.history)))

    def load_context(self, context) -> None:
        if self.history is None:
            path = (getattr(context, "artifacts", None) or {}).get("history")
            if path is None:
                raise RuntimeError("this raw-record model was logged without its 'history' artifact")
            self.history = _canonical(pd.read_parquet(path))
        self._history_keys()  # once at start-up, not on the first request

    @property
    def signature(self):
        """Every request column optional; the engineered feature columns declared too (see module doc)."""
        from mlflow.models import ModelSignature
        from mlflow.types import ColSpec, Schema
        from mlflow.types.schema import AnyType

        specs = {name: ColSpec(AnyType() if t == "any" else t, name, required=False) for name, t in RAW_SCHEMA.items()}
        for col in self.columns:
            if col not in specs:
                specs[col] = ColSpec("string" if col in _categorical() else "double", col, required=False)
        return ModelSignature(inputs=Schema(list(specs.values())),
                              outputs=Schema([ColSpec("double", "prediction")]))

    # -- prediction --------------------------------------------------------------------------------
    def predict(self, context, model_input: pd.DataFrame, params: dict[str, Any] | None = None) -> np.ndarray:
        frame = model_input if isinstance(model_input, pd.DataFrame) else pd.DataFrame(model_input)
        if "submit_time" not in frame and "submit_ts" not in frame and all(c in frame for c in self.columns):
            return self._predict_features(frame[self.columns])
        X = self.features(frame)
        return self._predict_features(X) if len(X) else np.zeros(0)

    def _predict_features(self, X: pd.DataFrame) -> np.ndarray:
        return np.maximum(np.asarray(self.estimator.predict(X), dtype=float), 0.0)

    def features(self, records: pd.DataFrame) -> pd.DataFrame:
        """The engineered features (the estimator's columns) of the non-finished records."""
        queries, finished = self._split(records)
        if not len(queries):
            return pd.DataFrame(columns=self.columns)
        # A query has not finished: an infinite duration keeps it out of every history statistic.
        queries = self._prepare(queries).assign(duration=np.inf, queue_time=np.nan)
        X = _job_features(queries)
        hist_cols = [c for c in self.columns if c.startswith("hist_")]
        if hist_cols and len(queries):
            hist = self._history_features(queries, self._prepare(finished))
            for c in hist_cols:
                X[c] = hist[c].to_numpy()
        return X[self.columns]

    def _split(self, records: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
        frame = records.reset_index(drop=True).copy()
        if "org" not in frame and "vc" in frame:
            frame["org"] = frame["vc"]
        done = _flag(frame["finished"]) if "finished" in frame else np.zeros(len(frame), dtype=bool)
        if "num_gpus" not in frame or frame["num_gpus"].isna().any():
            raise _request_error("every record needs num_gpus")
        out = _canonical(frame)
        if "submit_time" not in frame and "submit_ts" not in frame:
            raise _request_error("every record needs submit_ts (ISO-8601) or submit_time (seconds)")
        if "submit_ts" in frame and out["submit_ts"].isna().ne(frame["submit_ts"].isna()).any():
            bad = int(np.flatnonzero(out["submit_ts"].isna() & frame["submit_ts"].notna())[0])
            raise _request_error(f"record {bad}: submit_ts {frame['submit_ts'].iloc[bad]!r} is not a time")
        has_ts = out["submit_ts"].notna()
        if self.origin is not None:  # a timestamp wins: seconds are only meaningful on the training clock
            out.loc[has_ts, "submit_time"] = (out.loc[has_ts, "submit_ts"] - self.origin).dt.total_seconds()
        elif (has_ts & out["submit_time"].isna()).any():
            raise _request_error("this model's history has no clock: send submit_time (seconds on the "
                                 "training trace's clock) instead of submit_ts")
        if out["submit_time"].isna().any():
            bad = int(np.flatnonzero(out["submit_time"].isna())[0])
            raise _request_error(f"record {bad} has neither submit_ts nor submit_time")
        if self.clock == "ts":
            missing_ts = out["submit_ts"].isna()
            out.loc[missing_ts, "submit_ts"] = self.origin + pd.to_timedelta(out.loc[missing_ts, "submit_time"], unit="s")
        else:
            out["submit_ts"] = pd.NaT  # training's calendar used the seconds clock
        fin = out[done]
        if len(fin) and (~np.isfinite(fin["duration"].to_numpy()) | (fin["duration"].to_numpy() < 0)).any():
            raise _request_error("finished records need a duration >= 0 (seconds)")
        return out[~done].reset_index(drop=True), fin.reset_index(drop=True)

    @staticmethod
    def _prepare(frame: pd.DataFrame) -> pd.DataFrame:
        from features.duration import recurring_group_id

        frame = frame.copy()
        frame["group_id"] = frame["group_id"].fillna(recurring_group_id(frame)) if len(frame) else frame["group_id"]
        return frame

    def _history_keys(self) -> dict[str, "_KeyIndex"]:
        from features.duration import HISTORY_KEYS

        if self._keys is None:
            hist = self.history.assign(name_bucket=pd.NA)
            order = np.argsort(hist["submit_time"].to_numpy(), kind="stable")  # history_features' job order
            hist = hist.iloc[order].reset_index(drop=True)
            self._keys = {name: _KeyIndex(hist, cols) for name, cols in HISTORY_KEYS.items()}
        return self._keys

    def _history_features(self, queries: pd.DataFrame, extra: pd.DataFrame) -> pd.DataFrame:
        """features.duration.history_features of the queries over history + finished records. A key's
        statistics only read rows with the same key value, so each key keeps its history's finished-job
        table (built once) and only the key values that finished records touch are rebuilt per request."""
        from features.duration import HISTORY_KEYS

        out = pd.DataFrame(index=range(len(queries)))
        extra = extra.assign(name_bucket=pd.NA)
        if len(extra):  # history_features' job order: history first, then the finished records, by submit
            extra = extra.iloc[np.argsort(extra["submit_time"].to_numpy(), kind="stable")].reset_index(drop=True)
        replaced = set(extra["job_id"].dropna()) if len(extra) else set()
        index = self._history_keys()
        hist_replaced = _isin(index["user"].job_id, replaced) if replaced else np.zeros(len(self.history), dtype=bool)
        q = queries.assign(name_bucket=pd.NA)
        for name, cols in HISTORY_KEYS.items():
            for col, values in index[name].lookup(q, extra, hist_replaced, name).items():
                out[col] = values
        return out

    def input_example(self, rows: int = 3) -> pd.DataFrame:
        """Raw records of the history's last jobs (the last one as a finished record) as a client sends them."""
        tail = self.history.tail(rows + 1)
        cols = [c for c in ("job_id", "submit_ts", "num_gpus", "num_nodes", "user", "org", "job_name")
                if c in tail and tail[c].notna().any()]
        if "submit_ts" not in cols:
            cols.insert(1, "submit_time")
        ex = tail[cols].copy()
        if "submit_ts" in ex:
            ex["submit_ts"] = ex["submit_ts"].dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        for c in ("num_gpus", "num_nodes"):
            if c in ex:
                ex[c] = ex[c].astype(float)
        for c in ("job_id", "user", "org", "job_name"):
            if c in ex:
                ex[c] = ex[c].astype(object).where(ex[c].notna(), None)
        ex["finished"] = [False] * (len(ex) - 1) + [True]
        ex["duration"] = [np.nan] * (len(ex) - 1) + [float(tail["duration"].iloc[-1])]
        return ex.reset_index(drop=True)


class _KeyIndex:
    """One history key of features.duration.history_features, precomputed: the history's finished-job
    table (key, end, count, mean, rolling mean / median, last), looked up as of each query's
    submission. The statistics are computed by the same pandas operations as history_features."""

    def __init__(self, hist: pd.DataFrame, cols: tuple[str, ...]):
        from features.duration import _end_times

        self.cols = cols
        self.has_values = {c: bool(hist[c].notna().any()) for c in cols}
        self.key = _key_strings(hist, cols).to_numpy(dtype=object)
        self.end = _end_times(hist) if len(hist) else np.zeros(0)
        self.duration = hist["duration"].to_numpy(dtype=float)
        self.job_id = hist["job_id"].to_numpy(dtype=object)
        self.done = _done_table(self.key, self.end, self.duration)
        #: key value -> positions of its rows in ``done`` (ascending) and in the history
        self.done_rows = self.done.reset_index(drop=True).groupby("key", sort=False).indices
        self.hist_rows = pd.Series(self.key, dtype=object).groupby(self.key, sort=False, dropna=True).indices \
            if len(self.key) else {}

    def lookup(self, queries: pd.DataFrame, extra: pd.DataFrame, hist_replaced: np.ndarray,
               name: str) -> dict[str, np.ndarray]:
        from features.duration import COUNT_KEYS, _end_times

        stats = [s for s in ("count", "mean", "roll_mean", "roll_median", "last") if s != "count" or name in COUNT_KEYS]
        n = len(queries)
        # history_features gives NaN for a key when one of its columns is empty in the whole frame
        present = all(self.has_values[c] or queries[c].notna().any() or (len(extra) and extra[c].notna().any())
                      for c in self.cols)
        if not present:
            return {f"hist_{name}_{s}": np.full(n, np.nan) for s in stats}
        qkey = _key_strings(queries, self.cols)
        wanted = set(qkey.dropna())
        ekey = _key_strings(extra, self.cols).to_numpy(dtype=object) if len(extra) else np.zeros(0, dtype=object)
        touched = set(ekey[pd.notna(ekey)]) & wanted
        if hist_replaced.any():
            touched |= set(self.key[hist_replaced & pd.notna(self.key)]) & wanted
        empty = np.zeros(0, dtype=np.intp)
        keep = [self.done_rows.get(k, empty) for k in wanted - touched]
        done = self.done.iloc[np.sort(np.concatenate(keep)) if keep else empty]
        if touched:  # rebuild those key values from their history rows and the finished records
            rows = np.sort(np.concatenate([self.hist_rows.get(k, empty) for k in touched]))
            rows = rows[~hist_replaced[rows]]
            emask = _isin(ekey, touched) if len(extra) else np.zeros(0, dtype=bool)
            key = np.concatenate([self.key[rows], ekey[emask]])
            end = np.concatenate([self.end[rows], _end_times(extra[emask]) if emask.any() else np.zeros(0)])
            dur = np.concatenate([self.duration[rows], extra["duration"].to_numpy(dtype=float)[emask]])
            done = pd.concat([done, _done_table(key, end, dur)]).sort_values("end", kind="stable")
        left = pd.DataFrame({"key": qkey.to_numpy(dtype=object), "t": queries["submit_time"].to_numpy(dtype=float),
                             "row": np.arange(n)})
        known = left[left["key"].notna()].sort_values("t", kind="stable")
        merged = pd.merge_asof(known, done, left_on="t", right_on="end", by="key", allow_exact_matches=False,
                               direction="backward")
        out = {}
        for stat in stats:
            col = np.full(n, np.nan)
            col[merged["row"].to_numpy()] = merged[stat].to_numpy(dtype=float)
            if stat == "count":
                col = np.where(np.isnan(col) & left["key"].notna().to_numpy(), 0.0, col)
            out[f"hist_{name}_{stat}"] = col
        return out


def _isin(values: np.ndarray, wanted: set) -> np.ndarray:
    """Hash-based membership for object arrays (numpy's isin compares every pair for objects)."""
    return pd.Series(values, dtype=object).isin(list(wanted)).to_numpy(dtype=bool)


def _done_table(key: np.ndarray, end: np.ndarray, duration: np.ndarray) -> pd.DataFrame:
    """features.duration.history_features' table of finished jobs for one key (rows in job order)."""
    from features.duration import ROLL

    done = pd.DataFrame({"key": key, "end": end, "duration": duration})
    done = done[done["key"].notna()].sort_values(["key", "end"], kind="stable")
    g = done.groupby("key", sort=False)["duration"]
    done["count"] = g.cumcount() + 1
    done["mean"] = g.cumsum() / done["count"]
    done["roll_mean"] = g.transform(lambda s: s.rolling(ROLL, min_periods=1).mean())
    done["roll_median"] = g.transform(lambda s: s.rolling(ROLL, min_periods=1).median())
    done["last"] = done["duration"]
    return done.sort_values("end", kind="stable").drop(columns="duration")


def _job_features(frame: pd.DataFrame) -> pd.DataFrame:
    """duration_features' per-job columns (everything but the history statistics, which
    RawRecordModel computes over the history): the same code path, without the history pass that
    would only see the request's own jobs. ``frame`` has group_id filled (RawRecordModel._prepare)."""
    from features.duration import calendar_features

    feats = pd.DataFrame(index=frame.index)
    feats["num_gpus"] = frame["num_gpus"].astype(float)
    feats["num_nodes"] = frame["num_nodes"].astype(float)
    frame = frame.assign(name_bucket=pd.NA)  # training fits no name bucketer (pipelines.train)
    for col in ("org", "user", "group_id", "name_bucket"):
        feats[col] = frame[col].astype("string").fillna("<unknown>").astype(str)
    return feats.join(calendar_features(frame).astype(float))


def _categorical() -> tuple[str, ...]:
    from features.duration import CATEGORICAL

    return CATEGORICAL


def raw_record_model(task: str, estimator: Any, history: pd.DataFrame) -> tuple[RawRecordModel, pd.DataFrame]:
    """(python model, raw-record input example) for a fitted ``duration`` or ``iterations`` estimator.

    ``history``: the job table frame the estimator was trained on (features.jobtable columns; the
    holdout may be included: a job's features only read jobs finished before its submission). Only the
    columns the features read are kept; the ``iterations`` features (recurring group, user) read no
    history, so none is kept for that task. Log with ``signature=model.signature`` and optionally
    ``artifacts=history_artifacts(model, dir)`` (module doc)."""
    columns = getattr(estimator, "columns_", None)
    if columns is None:
        raise ValueError("the estimator has no columns_: fit it on duration_features first")
    model = RawRecordModel(task, estimator, history, list(columns))
    example = model.input_example()
    if not any(c.startswith("hist_") for c in columns):
        model.history = model.history.head(0)  # clock and origin stay those of the full history
    return model, example


def history_artifacts(model: RawRecordModel, directory: str | Path) -> dict[str, str]:
    """Write the model's history snapshot to ``directory/history.parquet`` and return the ``artifacts``
    mapping for ``mlflow.pyfunc.log_model``; the pickled model then no longer carries the history."""
    path = Path(directory) / "history.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    model.history.to_parquet(path, index=False)
    model.history_in_artifact = True
    return {"history": str(path)}


def to_records(jobs: pd.DataFrame, *, finished: bool = False) -> list[dict[str, Any]]:
    """Job-table rows as the JSON records a raw-record model takes (``{"dataframe_records": ...}``):
    ISO-8601 UTC times, no nulls; ``finished=True`` adds the flag and the durations (and queue times)."""
    cols = [c for c in ("job_id", "submit_ts", "submit_time", "num_gpus", "num_nodes", "user", "org", "job_name",
                        "group_id") if c in jobs]
    out = jobs[cols].copy()
    if "submit_ts" in out:
        ts = pd.to_datetime(out["submit_ts"], utc=True)
        out["submit_ts"] = ts.dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ").where(ts.notna(), None)
    if finished:
        out["finished"] = True
        out["duration"] = jobs["duration"].astype(float)
        if "queue_time" in jobs:
            out["queue_time"] = jobs["queue_time"].astype(float)
    if "submit_ts" in out and "submit_time" in out:  # seconds only where there is no timestamp
        out["submit_time"] = out["submit_time"].where(out["submit_ts"].isna())
    rows = out.astype(object).where(out.notna(), None).to_dict(orient="records")
    return [{k: (v.item() if hasattr(v, "item") else v) for k, v in r.items() if v is not None} for r in rows]
