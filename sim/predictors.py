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


def make_predictor(spec: str | Predictor | None, seed: int = 0) -> Predictor:
    """'oracle', 'noisy:SIGMA' (e.g. noisy:0.5), or a Predictor instance."""
    if spec is None or spec == "oracle":
        return OraclePredictor()
    if isinstance(spec, str):
        if spec.startswith("noisy"):
            _, _, sigma = spec.partition(":")
            return NoisyOraclePredictor(float(sigma or 0.5), seed=seed)
        raise ValueError(f"unknown predictor {spec!r}; use 'oracle' or 'noisy:SIGMA'")
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
