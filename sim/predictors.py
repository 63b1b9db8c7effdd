"""Predictors reach policies through one interface: ``predict(jobs: DataFrame) -> ndarray`` of durations.

Predictions are made once per job, from what is known at submission, before the replay starts (no
model inference inside the event loop). Online learners that need completions live in the policy
(e.g. QSSF's history predictor).

Every predictor also says what it is (``describe() -> dict``), so that a result folder records the
exact model that drove a run: a registry alias is resolved to its version and run id when the model
is loaded, and that version (not whatever the alias points at later) is the one used.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pandas as pd


@runtime_checkable
class Predictor(Protocol):
    def predict(self, jobs: pd.DataFrame) -> np.ndarray: ...


class OraclePredictor:
    """The true duration: the upper bound of what any model can give."""

    name = "oracle"

    def predict(self, jobs: pd.DataFrame) -> np.ndarray:
        return jobs["duration"].to_numpy(dtype=float)

    def describe(self) -> dict[str, Any]:
        return {"kind": "oracle"}


class NoisyOraclePredictor:
    """True duration x exp(N(0, sigma^2)): seeded multiplicative log-normal error, median-unbiased.

    sigma = 0.5 puts about two thirds of predictions within a factor 1.65 of the truth.
    """

    def __init__(self, sigma: float, seed: int = 0):
        if sigma < 0:
            raise ValueError("sigma must be >= 0")
        self.sigma, self.seed = float(sigma), int(seed)
        self.name = f"noisy-oracle(sigma={sigma:g})"

    def predict(self, jobs: pd.DataFrame) -> np.ndarray:
        rng = np.random.default_rng(self.seed)
        noise = rng.normal(0.0, self.sigma, size=len(jobs))
        return jobs["duration"].to_numpy(dtype=float) * np.exp(noise)

    def describe(self) -> dict[str, Any]:
        return {"kind": "noisy-oracle", "sigma": self.sigma, "seed": self.seed}


class _ModelBacked:
    """Shared by model-backed predictors: the same job frame asked again (one replay per policy) is
    answered from the last result instead of recomputing features and calling the model."""

    _last: tuple[int, int, np.ndarray] | None = None  # (id, rows, predictions) of the last frame

    def predict(self, jobs: pd.DataFrame) -> np.ndarray:
        if self._last is not None and self._last[:2] == (id(jobs), len(jobs)):
            return self._last[2]
        out = self._predict(jobs)
        self._last = (id(jobs), len(jobs), out)
        return out

    def _predict(self, jobs: pd.DataFrame) -> np.ndarray:  # pragma: no cover - interface
        raise NotImplementedError


def parse_model_uri(uri: str) -> dict[str, str]:
    """'models:/NAME@ALIAS' -> {name, alias}; 'models:/NAME/VERSION' -> {name, version};
    'runs:/ID/PATH' -> {run_id, path}. Raises ValueError naming the expected forms."""
    if uri.startswith("models:/"):
        rest = uri[len("models:/"):]
        if "@" in rest:
            name, _, alias = rest.partition("@")
            if name and alias and "/" not in alias:
                return {"name": name, "alias": alias}
        else:
            name, _, version = rest.partition("/")
            if name and version:
                return {"name": name, "version": version}
    elif uri.startswith("runs:/"):
        run_id, _, path = uri[len("runs:/"):].partition("/")
        if run_id and path:
            return {"run_id": run_id, "path": path}
    raise ValueError(f"bad model URI {uri!r}: use models:/NAME@ALIAS, models:/NAME/VERSION or runs:/RUN_ID/PATH")


class ModelPredictor(_ModelBacked):
    """A duration model from the MLflow registry ('models:/duration@champion', 'models:/NAME/3',
    'runs:/ID/model'), fed the same job features it was trained on (features.duration), computed from
    the replayed trace's own past. An alias is resolved once (``resolve()``) and the resolved version
    is what is loaded and recorded."""

    def __init__(self, uri: str, tracking_uri: str | None = None):
        self.uri, self.tracking_uri, self.name = uri, tracking_uri, uri
        self.parts = parse_model_uri(uri)
        self._model = None
        self._resolved: dict[str, Any] | None = None

    def resolve(self) -> dict[str, Any]:
        """Look the model up in the registry (no model is loaded): name, alias, version, run id, source.
        A missing registry, model, alias or version is a ValueError that says which."""
        if self._resolved is not None:
            return self._resolved
        import os

        uri = self.tracking_uri or os.environ.get("MLFLOW_TRACKING_URI")
        if uri is None:
            from models.registry import default_tracking_uri

            uri = default_tracking_uri()
        if uri.startswith("sqlite:///") and not Path(uri[len("sqlite:///"):]).exists():
            raise ValueError(f"model {self.uri}: no model registry at {uri} (train one first, e.g. "
                             "`schedcast train duration`, or give --tracking-uri)")
        import mlflow
        from mlflow.exceptions import MlflowException

        mlflow.set_tracking_uri(uri)
        mlflow.set_registry_uri(uri)
        client = mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)
        info: dict[str, Any] = {"kind": "mlflow-model", "uri": self.uri, "tracking_uri": uri, **self.parts}
        try:
            if "run_id" in self.parts:
                client.get_run(self.parts["run_id"])
                info["load_uri"] = self.uri
            else:
                if "alias" in self.parts:
                    mv = client.get_model_version_by_alias(self.parts["name"], self.parts["alias"])
                else:
                    mv = client.get_model_version(self.parts["name"], self.parts["version"])
                info.update(version=str(mv.version), run_id=mv.run_id, source=mv.source,
                            load_uri=f"models:/{mv.name}/{mv.version}")
        except MlflowException as exc:
            reason = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
            raise ValueError(f"model {self.uri} is not available in {uri}: {reason}") from None
        self._resolved = info
        return info

    def describe(self) -> dict[str, Any]:
        return dict(self.resolve())

    def _predict(self, jobs: pd.DataFrame) -> np.ndarray:
        from features.duration import duration_features
        from models.registry import load

        from mlflow.exceptions import MlflowException

        info = self.resolve()
        try:
            if self._model is None:
                self._model = load(info["load_uri"])
            X = duration_features(jobs)
            schema = self._model.metadata.get_input_schema()
            if schema is not None:
                X = X[[c for c in schema.input_names() if c in X.columns]]
            out = self._model.predict(X)
        except MlflowException as exc:
            reason = str(exc).rsplit("Error:", 1)[-1].strip()[:500]
            raise ValueError(f"model {self.uri} cannot predict these jobs: {reason}") from None
        return np.maximum(np.asarray(out, dtype=float), 0.0)


class RestPredictor(_ModelBacked):
    """A duration model behind an `mlflow models serve` endpoint (POST .../invocations)."""

    def __init__(self, url: str, batch: int = 5000, timeout: float = 120.0):
        self.url = url if url.rstrip("/").endswith("invocations") else url.rstrip("/") + "/invocations"
        self.batch, self.timeout, self.name = batch, timeout, url

    def describe(self) -> dict[str, Any]:
        return {"kind": "rest", "url": self.url}

    def _predict(self, jobs: pd.DataFrame) -> np.ndarray:
        import json
        import urllib.error
        import urllib.request

        from features.duration import duration_features

        X = duration_features(jobs)
        out = []
        for i in range(0, len(X), self.batch):
            part = X.iloc[i: i + self.batch]
            body = {"dataframe_split": json.loads(part.to_json(orient="split", index=False))}
            req = urllib.request.Request(self.url, data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    payload = json.loads(resp.read())
            except urllib.error.HTTPError as exc:
                detail = exc.read()[:300].decode("utf-8", "replace").replace("\n", " ")
                raise ValueError(f"model server {self.url} answered HTTP {exc.code}: {detail}") from None
            except (urllib.error.URLError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                raise ValueError(f"cannot reach the model server at {self.url}: {reason} (is `mlflow models "
                                 "serve` running there?)") from None
            except json.JSONDecodeError:
                raise ValueError(f"model server {self.url} did not answer with JSON") from None
            preds = payload["predictions"] if isinstance(payload, dict) and "predictions" in payload else payload
            if not isinstance(preds, list):
                raise ValueError(f"model server {self.url} answered without a list of predictions")
            try:
                out.extend(float(p) for p in preds)
            except (TypeError, ValueError):
                raise ValueError(f"model server {self.url} answered with non-numeric predictions") from None
        return np.maximum(np.asarray(out, dtype=float), 0.0)


def make_predictor(spec: str | Predictor | None, seed: int = 0, tracking_uri: str | None = None) -> Predictor:
    """'oracle', 'noisy:SIGMA' (e.g. noisy:0.5), 'models:/NAME@ALIAS' (or runs:/...), an http(s)
    serving URL, or a Predictor instance."""
    if spec is None or spec == "oracle":
        return OraclePredictor()
    if isinstance(spec, str):
        if spec == "noisy" or spec.startswith("noisy:"):
            _, _, text = spec.partition(":")
            try:
                sigma = float(text or 0.5)
            except ValueError:
                raise ValueError(f"bad predictor {spec!r}: noisy:SIGMA needs a number >= 0 (e.g. noisy:0.5)") from None
            if not np.isfinite(sigma) or sigma < 0:
                raise ValueError(f"bad predictor {spec!r}: noisy:SIGMA needs a number >= 0 (e.g. noisy:0.5)")
            return NoisyOraclePredictor(sigma, seed=seed)
        if spec.startswith(("models:/", "runs:/")):
            return ModelPredictor(spec, tracking_uri)
        if spec.startswith(("http://", "https://")):
            return RestPredictor(spec)
        raise ValueError(f"unknown predictor {spec!r}; use oracle, noisy:SIGMA, models:/NAME@ALIAS or a URL")
    if not isinstance(spec, Predictor):
        raise TypeError("a predictor needs predict(jobs) -> array")
    return spec


def describe_predictor(predictor: Predictor) -> dict[str, Any]:
    """What drove a run, for meta.json: the predictor's own ``describe()``, else its class and name."""
    describe = getattr(predictor, "describe", None)
    if callable(describe):
        return describe()
    return {"kind": type(predictor).__name__, "name": getattr(predictor, "name", None)}


def predict_durations(predictor: Predictor, jobs: pd.DataFrame) -> list[float]:
    """Call the predictor once and check its output: one finite, non-negative value per job."""
    values = np.asarray(predictor.predict(jobs), dtype=float).reshape(-1)
    if len(values) != len(jobs):
        raise ValueError(f"predictor returned {len(values)} values for {len(jobs)} jobs")
    bad = ~np.isfinite(values) | (values < 0)
    if bad.any():
        raise ValueError(f"predictor returned {int(bad.sum())} invalid values (first at job "
                         f"{jobs['job_id'].iloc[int(np.flatnonzero(bad)[0])]})")
    return values.tolist()
