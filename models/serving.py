"""Duration / iteration models a scheduler can call with raw job records, in well under a millisecond.

A trained duration model needs engineered features per job (``hist_org_roll_median``, ``hour``, ...;
see :func:`features.duration.duration_features`); a scheduler only knows the job it is about to queue.
:func:`raw_record_model` wraps a fitted estimator in an MLflow ``PythonModel`` that takes raw job
records and computes the features itself, exactly as training did (bit for bit), from the job history
the model was trained with (kept with the model), extended by the finished jobs that clients report.

Why it is fast: the history is not re-read per request. It is kept as incremental per-key state
(:class:`_Series`: for each user, org, GPU count, user × GPUs, org × GPUs and recurring group, the
finished jobs in end-time order with the statistics after each), built once at load. A query is one
binary search per key (its statistics *as of its submission*: a job's features only read jobs that
finished before it was submitted), a ``"finished": true`` record is one O(1) append per key (the count,
Kahan sums and rolling window of pandas' own algorithms, so the numbers are pandas' to the bit), and a
request is parsed in plain Python: no pandas call on the request path. A batch of plain valid queries
(a scheduler's 1,000-job request) is validated and featurised column by column
(:func:`models.serving_records.parse_columns`); finished or bad records go record by record (same
numbers; the refusals are worded there). LightGBM models are evaluated on a float matrix by their
booster, scikit-learn forests (RF, A-SRPT's iteration forest) tree by tree (each checked against the
estimator's own ``predict`` at load); other estimators (EBM) get a DataFrame, which is slower but the
same numbers.

Request (over REST ``{"dataframe_records": [...]}``; in process :meth:`RawRecordModel.predict_records`
with a list of dicts, or ``predict`` with a DataFrame), one record per job:

=============  ========  ====================================================================
column         needed    meaning
=============  ========  ====================================================================
submit_ts      one of    submission time, ISO-8601 (no offset = UTC); converted to the trace's
submit_time    the two   clock; or seconds since the training trace's first submission (used only
                         where submit_ts is absent, or when the training trace had no timestamps)
num_gpus       yes       GPUs requested (a whole number in 1..100,000)
user, org      no        user and virtual cluster / org (``vc`` is accepted for ``org``)
job_name       no        job name (recurring-job id = hash of user and normalised name)
group_id       no        recurring-group id, when the scheduler has one (else derived as above)
num_nodes      no        nodes requested
job_id         no        identifies a finished record: a known id replaces that job (resending is safe)
finished       no        true: a job that has finished (needs ``duration``; ``queue_time``
duration       finished  optional); it joins the history and gets no prediction
queue_time     no        seconds the finished job waited (its end = submit + queue + duration)
=============  ========  ====================================================================

Records are validated with the trace loaders' rules (:mod:`features.jobtable`'s GPU-count rule and
reasons, :func:`features.traces._io.parse_datetimes` for times, the same bounds); a request with bad
records is refused as a whole (nothing of it is applied), with one line per bad record
(:class:`RecordError`; MLflow's INVALID_PARAMETER_VALUE, HTTP 400, through ``predict``).

Finished records are **kept**: they extend the model's history for every later request of this
process (applied before the request's own predictions). Served by several worker processes (``mlflow
models serve -w N``), each worker keeps its own history: report finished jobs to a single-process server
(``schedcast serve``'s default) when later predictions must see them.

Response: one predicted duration in seconds (task ``duration``) or A-SRPT's prediction (task
``iterations``) per record that is not ``finished``, in request order. A request whose columns include
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

import contextlib
import io
import math
import threading
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from features.duration import CATEGORICAL, HISTORY_KEYS
from models.serving_history import STATS, _Accumulator, _History, _Series  # noqa: F401 - re-exported
from models.serving_records import _Clock, _Columns, _Job, parse_columns

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


class RecordError(ValueError):
    """Bad request records: one line per bad record (``record I: reason``); nothing was applied."""

    def __init__(self, lines: list[str]):
        self.lines = list(lines)
        super().__init__("\n".join(self.lines))


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



class _Gate:
    """Queries before finished records: the order in which a served model's concurrent requests use the CPU.

    A request that applies finished records (or parses more than one slice of records) is *background*
    work: it runs in slices (models.serving: _APPLY_CHUNK records, _REPAIR_STEP repair entries, the lock
    released between them) and, between slices, :meth:`pause` waits while any other request is in
    progress, at most _PAUSE_MAX_S per slice (so a stream of queries slows finished records down but never
    stops them). A one-job query that arrives meanwhile therefore waits for at most the slice under way,
    and then has the interpreter (the GIL) to itself instead of sharing it, a millisecond at a time, with
    the background request: on a loaded machine a thread that shares the GIL also waits whenever the
    other is descheduled while holding it. What a query sees is unchanged: every record acknowledged
    before it arrived was applied before that acknowledgement.

    A request is in progress inside :meth:`request` (predict_records enters it; the scoring server enters
    it from the request's head until its answer is sent, so the body's parsing and the answer count too);
    both are per thread and re-entrant."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self.active = 0  #: requests in progress
        self.background = 0  #: of which in their background phase
        self.pauses = 0  #: pauses that waited (for tests and diagnostics)
        self._local = threading.local()

    @contextlib.contextmanager
    def request(self):
        """One request in progress (re-entrant in a thread: counted once)."""
        local = self._local
        depth = getattr(local, "depth", 0)
        local.depth = depth + 1
        if depth == 0:
            with self._cond:
                self.active += 1
        try:
            yield
        finally:
            local.depth = depth
            if depth == 0:
                with self._cond:
                    self.active -= 1
                    if self.active <= self.background:
                        self._cond.notify_all()

    @contextlib.contextmanager
    def background_work(self):
        """This thread's request is background work from here on (re-entrant)."""
        local = self._local
        if getattr(local, "background", False):
            yield
            return
        local.background = True
        with self._cond:
            self.background += 1
            self._cond.notify_all()  # background requests do not wait for each other
        try:
            yield
        finally:
            local.background = False
            with self._cond:
                self.background -= 1

    def pause(self, max_wait: float | None = None) -> bool:
        """Between two slices of background work: wait while another request is in progress, at most
        ``max_wait`` seconds (default _PAUSE_MAX_S). Whether it waited (never outside background work)."""
        if self.active <= self.background or not getattr(self._local, "background", False):
            return False
        with self._cond:
            if self.active <= self.background:
                return False
            self.pauses += 1
            self._cond.wait_for(lambda: self.active <= self.background,
                                _PAUSE_MAX_S if max_wait is None else max_wait)
        return True


def _python_model_base():
    import mlflow.pyfunc

    return mlflow.pyfunc.PythonModel


#: built history states by content digest (pickled: each load unpickles its own copy), most recent last
_STATE_CACHE: dict[str, bytes] = {}
_STATE_CACHE_SIZE = 4
_STATE_LOCK = threading.Lock()


class RawRecordModel(_python_model_base()):
    """Raw job records in, predictions out; the features are computed inside (see the module doc)."""

    def __init__(self, task: str, estimator: Any, history: pd.DataFrame, columns: list[str]):
        if task not in TASKS:
            raise ValueError(f"raw-record serving supports the tasks {TASKS}, not {task!r}")
        self.task, self.estimator, self.columns = task, estimator, list(columns)
        unknown = [c for c in self.columns if c not in _JOB_FEATURES and not c.startswith("hist_")]
        if unknown:
            raise ValueError(f"raw-record serving cannot compute the feature(s) {unknown}")
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
        self._reset()

    def _reset(self) -> None:
        self._state: _History | None = None  # built on load (or first use), never pickled
        self._matrix: Callable[[np.ndarray], np.ndarray] | None = None
        self._lock = threading.RLock()
        #: queries before finished records (see _Gate); the scoring server enters ``_gate.request()`` per request
        self._gate = _Gate()

    def __getstate__(self) -> dict:
        state = {k: v for k, v in self.__dict__.items() if k not in ("_state", "_matrix", "_lock", "_gate")}
        if self.history_in_artifact:
            state["history"] = None
        else:
            buf = io.BytesIO()
            self.history.to_parquet(buf, index=False)
            state["history"] = buf.getvalue()
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._reset()
        if isinstance(self.history, (bytes, bytearray)):
            self.history = _canonical(pd.read_parquet(io.BytesIO(self.history)))

    def load_context(self, context) -> None:
        if self.history is None:
            path = (getattr(context, "artifacts", None) or {}).get("history")
            if path is None:
                raise RuntimeError("this raw-record model was logged without its 'history' artifact")
            self.history = _canonical(pd.read_parquet(path))
        self.prepare()  # once at start-up, not on the first request

    def prepare(self) -> "RawRecordModel":
        """Build the per-key history state and the matrix predictor (done on load; idempotent)."""
        with self._lock:
            if self._state is None:
                self._clock = _Clock(self.clock, None if self.origin is None else int(self.origin.value))
                self._state = self._build_state()
                self._layout = self._state.layout(self.columns)
                #: (row index, _Job attribute) of the per-job features
                self._at = [(i, _JOB_ATTR[c]) for i, c in enumerate(self.columns) if c in _JOB_ATTR]
                self._matrix = _matrix_predictor(self)
        return self

    def _build_state(self) -> _History:
        """The per-key state of the history, from a process-wide cache when the same history (by content)
        was built before: MLflow loads a logged model to validate its serving input, then a user's
        ``load`` and each replay load it again, and building Philly's state is seconds of per-row work
        (a cached copy is one unpickling, ~0.15 s; every caller gets its own copy to update)."""
        import hashlib
        import pickle

        keys = HISTORY_KEYS if any(c.startswith("hist_") for c in self.columns) else {}
        if not keys or not len(self.history):
            return _History(keys)
        digest = hashlib.sha256(repr((sorted(keys.items()), list(self.history.columns),
                                      list(map(str, self.history.dtypes)))).encode())
        digest.update(pd.util.hash_pandas_object(self.history, index=False).to_numpy().tobytes())
        key = digest.hexdigest()
        with _STATE_LOCK:
            cached = _STATE_CACHE.pop(key, None)
            if cached is not None:
                _STATE_CACHE[key] = cached  # most recently used last
        if cached is not None:
            return pickle.loads(cached)
        state = self._build_state_rows(keys)
        with _STATE_LOCK:
            _STATE_CACHE[key] = pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
            while len(_STATE_CACHE) > _STATE_CACHE_SIZE:
                _STATE_CACHE.pop(next(iter(_STATE_CACHE)))
        return state

    def _build_state_rows(self, keys: dict[str, tuple[str, ...]]) -> _History:
        state = _History(keys)
        hist = self.history
        order = np.argsort(hist["submit_time"].to_numpy(), kind="stable")  # history_features' job order
        recs = hist.iloc[order].astype(object).where(hist.iloc[order].notna(), None).to_dict(orient="records")
        jobs = []
        for rec in recs:
            job = _Job()
            job._keys = None
            job.job_id, job.user, job.org, job.group_id = rec["job_id"], rec["user"], rec["org"], rec["group_id"]
            job.num_gpus, job.t = rec["num_gpus"], float(rec["submit_time"])
            job.queue = 0.0 if rec["queue_time"] is None else float(rec["queue_time"])
            job.duration = float(rec["duration"])
            jobs.append(job)
        # per key value in training's order (end, then job order): one append each, no re-sorting
        ends = [j.t + j.queue + j.duration for j in jobs]
        for seq in sorted(range(len(jobs)), key=lambda i: ends[i]):
            job = jobs[seq]
            for series, key in zip(state.series.values(), job.keys(keys)):
                if key is not None:
                    s = series.get(key)
                    if s is None:
                        s = series[key] = _Series()
                    s.add(ends[seq], job.t, seq, job.duration)
        for seq, job in enumerate(jobs):
            if job.job_id is not None:
                state.by_id[job.job_id] = (seq, job.keys(keys), ends[seq], job.t, job.duration)
            for col in state.seen:
                state.seen[col] = state.seen[col] or job.has(col)
        state.next_seq = len(jobs)
        return state

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
        if len(frame) and (not all(isinstance(c, str) for c in frame.columns)
                           or not (set(frame.columns) & (set(RAW_SCHEMA) | set(self.columns)))):
            # MLflow's server makes a frame of anything ({"dataframe_records": [1, 2, 3]} is column 0)
            raise _request_error("dataframe_records must be job records: JSON objects with submit_ts or "
                                 f"submit_time, num_gpus, ... (got columns {list(frame.columns)[:5]})")
        if "submit_time" not in frame and "submit_ts" not in frame and all(c in frame for c in self.columns):
            return self._predict_features(frame[self.columns])
        try:
            return self.predict_records(frame.to_dict(orient="records"))
        except RecordError as exc:
            raise _request_error(str(exc)) from None

    def _predict_features(self, X: pd.DataFrame) -> np.ndarray:
        return np.maximum(np.asarray(self.estimator.predict(X), dtype=float), 0.0)

    def predict_records(self, records: list[dict[str, Any]]) -> np.ndarray:
        """The fast path: JSON-like records in, one prediction per unfinished record out (request order).
        Finished records join the history first (kept for later calls). Raises RecordError (nothing
        applied) when any record is bad."""
        with self._gate.request():
            values, n = self._values(records)
            if not n:
                return np.zeros(0)
            return self._predict_values(values, n)

    def features(self, records: pd.DataFrame | list[dict[str, Any]]) -> pd.DataFrame:
        """The engineered features (the estimator's columns) of the unfinished records (finished records
        join the history first, as in ``predict``)."""
        if isinstance(records, pd.DataFrame):
            records = records.to_dict(orient="records")
        return self._frame(*self._values(records))

    def _values(self, records: list[dict[str, Any]]) -> tuple[list[Any], int]:
        """Per estimator column, the feature values of the request's queries (a list or array; None: NaN
        throughout), and how many queries. A batch of plain valid queries is handled column by column
        (models.serving_records.parse_columns); any other request record by record (same numbers)."""
        self.prepare()
        if isinstance(records, list):
            batch = parse_columns(records, self._clock)
            if batch is not None:
                return self._column_values(batch), batch.n
        rows = self._rows(records)
        return ([list(c) for c in zip(*rows)] if rows else [None] * len(self.columns)), len(rows)

    def _column_values(self, batch: _Columns) -> list[Any]:
        with self._lock:
            state = self._state
            seen = state.seen
            present = [all(seen[c] or batch.has(c) for c in cols) for cols, _ in self._layout]
            values: list[Any] = [None] * len(self.columns)
            for i, hist in state.column_features(batch.keys(state.keys), batch.t, present, self._layout).items():
                values[i] = hist
        for i, c in enumerate(self.columns):
            if c in _JOB_ATTR:
                values[i] = _job_column(batch, c)
        return values

    def _rows(self, records: list[dict[str, Any]]) -> list[list[Any]]:
        self.prepare()
        if not isinstance(records, list):
            raise RecordError(["the request must be a list of job records"])
        with contextlib.ExitStack() as stack:
            gate = self._gate
            if len(records) > _APPLY_CHUNK:  # more than one slice: background work from the start
                stack.enter_context(gate.background_work())
            parsed, bad, parse = [], [], self._clock.parse
            for k in range(0, len(records), _APPLY_CHUNK):
                if k:
                    gate.pause()
                for i, rec in enumerate(records[k:k + _APPLY_CHUNK], k):
                    job = parse(rec)
                    if isinstance(job, str):
                        bad.append(f"record {i}: {job}")
                    else:
                        parsed.append(job)
            if bad:
                raise RecordError(bad)
            state = self._state
            # history_features' order for the request's finished jobs: by submission, then request order.
            # They are applied in slices, the lock released between them and other requests let through
            # first (_Gate), so a concurrent query waits for at most one slice (each finished job is O(log n)
            # per key, see models.serving_history._Series).
            finished = sorted((j for j in parsed if j.finished), key=lambda j: j.t)
            if finished:
                stack.enter_context(gate.background_work())
            for k in range(0, len(finished), _APPLY_CHUNK):
                gate.pause()
                with self._lock:
                    for job in finished[k:k + _APPLY_CHUNK]:
                        state.add(job)
            if finished and state.dirty:
                self._repair(state, _REPAIR_MIN + _REPAIR_PER_RECORD * len(finished))
        return self._query_rows(state, [j for j in parsed if not j.finished])

    def _repair(self, state: _History, budget: int) -> None:
        """Exact statistics again after out-of-order finished jobs: up to ``budget`` entries, in steps of
        _REPAIR_STEP with the lock released between them, paid by the request that reported them. Entries
        still pending afterwards (a stream of records each ending before thousands of known jobs) are
        repaired by later such requests; meanwhile queries read statistics computed from the durations
        (equal up to rounding: models.serving_history._Series)."""
        while state.dirty and budget > 0:
            self._gate.pause()
            with self._lock:
                budget -= max(1, state.repair(min(_REPAIR_STEP, budget)))

    def _query_rows(self, state: _History, queries: list[_Job]) -> list[list[Any]]:
        with self._lock:
            seen = state.seen
            present = [all(seen[c] or any(j.has(c) for j in queries) for c in cols) for cols, _ in self._layout]
            n, nan, at = len(self.columns), math.nan, self._at
            rows = []
            for job in queries:
                row = [nan] * n
                for i, attr in at:
                    row[i] = getattr(job, attr)
                state.features(job, present, self._layout, row)
                rows.append(row)
        return rows

    def _frame(self, values: list[Any], n: int) -> pd.DataFrame:
        cats = set(_categorical())
        X = pd.DataFrame({c: np.full(n, math.nan) if v is None else v for c, v in zip(self.columns, values)},
                         columns=self.columns)
        for c in self.columns:
            X[c] = X[c].astype(str) if c in cats else X[c].astype(float)
        return X

    def _predict_values(self, values: list[Any], n: int) -> np.ndarray:
        if self._matrix is not None:
            return self._matrix(values, n)
        return self._predict_features(self._frame(values, n))

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


#: Finished records applied per hold of the model's lock, and history entries repaired per hold (each hold
#: about a millisecond or less, so a concurrent one-job query never waits for a large request).
_APPLY_CHUNK = 128
_REPAIR_STEP = 256
#: The longest a slice of background work waits for other requests (_Gate.pause): a stream of queries
#: leaves finished records at least one slice per _PAUSE_MAX_S.
_PAUSE_MAX_S = 0.05
#: The repair budget of a request that reported finished jobs: _REPAIR_MIN entries plus _REPAIR_PER_RECORD
#: per finished record (a request's own history repair is complete when its keys' tails are shorter).
_REPAIR_MIN = 8192
_REPAIR_PER_RECORD = 64

#: The per-job (non-history) features a raw record gives: feature -> _Job attribute.
_JOB_ATTR = {"num_gpus": "f_gpus", "num_nodes": "num_nodes", "org": "f_org", "user": "f_user",
             "group_id": "group_id", "name_bucket": "f_name", "hour": "hour", "weekday": "weekday"}
_JOB_FEATURES = tuple(_JOB_ATTR)


def _job_column(batch: _Columns, feature: str) -> Any:
    """A per-job feature of a batch (the _Job attribute of _JOB_ATTR, column by column)."""
    if feature == "num_gpus":
        return [float(g) for g in batch.num_gpus]
    if feature in ("org", "user"):
        return ["<unknown>" if v is None else v for v in getattr(batch, feature)]
    if feature == "name_bucket":
        return [_Job.f_name] * batch.n
    return getattr(batch, feature)  # num_nodes, group_id, hour, weekday


def _matrix_predictor(model: RawRecordModel) -> Callable[[list[Any], int], np.ndarray] | None:
    """Feature columns -> float matrix -> the fitted model's own arrays, without the per-call pandas
    work of the estimator's ``predict`` (the same steps in the same order, so the same numbers): a
    LightGBM booster (categories as the codes of the levels seen in fit, unseen = NaN, as LightGBM's
    pandas conversion makes them), or a scikit-learn forest (RandomForestModel, A-SRPT's
    IterationForest: codes with unseen = -1, float32, the trees summed in order then divided, as the
    forest's predict does, without joblib's per-tree dispatch). Used only when it gives the estimator's
    own predictions bit for bit on history jobs (checked here); else None."""
    from models.tabular import IterationForest, LightGBMRegressorModel, RandomForestModel

    est = model.estimator
    cats = set(_categorical())
    nan = math.nan
    if isinstance(est, LightGBMRegressorModel) and hasattr(est, "model_"):
        booster = est.model_.booster_
        codes = [({v: float(i) for i, v in enumerate(est.levels_[c])} if c in cats and c in est.levels_ else None)
                 for c in model.columns]
        unknown = nan

        def finish(M: np.ndarray, values: list[Any]) -> np.ndarray:
            return np.maximum(est._finish(booster.predict(M, num_threads=1)), 0.0)
    elif type(est) in (RandomForestModel, IterationForest) and hasattr(est, "model_") and est.model_.n_outputs_ == 1:
        if list(est.columns_) != [c for c in model.columns if c in est.columns_]:
            return None
        keep = [model.columns.index(c) for c in est.columns_]
        codes = [({v: float(i) for i, v in enumerate(est.levels_[c])} if c in est.levels_ else None)
                 for c in model.columns]
        unknown, trees = -1.0, [e.tree_.predict for e in est.model_.estimators_]  # e.predict's own step
        group = model.columns.index("group_id") if isinstance(est, IterationForest) else -1

        def finish(M: np.ndarray, values: list[Any]) -> np.ndarray:
            X = np.ascontiguousarray(M[:, keep], dtype=np.float32)
            out = np.zeros(len(X))
            for predict in trees:
                out += predict(X)[:, 0]
            out /= len(trees)
            pred = est._finish(out)
            if group >= 0:
                seen = est.groups_
                unseen = np.array([g not in seen for g in values[group]], dtype=bool)
                if est.unseen == "zero":
                    pred[unseen] = 0.0
                else:
                    users = values[model.columns.index("user")] if "user" in model.columns else ["<unknown>"] * len(X)
                    pred[unseen] = [est.user_mean_.get(u, est.median_) for u, x in zip(users, unseen) if x]
            return pred
    else:
        return None

    def predict(values: list[Any], n: int) -> np.ndarray:
        M = np.empty((n, len(values)))
        for i, (v, m) in enumerate(zip(values, codes)):
            if v is None:
                M[:, i] = nan
            elif m is not None:
                get = m.get
                M[:, i] = [get(x, unknown) for x in v]
            else:
                M[:, i] = v
        return finish(M, values)

    # the check: up to 64 history jobs, asked as of their submission (no state change); a model that
    # keeps no history (iterations: group and user only) is asked its fitted groups and one unseen
    hist = model.history.tail(64)
    levels = getattr(est, "levels_", {})
    if len(hist):
        probe = to_records(hist)
    elif "group_id" in levels:
        users = list(levels.get("user", [])) or [None]
        groups = list(levels["group_id"][:63]) + ["<a group never seen in training>"]
        probe = [{"submit_time": 0.0, "num_gpus": 1, "group_id": g, "user": users[i % len(users)]}
                 for i, g in enumerate(groups)]
    else:
        return None
    saved, model._matrix = model._matrix, None
    try:
        values, n = model._values(probe)
        same = np.array_equal(predict(values, n), model._predict_features(model._frame(values, n)))
    except Exception:  # noqa: BLE001 - any trouble: keep the estimator's own predict
        same = False
    finally:
        model._matrix = saved
    return predict if same else None


def _categorical() -> tuple[str, ...]:
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
