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
import json
import os
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

# The store, trust, provenance and version-table halves live in their own modules; every name stays
# importable from here (``from models.registry import configure, list_models, ...``).
from models.provenance import code_version, data_fingerprint, file_fingerprint, frame_fingerprint
from models.store import (_ALLOWED, _SCOPED, _SQLITE_MAGIC, _STORE_FAULTS, _TRUST, EXPERIMENT, EXPERIMENT_KIND,
                          EXPERIMENT_KIND_TAG, LOCK_TIMEOUT_S, MAX_VERSION, STORE_SCHEMES, TRUST_ENV, LockTimeout,
                          ModelNotFoundError, TrackingStoreError, UntrustedModelError, _file_lock, _norm_store,
                          _quiet_mlflow, check_store, check_tracking_uri, configure, configured_stores,
                          default_tracking_uri, is_store_uri, mark_model_development, resolve_tracking_uri,
                          sqlite_path, store_errors, store_fault, trust_local_from_env, trust_scope)
from models.versions import (MODEL_COLUMNS, _list_client, _list_rest, _list_sqlite, _row, list_models,
                             loses_to_baseline)

if TYPE_CHECKING:
    import pandas as pd

CHAMPION, CHALLENGER = "champion", "challenger"
#: What a logged model needs at serving time (explicit: faster logging, no environment inference).
PIP_REQUIREMENTS = ["schedcast", "mlflow", "pandas", "numpy", "scikit-learn", "lightgbm", "interpret-core",
                    "cloudpickle"]


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


__all__ = ["CHALLENGER", "CHAMPION", "EXPERIMENT", "EXPERIMENT_KIND", "EXPERIMENT_KIND_TAG", "LEASE_TAG",
           "LOCK_TIMEOUT_S", "MAX_VERSION", "MODEL_COLUMNS", "PIP_REQUIREMENTS", "STORE_SCHEMES", "TRUST_ENV",
           "DatasetInput", "LockTimeout", "LoggedModel", "ModelNotFoundError", "TrackingStoreError",
           "UntrustedModelError", "alias_lock", "alias_version", "check_store", "check_tracking_uri", "code_version",
           "compare_and_set_alias", "configure", "configured_stores", "data_fingerprint", "default_tracking_uri",
           "demand_pyfunc_predict", "file_fingerprint", "frame_fingerprint", "is_store_uri", "list_models", "load",
           "log_estimator", "loses_to_baseline", "mark_model_development", "resolve_tracking_uri", "set_alias",
           "sqlite_path", "store_errors", "store_fault", "trust_local_from_env", "trust_scope", "unwrap",
           "version_info"]
