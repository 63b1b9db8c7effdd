"""MLflow glue: tracking location, logging an estimator as a pyfunc model with its signature, input
example, metrics, data fingerprint and plots, and the registry (names, champion / challenger aliases).

The default tracking store needs no server: ``sqlite:///mlruns/mlflow.db`` with artifacts under
``mlruns/artifacts`` in the working directory. ``--tracking-uri`` (or $MLFLOW_TRACKING_URI) points at a
real server. mlflow is imported lazily: nothing here costs time unless a model is logged or loaded.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

EXPERIMENT = "schedcast"
CHAMPION, CHALLENGER = "champion", "challenger"
#: What a logged model needs at serving time (explicit: faster logging, no environment inference).
PIP_REQUIREMENTS = ["schedcast", "mlflow", "pandas", "numpy", "scikit-learn", "lightgbm", "interpret-core",
                    "cloudpickle"]


def default_tracking_uri(root: str | Path | None = None) -> str:
    root = Path(root or os.getcwd()) / "mlruns"
    return f"sqlite:///{root / 'mlflow.db'}"


def configure(tracking_uri: str | None = None) -> str:
    """Point MLflow at ``tracking_uri`` (or $MLFLOW_TRACKING_URI, or the local sqlite default) and make
    sure the experiment exists (artifacts next to the sqlite file for the local default)."""
    import mlflow

    uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or default_tracking_uri()
    if uri.startswith("sqlite:///"):
        Path(uri[len("sqlite:///"):]).parent.mkdir(parents=True, exist_ok=True)
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    if mlflow.get_experiment_by_name(EXPERIMENT) is None:
        location = None
        if uri.startswith("sqlite:///"):
            location = (Path(uri[len("sqlite:///"):]).parent / "artifacts").resolve().as_uri()
        mlflow.create_experiment(EXPERIMENT, artifact_location=location)
    mlflow.set_experiment(EXPERIMENT)
    return uri


def file_fingerprint(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:16]


def frame_fingerprint(frame: pd.DataFrame) -> str:
    return hashlib.sha256(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes()).hexdigest()[:16]


def data_fingerprint(source: str | Path | None, frame: pd.DataFrame, time_col: str | None = None) -> dict[str, Any]:
    """File hash (when a file), row count, content hash and date range of the data a model saw."""
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
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain"], capture_output=True, text=True,
                               timeout=5).stdout.strip()
        return (sha + ("-dirty" if dirty else "")) or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _python_model_class():
    import mlflow.pyfunc

    class SchedcastModel(mlflow.pyfunc.PythonModel):
        """A fitted schedcast estimator behind the pyfunc interface: DataFrame of features in,
        predictions out (a DataFrame for forecasters)."""

        def __init__(self, estimator: Any, kind: str, columns: list[str] | None = None,
                     extra: dict | None = None):
            self.estimator, self.kind, self.columns, self.extra = estimator, kind, columns, extra or {}

        def predict(self, context, model_input, params=None):
            frame = model_input if isinstance(model_input, pd.DataFrame) else pd.DataFrame(model_input)
            if self.kind == "demand":
                return demand_pyfunc_predict(self.estimator, frame, self.extra)
            if self.columns is not None:
                frame = frame[self.columns]
            return np.asarray(self.estimator.predict(frame))

    return SchedcastModel


def demand_pyfunc_predict(estimator, frame: pd.DataFrame, extra: dict) -> pd.DataFrame:
    """Serving input for demand models: long rows (time, org, demand) covering at least the look-back
    window; output: one row per org and step with mean and quantiles from the last time on."""
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


def log_estimator(estimator: Any, *, kind: str, X_example: pd.DataFrame, params: dict[str, Any],
                  metrics: dict[str, float], fingerprint: dict[str, Any], figures: dict[str, Any] | None = None,
                  register_as: str | None = None, alias: str | None = CHALLENGER, columns: list[str] | None = None,
                  extra: dict | None = None, tags: dict[str, str] | None = None, run_name: str | None = None,
                  artifacts: dict[str, str] | None = None) -> LoggedModel:
    """One MLflow run: params, metrics, fingerprint, code version, figures and the pyfunc model; optionally
    registered under ``register_as`` with ``alias``."""
    import mlflow
    from mlflow.models import infer_signature

    import logging
    import warnings

    logging.getLogger("mlflow").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", message=".*type hints to the `predict` method.*")
    warnings.filterwarnings("ignore", message=".*Inferred schema contains integer column.*")
    SchedcastModel = _python_model_class()
    python_model = SchedcastModel(estimator, kind, columns, extra)
    example = X_example if kind == "demand" else X_example.head(5)  # forecasters need a full look-back
    ints = example.select_dtypes("integer").columns
    example = example.astype({c: float for c in ints})  # integer schemas reject missing values later
    out = python_model.predict(None, example)
    signature = infer_signature(example, out)
    with mlflow.start_run(run_name=run_name or f"{kind}-{type(estimator).__name__}") as run:
        mlflow.set_tags({"schedcast.kind": kind, "schedcast.code_version": code_version(),
                         "schedcast.estimator": type(estimator).__name__, **(tags or {})})
        mlflow.log_params({k: (v if isinstance(v, (int, float, str, bool)) else json.dumps(v, default=str))
                           for k, v in params.items()})
        mlflow.log_params({f"fingerprint.{k}": v for k, v in fingerprint.items()})
        mlflow.log_metrics({k: float(v) for k, v in metrics.items() if v is not None and np.isfinite(v)})
        for name, fig in (figures or {}).items():
            mlflow.log_figure(fig, f"plots/{name}.png")
        for name, path in (artifacts or {}).items():
            mlflow.log_artifact(path, artifact_path=name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # type-hint and cloudpickle notices
            info = mlflow.pyfunc.log_model(name="model", python_model=python_model, signature=signature,
                                           input_example=example, pip_requirements=PIP_REQUIREMENTS)
        version = None
        if register_as:
            mv = mlflow.register_model(info.model_uri, register_as)
            version = str(mv.version)
            client = mlflow.MlflowClient()
            client.set_model_version_tag(register_as, version, "run_id", run.info.run_id)
            for k, v in metrics.items():
                if v is not None and np.isfinite(v):
                    client.set_model_version_tag(register_as, version, f"metric.{k}", f"{v:.6g}")
            if alias:
                client.set_registered_model_alias(register_as, alias, version)
        return LoggedModel(run.info.run_id, info.model_uri, register_as, version)


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


def load(model_uri: str):
    """A pyfunc model from 'models:/NAME@ALIAS', 'models:/NAME/VERSION' or 'runs:/...'."""
    import mlflow.pyfunc

    return mlflow.pyfunc.load_model(model_uri)


def unwrap(pyfunc_model) -> Any:
    """The schedcast estimator inside a loaded pyfunc model."""
    return pyfunc_model.unwrap_python_model().estimator


def list_models() -> list[dict[str, Any]]:
    import mlflow

    client = mlflow.MlflowClient()
    out = []
    for rm in client.search_registered_models():
        out.append({"name": rm.name, "aliases": dict(rm.aliases) if rm.aliases else {},
                    "latest": max((int(v.version) for v in client.search_model_versions(f"name='{rm.name}'")),
                                  default=None)})
    return out
