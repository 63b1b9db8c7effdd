"""Predictors reach policies through one interface: ``predict(jobs: DataFrame) -> ndarray`` of durations.

Predictions are made once per job, from what is known at submission, before the replay starts (no
model inference inside the event loop). Online learners that need completions live in the policy
(e.g. QSSF's history predictor).
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

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


class ModelPredictor(_ModelBacked):
    """A duration model from the MLflow registry ('models:/duration@champion', 'models:/NAME/3',
    'runs:/ID/model'), fed the same job features it was trained on (features.duration), computed from
    the replayed trace's own past."""

    def __init__(self, uri: str, tracking_uri: str | None = None):
        self.uri, self.tracking_uri, self.name = uri, tracking_uri, uri
        self._model = None

    def _predict(self, jobs: pd.DataFrame) -> np.ndarray:
        from features.duration import duration_features
        from models.registry import configure, load

        from mlflow.exceptions import MlflowException

        try:
            if self._model is None:
                configure(self.tracking_uri)
                self._model = load(self.uri)
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

    def _predict(self, jobs: pd.DataFrame) -> np.ndarray:
        import json
        import urllib.request

        from features.duration import duration_features

        X = duration_features(jobs)
        out = []
        for i in range(0, len(X), self.batch):
            part = X.iloc[i: i + self.batch]
            body = {"dataframe_split": json.loads(part.to_json(orient="split", index=False))}
            req = urllib.request.Request(self.url, data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                payload = json.loads(resp.read())
            preds = payload["predictions"] if isinstance(payload, dict) else payload
            out.extend(float(p) for p in preds)
        return np.maximum(np.asarray(out, dtype=float), 0.0)


def make_predictor(spec: str | Predictor | None, seed: int = 0, tracking_uri: str | None = None) -> Predictor:
    """'oracle', 'noisy:SIGMA' (e.g. noisy:0.5), 'models:/NAME@ALIAS' (or runs:/...), an http(s)
    serving URL, or a Predictor instance."""
    if spec is None or spec == "oracle":
        return OraclePredictor()
    if isinstance(spec, str):
        if spec.startswith("noisy"):
            _, _, sigma = spec.partition(":")
            return NoisyOraclePredictor(float(sigma or 0.5), seed=seed)
        if spec.startswith(("models:/", "runs:/")):
            return ModelPredictor(spec, tracking_uri)
        if spec.startswith(("http://", "https://")):
            return RestPredictor(spec)
        raise ValueError(f"unknown predictor {spec!r}; use oracle, noisy:SIGMA, models:/NAME@ALIAS or a URL")
    if not isinstance(spec, Predictor):
        raise TypeError("a predictor needs predict(jobs) -> array")
    return spec


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
