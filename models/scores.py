"""Accuracy scores for regressors, probabilistic forecasts and classifiers, defined exactly.

Quantile error. For level p, the pinball (quantile) loss of a quantile forecast q for outcome y is
    L_p(y, q) = max(p (y - q), (p - 1)(y - q)),
and ``quantile_loss`` is its mean. ``coverage`` is the share of outcomes at or below q (ideal: p).
GFS reports p-MAQE; it weighs the same asymmetric absolute error, so ``quantile_loss`` ranks models the
way p-MAQE does (schedcast reports both the loss and, as ``maqe``, the mean of 2 L_p / mean|y|, the
loss normalised by the scale of the series so that organisations of different sizes compare).

CRPS. For a Gaussian forecast N(mu, sigma^2) it has the closed form
    CRPS = sigma [z (2 Phi(z) - 1) + 2 phi(z) - 1/sqrt(pi)],  z = (y - mu) / sigma;
for sample forecasts the energy form E|X - y| - E|X - X'| / 2 is used.

MAPE ignores outcomes whose absolute value is below ``eps`` (reported as the share used).

Pure functions of arrays, kept in ``models`` so that in-replay retraining (models.update) scores
its models without importing ``evaluation`` (the layers: features <- models <- sim <- evaluation);
``evaluation.scores`` re-exports them.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats


def _arr(x) -> np.ndarray:
    return np.asarray(x, dtype=float).reshape(-1)


def regression_scores(y, pred, eps: float = 1e-9) -> dict[str, float]:
    y, pred = _arr(y), _arr(pred)
    err = pred - y
    nz = np.abs(y) > eps
    out = {
        "mae": float(np.mean(np.abs(err))),
        "mse": float(np.mean(err ** 2)),
        "rmse": float(np.sqrt(np.mean(err ** 2))),
        "mape": float(np.mean(np.abs(err[nz]) / np.abs(y[nz]))) if nz.any() else float("nan"),
        "mape_share": float(nz.mean()),
    }
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    out["r2"] = 1.0 - float(np.sum(err ** 2)) / ss_tot if ss_tot > 0 else float("nan")
    return out


def duration_scores(y, pred) -> dict[str, float]:
    """Regression scores plus what ranking policies consume: Spearman correlation, and MAE of log1p."""
    y, pred = _arr(y), _arr(pred)
    out = regression_scores(y, pred)
    varied = len(y) > 1 and np.ptp(y) > 0 and np.ptp(pred) > 0
    out["spearman"] = float(stats.spearmanr(y, pred).statistic) if varied else float("nan")
    out["log_mae"] = float(np.mean(np.abs(np.log1p(np.maximum(pred, 0)) - np.log1p(np.maximum(y, 0)))))
    return out


def quantile_loss(y, q, p: float) -> float:
    y, q = _arr(y), _arr(q)
    d = y - q
    return float(np.mean(np.maximum(p * d, (p - 1) * d)))


def coverage(y, q) -> float:
    return float(np.mean(_arr(y) <= _arr(q)))


def crps_gaussian(y, mu, sigma) -> float:
    y, mu, sigma = _arr(y), _arr(mu), np.maximum(_arr(sigma), 1e-12)
    z = (y - mu) / sigma
    return float(np.mean(sigma * (z * (2 * stats.norm.cdf(z) - 1) + 2 * stats.norm.pdf(z) - 1 / np.sqrt(np.pi))))


def crps_samples(y, samples) -> float:
    """samples: (n_samples, n_points)."""
    y, s = _arr(y), np.asarray(samples, dtype=float)
    term1 = np.mean(np.abs(s - y[None, :]), axis=0)
    term2 = np.mean(np.abs(s[:, None, :] - s[None, :, :]), axis=(0, 1)) / 2
    return float(np.mean(term1 - term2))


def forecast_scores(y, point, quantiles: dict[float, np.ndarray], *, mu=None, sigma=None,
                    samples=None) -> dict[str, float]:
    """Point scores, and for each level p in ``quantiles``: pinball loss, normalised MAQE, coverage; CRPS
    from (mu, sigma) or samples when given."""
    y = _arr(y)
    out = regression_scores(y, point)
    scale = float(np.mean(np.abs(y))) or 1.0
    for p, q in sorted(quantiles.items()):
        ql = quantile_loss(y, q, p)
        out[f"ql_{p:g}"] = ql
        out[f"maqe_{p:g}"] = 2 * ql / scale
        out[f"coverage_{p:g}"] = coverage(y, q)
    if mu is not None and sigma is not None:
        out["crps"] = crps_gaussian(y, mu, sigma)
    elif samples is not None:
        out["crps"] = crps_samples(y, samples)
    return out


def classification_scores(y, pred, labels=(0, 1, 2)) -> dict[str, object]:
    from sklearn.metrics import accuracy_score, confusion_matrix, f1_score

    y, pred = np.asarray(y), np.asarray(pred)
    return {
        "accuracy": float(accuracy_score(y, pred)),
        "macro_f1": float(f1_score(y, pred, labels=list(labels), average="macro", zero_division=0)),
        "confusion": pd.DataFrame(confusion_matrix(y, pred, labels=list(labels)), index=list(labels),
                                  columns=list(labels)),
    }
