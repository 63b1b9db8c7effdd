"""Lucid's Workload Estimate Model for a generated (Helios-shaped) test period, trained on a SEPARATE
generated training period of the same generator.

The paper trains on April-August and tests on September (lucid.txt:312). A Helios-shaped preset
(configs/workloads/lucid-venus.yaml, lucid-saturn.yaml) puts its test period on the August of the real
Venus submission series (``series_offset_days``); this predictor draws a training period from the same
generator with another seed (``train_seed``) on the month before it (``train_offset_days``, July) and the same
user population (``user_seed`` is shared), fits the duration model on schedcast's duration features
(:func:`features.duration.duration_features`: GPUs, VC, user, hour / weekday, history of the user's finished
jobs), and predicts the test jobs from their own features: the test jobs are never seen in training.

``predictor: "lucid-generated:preset=lucid-venus,algo=ebm"`` (registered in :mod:`sim.predictors`); the
calibration (:mod:`pipelines.papers.lucid_calibrate`) passes the generator's parameters directly. Fits are
kept per process and in the value cache.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

import numpy as np

_FITS: dict[str, dict[str, Any]] = {}
EBM = {"interactions": 10, "outer_bags": 2}  # as sim.policies.lucid.pretrained


class LucidGenerated:
    """Duration predictions by a model trained on a generated training period (see the module)."""

    def __init__(self, preset: str | None = None, algo: Literal["ebm", "lightgbm"] = "lightgbm",
                 train_seed: int = 1000, train_offset_days: float | None = None, train_jobs: int | None = None,
                 params: dict[str, Any] | None = None) -> None:
        if algo not in ("ebm", "lightgbm"):
            raise ValueError(f"lucid-generated: algo must be 'ebm' (Lucid's GA2M) or 'lightgbm', got {algo!r}")
        if preset is None and params is None:
            raise ValueError("lucid-generated: name the workload preset (preset=lucid-venus)")
        if params is None:
            from features.traces.synthetic import read_preset

            params = dict(read_preset(preset))
            if params.get("generator") != "helios-shaped":
                raise ValueError(f"lucid-generated: preset {preset!r} is not a helios-shaped preset")
        self.preset, self.algo, self.train_seed = preset, algo, int(train_seed)
        self.params = {k: v for k, v in params.items() if k not in ("name", "generator", "cluster", "source")}
        test_offset = float(self.params.get("series_offset_days", 0.0))
        self.train_offset_days = float(train_offset_days) if train_offset_days is not None else max(
            0.0, test_offset - 31.0)
        #: as many jobs as the preset's test period (a test run of fewer jobs still trains on a full period)
        self.train_jobs = int(train_jobs) if train_jobs is not None else int(self.params.get("jobs", 20_000))

    def training_spec(self):
        from features.traces.helios_shaped import HeliosShapedSpec

        return HeliosShapedSpec(**{**self.params, "series_offset_days": self.train_offset_days,
                                   "jobs": self.train_jobs})

    def fitted(self) -> dict[str, Any]:
        spec = self.training_spec()
        key = hashlib.sha256(json.dumps([spec.model_dump(), self.train_seed, self.algo], sort_keys=True,
                                        default=str).encode()).hexdigest()[:20]
        if key in _FITS:
            return _FITS[key]
        from features.traces import cache

        disk = cache.value_key("lucid-generated", key, cache.code_digest(
            "sim/policies/lucid/generated.py", "features/duration.py", "models/tabular.py",
            "features/traces/helios_shaped.py"))
        stored = cache.get_value(disk)
        if isinstance(stored, dict) and "model" in stored:
            _FITS[key] = stored
            return stored
        from features.duration import duration_features
        from features.traces.helios_shaped import generate
        from models.tabular import make_duration_model

        frame = generate(spec, seed=self.train_seed).frame.reset_index(drop=True)
        X = duration_features(frame)
        X = X.loc[:, X.notna().any()]
        y = frame["duration"].to_numpy(dtype=float)
        model = make_duration_model(self.algo, fast=False) if self.algo == "lightgbm" else make_duration_model(
            self.algo, fast=False, **EBM)
        model.fit(X, y)
        digest = hashlib.sha256(np.ascontiguousarray(y).tobytes())
        fitted = {"model": model, "columns": list(X.columns), "info": {
            "model": f"lucid-ga2m ({self.algo})" if self.algo == "ebm" else "lightgbm", "algo": self.algo,
            "train": "a generated training period of the same generator (other seed, the month before the test "
                     "period on the Venus submission series, the same users)",
            "train_seed": self.train_seed, "train_offset_days": self.train_offset_days,
            "train_jobs": int(len(frame)), "train_data_sha256": digest.hexdigest()[:16], "version": key[:12]}}
        _FITS[key] = fitted
        cache.put_value(disk, fitted)
        return fitted

    def predict(self, jobs) -> np.ndarray:
        from features.duration import duration_features

        fit = self.fitted()
        X = duration_features(jobs.reset_index(drop=True))
        for col in fit["columns"]:
            if col not in X:
                X[col] = np.nan
        return np.maximum(np.asarray(fit["model"].predict(X[fit["columns"]]), dtype=float), 0.0)

    def describe(self) -> dict[str, Any]:
        return {"name": "lucid-generated", "preset": self.preset, **self.fitted()["info"]}
