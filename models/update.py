"""In-replay retraining behind one interface: ``update(now, finished)`` then ``predict(jobs)``.

A replay (e.g. Lucid's Update Engine, §3.6) retrains a model on what has happened so far and uses its
predictions for what has not. The updater only ever sees the jobs handed to ``update`` as finished (the
caller hands over jobs that ended at or before ``now``), so it cannot learn from the future. It may
log its fits as MLflow runs, but it never registers model versions or moves aliases: a replay is an
experiment, not a release (promotion is `schedcast retrain`'s job).

No import of ``sim``: the simulator calls in, never the reverse.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np


@dataclass(frozen=True)
class FinishedJobs:
    """Jobs finished so far: their indices in the replay's job table, their observed (exclusive)
    durations and their end times (s since time zero)."""

    index: np.ndarray
    duration: np.ndarray
    end: np.ndarray

    def __len__(self) -> int:
        return len(self.index)


class Updater(Protocol):
    """What a replay needs from an in-replay retrainer."""

    def update(self, now: float, finished: FinishedJobs) -> None:
        """Retrain on ``finished`` (all ended at or before ``now``); a no-op if nothing new."""

    def predict(self, jobs: np.ndarray) -> np.ndarray:
        """Predictions for the given job indices from the latest fit (NaN before the first)."""


@dataclass
class DurationUpdater:
    """Lucid's Update Engine for job durations, with its System Tuner.

    ``X`` is the feature frame of every job of the replay (features known at submission: the replay
    indexes it by job). Every ``update`` refits on the finished jobs, unless fewer than ``min_jobs``
    finished or none finished since the last fit. With ``monotone`` the System Tuner fits a plain and a
    monotone (non-decreasing in ``num_gpus``) model on the earlier 80 % of finished jobs (by end
    time), scores both on the latest 20 % (log MAE, recorded), and uses the monotone one refitted on
    all finished jobs. ``tracking_uri`` logs each fit as an MLflow run (never a registered version).
    """

    X: Any
    model: str = "lightgbm"
    monotone: bool = True
    min_jobs: int = 50
    tracking_uri: str | None = None
    records: list[dict] = field(default_factory=list)
    fitted_: Any = None
    _trained_on: int = -1

    def update(self, now: float, finished: FinishedJobs) -> None:
        n = len(finished)
        if n < self.min_jobs or n == self._trained_on:
            return
        if len(finished.end) and float(np.max(finished.end)) > now:
            raise ValueError(f"update at {now}: a job handed over as finished ends later, at "
                             f"{float(np.max(finished.end))} (the updater must not see the future)")
        self._trained_on = n
        order = np.argsort(np.asarray(finished.index), kind="stable")  # job order, as a boolean mask gives
        idx = np.asarray(finished.index, dtype=int)[order]
        Xd, yd = self.X.iloc[idx], np.asarray(finished.duration, dtype=float)[order]
        end = np.asarray(finished.end, dtype=float)[order]
        record: dict[str, Any] = {"time": now, "trained_on": n}
        if self.monotone:
            self.fitted_, record["tuner"] = self._system_tuner(Xd, yd, end)
        else:
            self.fitted_ = self._make(False).fit(Xd, yd)
        if self.tracking_uri:
            self._log(Xd, yd, record)
        self.records.append(record)

    def predict(self, jobs: np.ndarray) -> np.ndarray:
        jobs = np.asarray(jobs, dtype=int)
        if self.fitted_ is None:
            return np.full(len(jobs), np.nan)
        return np.asarray(self.fitted_.predict(self.X.iloc[jobs]), dtype=float)

    def _system_tuner(self, X, y, end):
        from models.scores import duration_scores

        cut = np.quantile(end, 0.8) if len(end) else np.inf
        recent = end > cut
        older = ~recent
        effect = {}
        if older.sum() >= 50 and recent.sum() >= 10:
            for name, mono in (("plain", False), ("monotone", True)):
                m = self._make(mono).fit(X[older], y[older])
                effect[f"log_mae_{name}"] = duration_scores(y[recent], m.predict(X[recent]))["log_mae"]
        return self._make(True).fit(X, y), effect

    def _make(self, monotone: bool):
        from models.tabular import make_duration_model

        if self.model == "ebm":
            return make_duration_model("ebm", fast=True) if monotone else make_duration_model(
                "ebm", fast=True, monotone_increasing=())
        # In-replay retraining is kept light (100 rounds at rate 0.1 instead of 300 at 0.05): it runs
        # weekly inside every replay, three fits per update with the System Tuner.
        extra = dict(n_estimators=100, learning_rate=0.1) if self.model == "lightgbm" else {}
        m = make_duration_model(self.model, fast=True, **extra)
        if monotone and self.model == "lightgbm":
            m.monotone = ("num_gpus",)
        return m

    def _log(self, X, y, record: dict) -> None:
        """Log the fit as an MLflow run of kind `duration` (no registered version, no alias)."""
        from models.scores import duration_scores
        from models.registry import configure, data_fingerprint, log_estimator

        configure(self.tracking_uri)
        metrics = dict(record.get("tuner", {}))
        metrics["train_log_mae"] = duration_scores(y, self.fitted_.predict(X))["log_mae"]
        logged = log_estimator(self.fitted_, kind="duration", X_example=X.head(5), params={
            "source": "lucid-update-engine", "sim_time": record["time"]}, metrics=metrics,
            fingerprint=data_fingerprint(None, X), register_as=None, alias=None, columns=list(X.columns),
            tags={"schedcast.update_engine": "lucid"})
        record["run_id"] = getattr(logged, "run_id", None)


@dataclass
class ThroughputUpdater:
    """Lucid's Throughput Predict Model retrained in the replay on its own submission series.

    ``update(now, series)``: ``series`` is a frame of completed 10-minute bins (column
    ``submit_gpu_job``, wall-clock index) ending before ``now``. Needs 9 days (a week of lags, a day to
    train on, the latest day to score on). Champion / challenger inside the replay: the model is used
    only while it beats the naive last value on the latest day (``used`` in the record).
    """

    model: str = "lightgbm"
    horizon: int = 3
    records: list[dict] = field(default_factory=list)
    fitted_: Any = None

    def update(self, now: float, series: Any) -> None:
        from models.scores import regression_scores
        from features.series import throughput_features
        from models.tabular import make_throughput_model

        if len(series) < 9 * 144:
            return
        X, y = throughput_features(series, horizon=self.horizon)
        algo = "ebm" if self.model == "ebm" else "lightgbm"
        # Small, regularised trees: a few weeks of bursty 10-minute counts overfit larger ones.
        extra = dict(n_estimators=100, learning_rate=0.05, num_leaves=7, min_child_samples=50) \
            if algo == "lightgbm" else {}
        if len(X) <= 2 * 144:
            return
        record: dict[str, Any] = {"time": now, "throughput_rows": len(X)}
        old, last_day = X.iloc[:-144], X.iloc[-144:]
        m = make_throughput_model(algo, fast=True, **extra).fit(old, y.iloc[:-144])
        record["throughput_mae"] = regression_scores(y.iloc[-144:], m.predict(last_day))["mae"]
        record["throughput_mae_last_value"] = regression_scores(y.iloc[-144:], last_day["lag_0"])["mae"]
        record["used"] = record["throughput_mae"] < record["throughput_mae_last_value"]
        self.fitted_ = make_throughput_model(algo, fast=True, **extra).fit(X, y) if record["used"] else None
        self.records.append(record)

    def predict(self, X: Any) -> np.ndarray:
        """Counts per bin ``horizon`` bins after each row of throughput features (NaN without a model)."""
        if self.fitted_ is None:
            return np.full(len(X), np.nan)
        return np.asarray(self.fitted_.predict(X), dtype=float)
