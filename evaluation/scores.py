"""Accuracy scores for regressors, probabilistic forecasts and classifiers: defined in models.scores
(pure functions, so that models.update can use them without importing evaluation) and re-exported here,
where evaluation code and users have always found them."""
from __future__ import annotations

from models.scores import (  # noqa: F401  (re-exported)
    _arr, classification_scores, coverage, crps_gaussian, crps_samples, duration_scores, forecast_scores,
    quantile_loss, regression_scores,
)
