"""MLflow glue: tracking location, logging an estimator as a pyfunc model with its signature, input
example, metrics, data lineage and plots, and the registry (names, champion / challenger aliases).

The default tracking store needs no server: ``sqlite:///mlruns/mlflow.db`` with artifacts under
``mlruns/artifacts`` in the working directory. ``--tracking-uri`` (or $MLFLOW_TRACKING_URI) points at a
real server. mlflow is imported lazily: nothing here costs time unless a model is logged or loaded.

Trust model
-----------
A logged model is a cloudpickle of Python objects: **loading a model runs code chosen by whoever wrote
it**. schedcast therefore loads, without asking, only models addressed through the tracking store the
user configured (``models:/NAME@ALIAS``, ``models:/NAME/VERSION``, ``runs:/RUN/model``, resolved in the
store named by ``--tracking-uri`` / $MLFLOW_TRACKING_URI / the local ``mlruns`` default): whoever can
write to that store can already change what the scheduler runs. A model addressed by any other URI (a
local directory, ``file://``, ``s3://``, an artifact URL) is refused with a one-line explanation unless
the user says explicitly that they trust it: ``--trust-local-models`` where a command offers it, or
``SCHEDCAST_TRUST_LOCAL_MODELS=1`` in the environment (which also reaches model paths inside policy
specs such as ``lucid:packing_model=DIR``). A trusted local load prints one warning per process.
Every loader in schedcast goes through :func:`load`.

Concurrency
-----------
* Store initialisation: the first connection to a new sqlite store creates its tables; two processes
  doing that at once fail (``table ... already exists``). :func:`configure` holds a file lock beside the
  sqlite file (``mlflow.db.lock``) around the first connection and the experiment's creation.
* Aliases: :func:`alias_lock` serialises alias changes of one registered model (a file lock beside a
  sqlite store; a short lease kept as a registered-model tag on other stores, best effort), and
  :func:`compare_and_set_alias` moves an alias only if it still points at the version that was compared.
* Registration and the first aliases are one guarded step in :func:`log_estimator`: if anything after
  the version's creation fails (including SIGTERM / Ctrl-C turned into an exception), the version is
  deleted again, so no version is left without its alias and a first-ever model is never half there.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

if TYPE_CHECKING:
    import pandas as pd

EXPERIMENT = "schedcast"
CHAMPION, CHALLENGER = "champion", "challenger"
#: What a logged model needs at serving time (explicit: faster logging, no environment inference).
PIP_REQUIREMENTS = ["schedcast", "mlflow", "pandas", "numpy", "scikit-learn", "lightgbm", "interpret-core",
                    "cloudpickle"]
#: Environment variable that trusts models addressed by a local path or a direct artifact URI.
TRUST_ENV = "SCHEDCAST_TRUST_LOCAL_MODELS"
#: Seconds a process waits for a store or alias lock before giving up (exit 1 from the CLI).
LOCK_TIMEOUT_S = 120.0


class ModelNotFoundError(ValueError):
    """The model URI names nothing in the configured store (the CLI prints one line, exit 2)."""


class UntrustedModelError(ValueError):
    """A model addressed by a local path / direct URI without the user's explicit trust (exit 2)."""


class LockTimeout(RuntimeError):
    """Another process held the store or alias lock for longer than LOCK_TIMEOUT_S."""


class TrackingStoreError(ValueError):
    """The tracking store cannot be used: an unknown URI scheme, a file that is not a database, a full
    disk or a read-only store (the CLI prints one line, exit 2)."""


#: URI schemes MLflow keeps runs and registered models in (``postgresql+psycopg2`` counts as postgresql).
STORE_SCHEMES = ("sqlite", "http", "https", "file", "postgresql", "mysql", "mssql", "databricks", "databricks-uc",
                 "uc")
_SQLITE_MAGIC = b"SQLite format 3\x00"
#: Largest model version a store can hold (a 64-bit integer): bigger numbers name nothing.
MAX_VERSION = 2**63 - 1


def check_tracking_uri(uri: str) -> str:
    """``uri`` if a tracking store can live there, else TrackingStoreError naming why: an unknown scheme
    (``bogus://``), or a sqlite URI at a folder or at a file that is not an SQLite database (MLflow would
    fail deep inside SQLAlchemy). A new or empty sqlite file is fine: the store is created there."""
    scheme = uri.split("://", 1)[0].split("+", 1)[0].lower() if "://" in uri else ""
    if scheme and scheme not in STORE_SCHEMES:
        raise TrackingStoreError(f"tracking URI {uri}: unsupported scheme {scheme!r} (use sqlite:///PATH, "
                                 "http(s)://HOST:PORT, file:PATH, postgresql://, mysql:// or mssql://)")
    db = sqlite_path(uri)
    if db is not None and db.exists():
        if db.is_dir():
            raise TrackingStoreError(f"tracking URI {uri}: {db} is a folder; give a database file, e.g. "
                                     f"sqlite:///{db / 'mlflow.db'}")
        if not db.is_file():
            raise TrackingStoreError(f"tracking URI {uri}: {db} is not a regular file")
        try:
            with open(db, "rb") as fh:
                head = fh.read(len(_SQLITE_MAGIC))
        except OSError as exc:
            raise TrackingStoreError(f"tracking URI {uri}: cannot read {db}: {exc.strerror or exc}") from None
        if head and head != _SQLITE_MAGIC:
            raise TrackingStoreError(f"tracking URI {uri}: {db} is not an SQLite database; give a new file name "
                                     "or an MLflow database")
    return uri


#: Store failures the user can fix (disk, permissions, a damaged database), as SQLite / the OS word them.
_STORE_FAULTS = ("database or disk is full", "no space left on device", "disk quota exceeded",
                 "attempt to write a readonly database", "read-only file system", "unable to open database file",
                 "file is not a database", "database disk image is malformed")


def store_fault(exc: BaseException) -> str | None:
    """The user-fixable store problem behind ``exc`` (anywhere in its cause chain), or None."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        text = str(cur).lower()
        for fault in _STORE_FAULTS:
            if fault in text:
                return fault
        if isinstance(cur, OSError) and cur.errno in (28, 122, 30):  # ENOSPC, EDQUOT, EROFS
            return cur.strerror or str(cur)
        cur = cur.__cause__ or cur.__context__
    return None


def default_tracking_uri(root: str | Path | None = None) -> str:
    root = Path(root or os.getcwd()) / "mlruns"
    return f"sqlite:///{root / 'mlflow.db'}"


def resolve_tracking_uri(tracking_uri: str | None = None) -> str:
    """The store a command uses: the explicit URI, else $MLFLOW_TRACKING_URI, else ./mlruns/mlflow.db."""
    return tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or default_tracking_uri()


def sqlite_path(uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` URI (None for other stores)."""
    return Path(uri[len("sqlite:///"):]) if uri.startswith("sqlite:///") else None


@contextlib.contextmanager
def _file_lock(path: Path, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """An exclusive advisory lock on ``path`` (created if needed), held for the block."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise LockTimeout(f"{path} is locked by another process for more than {timeout:.0f} s") from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _quiet_mlflow() -> None:
    """MLflow's INFO lines (table creation, input-example validation) and warnings are not for users;
    ``--verbose`` (pipelines.modelops) turns them back on."""
    import logging

    if os.environ.get("SCHEDCAST_VERBOSE") != "1":
        logging.getLogger("mlflow").setLevel(logging.ERROR)
        logging.getLogger("alembic").setLevel(logging.ERROR)


#: MLflow 3's experiment-kind tag and the value for classic model development: the UI then opens an
#: experiment on its runs (untagged, MLflow 3 may infer GenAI and open traces / "Detect Issues").
EXPERIMENT_KIND_TAG, EXPERIMENT_KIND = "mlflow.experimentKind", "custom_model_development"


def mark_model_development(client, experiment_id: str, tags: dict | None = None) -> None:
    """Tag an experiment as model development unless it already carries an experiment kind."""
    if EXPERIMENT_KIND_TAG not in (tags or {}):
        client.set_experiment_tag(experiment_id, EXPERIMENT_KIND_TAG, EXPERIMENT_KIND)


@contextlib.contextmanager
def store_errors(uri: str | None = None) -> Iterator[None]:
    """A user-fixable store failure in the block (full disk, read-only, not a database) as one-line
    TrackingStoreError; anything else passes unchanged."""
    try:
        yield
    except TrackingStoreError:
        raise
    except Exception as exc:  # noqa: BLE001 - MLflow / SQLAlchemy wrap these in their own types
        fault = store_fault(exc)
        if fault is None:
            raise
        if uri is None:
            import mlflow

            uri = mlflow.get_tracking_uri()
        raise TrackingStoreError(f"tracking store {uri}: {fault}") from None


def configure(tracking_uri: str | None = None) -> str:
    """Point MLflow at ``tracking_uri`` (or $MLFLOW_TRACKING_URI, or the local sqlite default) and make
    sure the experiment exists (artifacts next to the sqlite file for the local default). A new sqlite
    store is created under a file lock, so concurrent first commands do not race on its tables."""
    import warnings

    import mlflow

    _quiet_mlflow()
    uri = check_tracking_uri(resolve_tracking_uri(tracking_uri))
    db = sqlite_path(uri)
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    lock = _file_lock(db.with_name(db.name + ".lock")) if db is not None else contextlib.nullcontext()
    with lock, warnings.catch_warnings(), store_errors(uri):
        warnings.filterwarnings("ignore", module="sqlalchemy.*")
        warnings.filterwarnings("ignore", message=".*noload.*")
        exp = mlflow.get_experiment_by_name(EXPERIMENT)  # first connection: creates the tables
        if exp is None:
            location = (db.parent / "artifacts").resolve().as_uri() if db is not None else None
            mlflow.create_experiment(EXPERIMENT, artifact_location=location,
                                     tags={EXPERIMENT_KIND_TAG: EXPERIMENT_KIND})
        else:
            mark_model_development(mlflow.MlflowClient(), exp.experiment_id, exp.tags)
        mlflow.MlflowClient().search_registered_models(max_results=1)  # the registry store, same lock
    mlflow.set_experiment(EXPERIMENT)
    return uri


# -- data fingerprints and lineage -------------------------------------------------------------------
def file_fingerprint(path: str | Path) -> str:
    """Full SHA-256 (64 hex digits) of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def frame_fingerprint(frame: pd.DataFrame) -> str:
    """Full SHA-256 of a frame's contents (values and column order; not the index)."""
    import pandas as pd

    return hashlib.sha256(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes()).hexdigest()


def data_fingerprint(source: str | Path | None, frame: pd.DataFrame, time_col: str | None = None) -> dict[str, Any]:
    """File hash (when a file), row count, content hash and date range of the data a model saw."""
    import pandas as pd

    out: dict[str, Any] = {"data_rows": int(len(frame)), "data_hash": frame_fingerprint(frame)}
    if source is not None and Path(source).is_file():
        out["data_file"] = str(source)
        out["data_file_sha256"] = file_fingerprint(source)
    times = frame.index if time_col is None else frame[time_col]
    if len(frame) and (isinstance(times, pd.DatetimeIndex) or pd.api.types.is_datetime64_any_dtype(times)):
        out["data_start"], out["data_end"] = str(pd.Series(times).min()), str(pd.Series(times).max())
    return out


def code_version() -> str:
    root = Path(__file__).resolve().parents[1]
    try:
        sha = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=5).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
        return (sha + ("-dirty" if dirty else "")) or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _python_model_class():
    import mlflow.pyfunc
    import numpy as np
    import pandas as pd

    def predict_frame(self, context, model_input, params=None):
        frame = model_input if isinstance(model_input, pd.DataFrame) else pd.DataFrame(model_input)
        if self.kind == "demand":
            return demand_pyfunc_predict(self.estimator, frame, self.extra)
        if self.columns is not None:
            frame = frame[self.columns]
        return np.asarray(self.estimator.predict(frame))

    # Real objects, not strings: MLflow reads these hints when the class is created (a DataFrame input is
    # a supported hint; without resolvable hints it warns on every logging, in colour).
    predict_frame.__name__ = "predict"
    predict_frame.__annotations__ = {"context": Any, "model_input": pd.DataFrame, "params": dict[str, Any] | None,
                               "return": Any}

    class SchedcastModel(mlflow.pyfunc.PythonModel):
        """A fitted schedcast estimator behind the pyfunc interface: DataFrame of features in,
        predictions out (a DataFrame for forecasters)."""

        def __init__(self, estimator: Any, kind: str, columns: list[str] | None = None,
                     extra: dict | None = None):
            self.estimator, self.kind, self.columns, self.extra = estimator, kind, columns, extra or {}

        predict = predict_frame

    return SchedcastModel


def demand_pyfunc_predict(estimator, frame: pd.DataFrame, extra: dict) -> pd.DataFrame:
    """Serving input for demand models: long rows (time, org, demand) covering at least the look-back
    window; output: one row per org and step with mean and quantiles from the last time on."""
    import pandas as pd

    wide = frame.pivot_table(index=pd.to_datetime(frame["time"]), columns="org", values="demand").sort_index()
    wide = wide.reindex(columns=extra["orgs"])
    attrs = pd.DataFrame(extra.get("attrs", {})) if extra.get("attrs") else None
    horizon = estimator.horizon
    step = pd.Timedelta(extra["freq"])
    future = pd.date_range(wide.index[-1] + step, periods=horizon, freq=step)
    padded = pd.concat([wide, pd.DataFrame(0.0, index=future, columns=wide.columns)])
    fc = estimator.forecast(padded, attrs, [future[0]])
    rows = []
    for j, org in enumerate(fc.orgs):
        for h in range(horizon):
            rows.append({"org": org, "time": future[h], "mean": float(fc.mean[0, j, h]),
                         "q0.9": float(fc.quantile(0.9)[0, j, h]), "q0.95": float(fc.quantile(0.95)[0, j, h])})
    return pd.DataFrame(rows)


@dataclass
class LoggedModel:
    run_id: str
    model_uri: str
    name: str | None
    version: str | None
    aliases: tuple[str, ...] = ()


@dataclass
class DatasetInput:
    """One MLflow dataset input of a training run (``mlflow.log_input``): a frame (a compact view of
    the data: the table's own columns, not engineered features), where it came from, and tags such as
    the full SHA-256, rows, date range and split dates."""
    frame: pd.DataFrame
    name: str
    context: str
    source: str | None = None
    tags: dict[str, str] | None = None


def _loggable(frame: pd.DataFrame) -> pd.DataFrame:
    """Columns MLflow's dataset schema can describe (numbers, strings, naive timestamps)."""
    import pandas as pd

    out = {}
    for c in frame.columns:
        s = frame[c]
        if isinstance(s.dtype, pd.DatetimeTZDtype):
            s = s.dt.tz_convert("UTC").dt.tz_localize(None)
        if pd.api.types.is_bool_dtype(s) or pd.api.types.is_numeric_dtype(s):
            s = s.astype(float)
        elif not pd.api.types.is_datetime64_any_dtype(s):
            s = s.astype(object).where(s.notna(), None).astype(str)
        out[str(c)] = s
    return pd.DataFrame(out, index=frame.index).reset_index(drop=not isinstance(frame.index, pd.DatetimeIndex))


def _log_inputs(inputs: list[DatasetInput]) -> None:
    import mlflow
    import mlflow.data

    for d in inputs:
        frame = _loggable(d.frame)
        source = str(d.source) if d.source else None
        try:
            ds = mlflow.data.from_pandas(frame, source=source, name=d.name,
                                         digest=(d.tags or {}).get("sha256", "")[:36] or None)
        except Exception:  # noqa: BLE001 - an unusual source string: keep it in the tags, not the source
            ds = mlflow.data.from_pandas(frame, name=d.name)
        mlflow.log_input(ds, context=d.context, tags={k: str(v) for k, v in (d.tags or {}).items()})


def log_estimator(estimator: Any, *, kind: str, X_example: pd.DataFrame, params: dict[str, Any],
                  metrics: dict[str, float], fingerprint: dict[str, Any], figures: dict[str, Any] | None = None,
                  register_as: str | None = None, alias: str | None = CHALLENGER, columns: list[str] | None = None,
                  extra: dict | None = None, tags: dict[str, str] | None = None, run_name: str | None = None,
                  artifacts: dict[str, str] | None = None, python_model: Any = None,
                  input_example: pd.DataFrame | None = None, signature: Any = None,
                  model_artifacts: dict[str, str] | None = None, datasets: list[DatasetInput] | None = None,
                  description: str | None = None, version_tags: dict[str, str] | None = None,
                  champion_if_none: bool = False) -> LoggedModel:
    """One MLflow run: params, metrics, fingerprint, dataset inputs, code version, figures and the pyfunc
    model; optionally registered under ``register_as`` with ``alias`` (and, with ``champion_if_none``,
    also as champion when the model has none yet).

    ``python_model`` / ``input_example`` / ``signature`` / ``model_artifacts`` replace the default
    feature-frame pyfunc (e.g. models.serving's raw-record model). Registration and aliasing are one
    guarded step under the model's alias lock: if aliasing fails or the process is interrupted after the
    version exists, the version is deleted again. An exception (or SIGTERM turned into one by the CLI)
    ends the run as FAILED.
    """
    import numpy as np

    import warnings

    import mlflow
    from mlflow.models import infer_signature

    _quiet_mlflow()
    if python_model is None:
        python_model = _python_model_class()(estimator, kind, columns, extra)
        example = X_example if kind == "demand" else X_example.head(5)  # forecasters need a full look-back
        ints = example.select_dtypes("integer").columns
        example = example.astype({c: float for c in ints})  # integer schemas reject missing values later
    else:
        example = input_example if input_example is not None else X_example.head(5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # schema inference notices (integer columns, missing values)
        if signature is None:
            signature = infer_signature(example, python_model.predict(None, example))
    code = code_version()
    with mlflow.start_run(run_name=run_name or f"{kind}-{type(estimator).__name__}") as run:
        mlflow.set_tags({"schedcast.kind": kind, "schedcast.code_version": code,
                         "schedcast.estimator": type(estimator).__name__, **(tags or {})})
        mlflow.log_params({k: (v if isinstance(v, (int, float, str, bool)) else json.dumps(v, default=str))
                           for k, v in params.items()})
        mlflow.log_params({f"fingerprint.{k}": v for k, v in fingerprint.items()})
        mlflow.log_metrics({k: float(v) for k, v in metrics.items() if v is not None and np.isfinite(v)})
        if datasets:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _log_inputs(datasets)
        for name, fig in (figures or {}).items():
            mlflow.log_figure(fig, f"plots/{name}.png")
        for name, path in (artifacts or {}).items():
            mlflow.log_artifact(path, artifact_path=name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # cloudpickle and input-example notices
            info = mlflow.pyfunc.log_model(name="model", python_model=python_model, signature=signature,
                                           input_example=example, pip_requirements=PIP_REQUIREMENTS,
                                           artifacts=model_artifacts)
        version, aliases = None, ()
        if register_as:
            version, aliases = _register(info.model_uri, register_as, run.info.run_id, alias, champion_if_none,
                                         metrics, description, {"code_version": code, **(version_tags or {})})
        return LoggedModel(run.info.run_id, info.model_uri, register_as, version, aliases)


def _register(model_uri: str, name: str, run_id: str, alias: str | None, champion_if_none: bool,
              metrics: dict[str, float], description: str | None, version_tags: dict[str, str]):
    """Create the version, tag it and set its aliases as one step; delete the version on any failure."""
    import numpy as np

    import mlflow

    client = mlflow.MlflowClient()
    import io

    with alias_lock(name):
        chatter = io.StringIO()  # "Successfully registered ..." lines on stderr
        with (contextlib.nullcontext() if os.environ.get("SCHEDCAST_VERBOSE") == "1"
              else contextlib.redirect_stderr(chatter)):
            mv = mlflow.register_model(model_uri, name)
        version = str(mv.version)
        try:
            # A version carries what identifies it (run, algorithm, data hash, code version, its primary
            # metric and the best baseline's); every other metric stays on the run, one click away.
            tags = {"run_id": run_id, **version_tags}
            primary = version_tags.get("primary_metric")
            value = metrics.get(primary) if primary else None
            if value is not None and np.isfinite(value):
                tags[f"metric.{primary}"] = f"{value:.6g}"
            for k, v in tags.items():
                client.set_model_version_tag(name, version, k, str(v))
            if description:
                client.update_model_version(name, version, description=description)
            aliases = [a for a in (alias,) if a]
            if champion_if_none and alias != CHAMPION and alias_version(name, CHAMPION) is None:
                aliases.append(CHAMPION)
            for a in aliases:
                client.set_registered_model_alias(name, a, version)
        except BaseException:
            with contextlib.suppress(Exception):
                client.delete_model_version(name, version)
            raise
    return version, tuple(aliases)


# -- aliases -----------------------------------------------------------------------------------------
def alias_version(name: str, alias: str) -> str | None:
    """The version an alias points at, or None."""
    import mlflow
    from mlflow.exceptions import MlflowException

    try:
        return str(mlflow.MlflowClient().get_model_version_by_alias(name, alias).version)
    except MlflowException:
        return None


def set_alias(name: str, alias: str, version: str) -> None:
    import mlflow

    mlflow.MlflowClient().set_registered_model_alias(name, alias, version)


LEASE_TAG = "schedcast.alias_lease"


@contextlib.contextmanager
def alias_lock(name: str, timeout: float = LOCK_TIMEOUT_S, lease_s: float = 300.0,
               lease: bool | None = None) -> Iterator[None]:
    """Serialise alias changes of registered model ``name`` across processes.

    sqlite store: an exclusive file lock beside the database (``mlflow.db.alias-NAME.lock``). Other
    stores: a lease in a registered-model tag (token + expiry), written and read back; an expired lease
    is taken over. The lease is best effort (a tag store has no atomic compare-and-set), so the caller
    still re-reads the alias under it before moving it.
    """
    import mlflow

    db = sqlite_path(mlflow.get_tracking_uri())
    if db is not None and not lease:  # ``lease=True`` forces the tag lease (tests use it on sqlite)
        with _file_lock(db.with_name(f"{db.name}.alias-{name}.lock"), timeout):
            yield
        return
    from mlflow.exceptions import MlflowException

    client = mlflow.MlflowClient()
    with contextlib.suppress(MlflowException):
        client.create_registered_model(name)
    token, deadline = uuid.uuid4().hex, time.monotonic() + timeout
    while True:
        held = client.get_registered_model(name).tags.get(LEASE_TAG, "")
        expired = not held or float(held.split()[-1]) < time.time()
        if expired:
            try:
                client.set_registered_model_tag(name, LEASE_TAG, f"{token} {time.time() + lease_s:.0f}")
            except MlflowException:  # another process wrote the tag at the same moment: it may hold it
                pass
            time.sleep(0.2)
            if client.get_registered_model(name).tags.get(LEASE_TAG, "").startswith(token):
                break
        if time.monotonic() > deadline:
            raise LockTimeout(f"the alias lease of model {name!r} is held by another process ({held})")
        time.sleep(0.5)
    try:
        yield
    finally:
        with contextlib.suppress(MlflowException):
            if client.get_registered_model(name).tags.get(LEASE_TAG, "").startswith(token):
                client.delete_registered_model_tag(name, LEASE_TAG)


def compare_and_set_alias(name: str, alias: str, expected: str | None, version: str) -> bool:
    """Point ``alias`` at ``version`` only if it still points at ``expected`` (None: unset); under
    :func:`alias_lock`. Returns whether the alias was moved."""
    with alias_lock(name):
        if alias_version(name, alias) != expected:
            return False
        set_alias(name, alias, version)
        return True


# -- loading -----------------------------------------------------------------------------------------
_WARNED: set[str] = set()


def is_store_uri(uri: str) -> bool:
    """Whether ``uri`` is resolved in the configured tracking store (models:/..., runs:/...)."""
    return uri.startswith(("models:/", "runs:/"))


def trust_local_from_env() -> bool:
    return _TRUST[0] or os.environ.get(TRUST_ENV, "").strip().lower() in ("1", "true", "yes", "on")


# -- which stores are "configured" -------------------------------------------------------------------
#: Stores the user named for this process (``--tracking-uri``), on top of $MLFLOW_TRACKING_URI and the
#: ./mlruns default; and whether the user passed --trust-local-models (see :func:`trust_scope`).
_ALLOWED: set[str] = set()
_TRUST = [False]
#: Inside a command (a trust_scope), $MLFLOW_TRACKING_URI as it was when the command started: MLflow's
#: own set_tracking_uri writes that variable, so reading it later would trust whatever was set since.
_SCOPED = [False]


def _norm_store(uri: str) -> str:
    """A store URI in one spelling: sqlite / file paths resolved, trailing slashes dropped."""
    text = str(uri).strip()
    for scheme in ("sqlite:///", "file://"):
        if text.startswith(scheme):
            return scheme + str(Path(text[len(scheme):] or "/").resolve())
    if "://" not in text and text:
        return "file://" + str(Path(text).resolve())
    return text.rstrip("/")


def configured_stores() -> set[str]:
    """The stores the user configured: --tracking-uri of this command, $MLFLOW_TRACKING_URI, ./mlruns."""
    env = None if _SCOPED[0] else os.environ.get("MLFLOW_TRACKING_URI")
    return {_norm_store(u) for u in (*_ALLOWED, env, default_tracking_uri()) if u}


@contextlib.contextmanager
def trust_scope(tracking_uri: str | None = None, trust_local: bool = False) -> Iterator[None]:
    """For the block: ``tracking_uri`` counts as configured (the command's --tracking-uri) and
    ``trust_local`` trusts other stores and local models (--trust-local-models). A worker process that
    runs cells of several commands gets each command's settings, and they do not outlive it."""
    saved = (set(_ALLOWED), _TRUST[0], _SCOPED[0])
    if not _SCOPED[0] and os.environ.get("MLFLOW_TRACKING_URI"):
        _ALLOWED.add(os.environ["MLFLOW_TRACKING_URI"])
    if tracking_uri:
        _ALLOWED.add(tracking_uri)
    _TRUST[0] = _TRUST[0] or bool(trust_local)
    _SCOPED[0] = True
    try:
        yield
    finally:
        _ALLOWED.clear()
        _ALLOWED.update(saved[0])
        _TRUST[0], _SCOPED[0] = saved[1], saved[2]


def check_store(uri: str | None, what: str) -> None:
    """Refuse (UntrustedModelError, one line, exit 2) a tracking store the user did not configure:
    models in it are pickles, and a parameter or spec value that names a store elsewhere
    (``tracking_uri=sqlite:////elsewhere/evil.db``) would run whatever that store holds."""
    if not uri or trust_local_from_env() or _norm_store(uri) in configured_stores():
        return
    raise UntrustedModelError(
        f"refusing {what} {uri}: it is not the tracking store you configured (--tracking-uri, "
        f"$MLFLOW_TRACKING_URI or ./mlruns), and a model loaded from it runs its code; pass "
        f"--tracking-uri {uri}, or --trust-local-models / {TRUST_ENV}=1 if you trust it")


def load(model_uri: str, *, trust_local: bool = False):
    """A pyfunc model from 'models:/NAME@ALIAS', 'models:/NAME/VERSION' or 'runs:/...' in the configured
    store; any other URI (a local directory, file://, s3://...) only with ``trust_local`` or
    $SCHEDCAST_TRUST_LOCAL_MODELS=1 (see the trust model above). Unknown models raise
    ModelNotFoundError (one line)."""
    import mlflow
    import mlflow.pyfunc
    from mlflow.exceptions import MlflowException

    _quiet_mlflow()
    _check_version(model_uri)
    if is_store_uri(model_uri) and not trust_local:
        from mlflow.tracking._tracking_service.utils import is_tracking_uri_set

        if not is_tracking_uri_set():  # never configured in this process: the user's store, not MLflow's default
            uri = resolve_tracking_uri(None)
            db = sqlite_path(uri)
            if db is not None and not db.is_file():  # not created by a lookup: nothing is written
                raise ModelNotFoundError(f"model {model_uri}: no model registry at {uri} (train one first, or "
                                         "give --tracking-uri)")
            mlflow.set_tracking_uri(uri)
            mlflow.set_registry_uri(uri)
        check_store(mlflow.get_registry_uri() or mlflow.get_tracking_uri(), f"to load {model_uri} from the store")
    if not is_store_uri(model_uri):
        if not (trust_local or trust_local_from_env()):
            raise UntrustedModelError(
                f"refusing to load the model at {model_uri}: a model is a pickle and loading it runs its code; "
                f"only models:/ and runs:/ URIs of the configured store load by default. If you trust this "
                f"file, pass --trust-local-models or set {TRUST_ENV}=1")
        if model_uri not in _WARNED:
            _WARNED.add(model_uri)
            print(f"schedcast: warning: loading the model at {model_uri} runs code from its pickle "
                  "(trusted explicitly)", file=sys.stderr)
        local = model_uri[len("file://"):] if model_uri.startswith("file://") else model_uri
        if "://" not in local and not Path(local).exists():
            raise ModelNotFoundError(f"model {model_uri} not found: no such file or directory")
    try:
        return mlflow.pyfunc.load_model(model_uri)
    except MlflowException as exc:
        if exc.error_code in ("RESOURCE_DOES_NOT_EXIST", "INVALID_PARAMETER_VALUE", "NOT_FOUND") \
                or "not found" in str(exc).lower() or "does not exist" in str(exc).lower():
            raise ModelNotFoundError(f"model {model_uri} is not registered in {mlflow.get_tracking_uri()} "
                                     f"(see `schedcast models`)") from None
        raise
    except OSError as exc:
        raise ModelNotFoundError(f"model {model_uri} cannot be read: {exc}") from None


def _check_version(model_uri: str) -> None:
    """``models:/NAME/VERSION`` with a version no store can hold (beyond 64 bits) names nothing."""
    if model_uri.startswith("models:/"):
        tail = model_uri[len("models:/"):].rstrip("/").rsplit("/", 1)
        if len(tail) == 2 and tail[1].isdigit() and int(tail[1]) > MAX_VERSION:
            raise ModelNotFoundError(f"model {model_uri} is not registered: version {tail[1]} is beyond any "
                                     "version number a store holds (see `schedcast models`)")


def unwrap(pyfunc_model) -> Any:
    """The schedcast estimator inside a loaded pyfunc model."""
    return pyfunc_model.unwrap_python_model().estimator


def version_info(name: str, alias_or_version: str) -> dict[str, Any]:
    """Version number, run id and the run's tags / params for 'NAME@ALIAS' or 'NAME/VERSION'."""
    import mlflow

    client = mlflow.MlflowClient()
    if alias_or_version.isdigit():
        mv = client.get_model_version(name, alias_or_version)
    else:
        mv = client.get_model_version_by_alias(name, alias_or_version)
    run = client.get_run(mv.run_id) if mv.run_id else None
    return {"version": str(mv.version), "run_id": mv.run_id, "tags": dict(run.data.tags) if run else {},
            "params": dict(run.data.params) if run else {}, "metrics": dict(run.data.metrics) if run else {},
            "version_tags": dict(mv.tags or {})}


# -- listing -----------------------------------------------------------------------------------------
MODEL_COLUMNS = ("model", "version", "aliases", "algorithm", "primary", "data", "created")


def list_models(tracking_uri: str | None = None) -> list[dict[str, Any]]:
    """One row per registered model version (newest first per model): version, aliases, algorithm,
    primary metric (with the best baseline's), data and date. A sqlite store is read with plain SQL
    (read-only; no mlflow import: `schedcast models` answers in well under 2 s), an http(s) server through
    its REST API, anything else through the MLflow client."""
    uri = check_tracking_uri(resolve_tracking_uri(tracking_uri))
    db = sqlite_path(uri)
    if db is not None:
        return _list_sqlite(db)
    if uri.startswith(("http://", "https://")):
        return _list_rest(uri)
    return _list_client(uri)


def _row(name: str, version: str, aliases: list[str], tags: dict[str, str], created_ms: int | None,
         description: str | None) -> dict[str, Any]:
    import datetime as dt

    primary = tags.get("primary_metric")
    value = tags.get(f"metric.{primary}") if primary else None
    base = tags.get("best_baseline")
    prim = f"{primary} {value}" if primary and value else ""
    if prim and base:
        prim += f" (baseline {base})"
        if loses_to_baseline(value, base):
            prim += " WORSE THAN BASELINE"
    created = (dt.datetime.fromtimestamp(created_ms / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M")
               if created_ms else "")
    return {"model": name, "version": str(version), "aliases": ",".join(sorted(aliases)),
            "algorithm": tags.get("algorithm", ""), "primary": prim, "data": tags.get("data", ""),
            "created": created, "description": description or ""}


def loses_to_baseline(value: str | float | None, best_baseline: str | None) -> bool:
    """Whether a version's primary metric (lower is better for every task) is worse than its best
    baseline's, from the version tags ``metric.<primary>`` and ``best_baseline`` ("<name> <value>")."""
    try:
        return float(value) > float(str(best_baseline).split()[-1])  # type: ignore[arg-type]
    except (TypeError, ValueError, IndexError):
        return False


def _list_sqlite(db: Path) -> list[dict[str, Any]]:
    import sqlite3

    if not db.exists():
        return []
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        tables = {r[0] for r in con.execute("select name from sqlite_master where type='table'")}
        if "model_versions" not in tables:
            return []
        aliases: dict[tuple[str, str], list[str]] = {}
        if "registered_model_aliases" in tables:
            for name, alias, version in con.execute("select name, alias, version from registered_model_aliases"):
                aliases.setdefault((name, str(version)), []).append(alias)
        tags: dict[tuple[str, str], dict[str, str]] = {}
        for name, version, key, value in con.execute("select name, version, key, value from model_version_tags"):
            tags.setdefault((name, str(version)), {})[key] = value
        rows = []
        for name, version, created, desc, stage in con.execute(
                "select name, version, creation_time, description, current_stage from model_versions "
                "order by name, version desc"):
            if stage == "Deleted_Internal":
                continue
            key = (name, str(version))
            rows.append(_row(name, str(version), aliases.get(key, []), tags.get(key, {}), created, desc))
        return rows
    finally:
        con.close()


def _list_rest(uri: str) -> list[dict[str, Any]]:
    import urllib.parse
    import urllib.request

    def get(path: str, **query) -> dict:
        url = f"{uri.rstrip('/')}/api/2.0/mlflow/{path}?{urllib.parse.urlencode(query)}"
        with urllib.request.urlopen(url, timeout=10) as r:
            return json.loads(r.read())

    rows = []
    for rm in get("registered-models/search", max_results=1000).get("registered_models", []):
        by_version: dict[str, list[str]] = {}
        for a in rm.get("aliases", []):
            by_version.setdefault(str(a["version"]), []).append(a["alias"])
        versions = get("model-versions/search", filter=f"name='{rm['name']}'", max_results=1000)
        for mv in sorted(versions.get("model_versions", []), key=lambda v: -int(v["version"])):
            tags = {t["key"]: t["value"] for t in mv.get("tags", [])}
            rows.append(_row(rm["name"], mv["version"], by_version.get(str(mv["version"]), []), tags,
                             int(mv.get("creation_timestamp", 0)) or None, mv.get("description")))
    return rows


def _list_client(uri: str) -> list[dict[str, Any]]:
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)
    rows = []
    for rm in client.search_registered_models():
        by_version: dict[str, list[str]] = {}
        for a, v in (rm.aliases or {}).items():
            by_version.setdefault(str(v), []).append(a)
        for mv in sorted(client.search_model_versions(f"name='{rm.name}'"), key=lambda v: -int(v.version)):
            rows.append(_row(rm.name, str(mv.version), by_version.get(str(mv.version), []), dict(mv.tags or {}),
                             mv.creation_timestamp, mv.description))
    return rows
