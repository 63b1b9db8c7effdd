"""Plots of trained models, logged with each training run: importances, GA2M shape functions, local
explanations, predicted-vs-actual, demand fan charts, packing confusion matrix and tree.

Every figure names its axes and units. Targets learned in log space (``log1p`` of seconds) say so: a
GA2M's contributions add up in that space, so a contribution of +1 multiplies (1 + duration) by e.
matplotlib is imported inside each function: importing this module costs nothing. The figures are plain
``matplotlib.figure.Figure`` objects, not pyplot's: nothing global holds them, so a long-lived process
(scheduled retraining, the test suite) frees each one with its last reference, closed or not.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

#: Names of the packing classes (Lucid's sharing score 0, 1, 2).
PACKING_CLASSES = ("tiny", "medium", "jumbo")


def figure_axes(figsize: tuple[float, float]):
    """(figure, axes) of a new Figure outside pyplot's registry (no global state, no GUI backend), on an Agg
    canvas (a renderer for layout code that measures text, such as scikit-learn's plot_tree). The model
    plots and the leaderboard's draw on it."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig, fig.subplots()


def target_label(estimator: Any, unit: str) -> str:
    """How a model's additive contributions are expressed: 'log(1 + duration / s)' or the unit itself."""
    return f"log(1 + y), y in {unit}" if getattr(estimator, "log_target", False) else unit


def importance_measure(estimator: Any) -> str:
    """What an estimator's ``importances()`` measures (the x-axis label of an importance plot)."""
    name = type(estimator).__name__
    if "GA2M" in name:
        return "mean |contribution| (model target space)"
    if "LightGBM" in name:
        return "total split gain (loss reduction)"
    if "Forest" in name:
        return "impurity decrease (share of total)"
    return "importance"


def importance_figure(importances: pd.Series, title: str, xlabel: str = "importance"):
    """Top-15 features by importance, largest at the top."""
    top = importances.head(15)[::-1]
    fig, ax = figure_axes((6, 4.5))
    ax.barh(top.index.astype(str), top.to_numpy())
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("feature")
    fig.tight_layout()
    return fig


def shape_figure(model, feature: str, unit: str = "s", feature_unit: str = ""):
    """A GA2M shape function: the feature's additive contribution in the model's target space."""
    sf = model.shape_function(feature)
    fig, ax = figure_axes((5.5, 3.5))
    if "level" in sf:
        ax.bar(sf["level"].astype(str).head(30), sf["score"].head(30))
        ax.tick_params(axis="x", rotation=90)
    else:
        x = sf["from"].replace(-np.inf, np.nan).bfill()
        ax.step(x, sf["score"], where="post")
    ax.set_title(f"shape function: {feature}")
    ax.set_xlabel(f"{feature}" + (f" ({feature_unit})" if feature_unit else ""))
    ax.set_ylabel(f"contribution to {target_label(model, unit)}")
    ax.axhline(0, color="0.6", lw=0.6)
    fig.tight_layout()
    return fig


#: Colours of the local explanation: a contribution that raises the prediction, one that lowers it.
RAISES, LOWERS = "#d95f02", "#1b9e77"


def local_explanation_figure(model, row: pd.DataFrame, title: str, unit: str = "s", job: str | None = None,
                             actual: float | None = None):
    """Per-feature contributions to one prediction, with the job it is for, the prediction (and the
    actual value when given) in the title and a legend for the colours (orange raises, green lowers)."""
    from matplotlib.patches import Patch

    contrib = model.explain_local(row).iloc[0].sort_values(key=np.abs, ascending=False).head(12)[::-1]
    pred = float(np.asarray(model.predict(row), dtype=float).ravel()[0])
    fig, ax = figure_axes((6.5, 4.4))
    ax.barh(contrib.index.astype(str), contrib.to_numpy(), color=np.where(contrib.to_numpy() > 0, RAISES, LOWERS))
    ax.axvline(0, color="0.6", lw=0.6)
    which = f"job {job}" if job is not None else f"holdout row {row.index[0]}"
    what = f"predicted {pred:,.0f} {unit}" + (f", actual {actual:,.0f} {unit}" if actual is not None else "")
    ax.set_title(f"{title}: {which}\n{what}", fontsize=10)
    ax.set_xlabel(f"contribution to {target_label(model, unit)}")
    ax.set_ylabel("feature / interaction")
    ax.legend(handles=[Patch(color=RAISES, label="raises the prediction"), Patch(color=LOWERS, label="lowers it")],
              fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


def prediction_figure(y, pred, title: str, unit: str = "s", log: bool = True):
    """Predicted against actual on the holdout (log axes for heavy-tailed durations), with y = x."""
    y, pred = np.asarray(y, dtype=float), np.asarray(pred, dtype=float)
    fig, ax = figure_axes((4.8, 4.5))
    lo = max(1.0, float(np.nanmin(np.r_[y, pred]))) if log else float(np.nanmin(np.r_[y, pred]))
    hi = float(np.nanmax(np.r_[y, pred])) if len(y) else 1.0
    ax.scatter(np.maximum(y, lo) if log else y, np.maximum(pred, lo) if log else pred, s=4, alpha=0.3)
    ax.plot([lo, hi], [lo, hi], color="k", lw=0.8, label="prediction = actual")
    if log:
        from matplotlib.ticker import FuncFormatter, NullFormatter

        ax.set_xscale("log")
        ax.set_yscale("log")
        for axis in (ax.xaxis, ax.yaxis):  # '1000', '1e+06': plain labels, no mathtext to lay out
            axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            axis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(f"actual ({unit})")
    ax.set_ylabel(f"predicted ({unit})")
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig


def forecast_times(origins: Sequence, horizon: int, freq: str | None = None) -> pd.DatetimeIndex:
    """The time of every forecast step: origin + k x step for k < horizon, for each origin in turn (the
    step is ``freq``, else the origins' spacing / horizon; origins are a horizon apart, so the windows
    tile the holdout)."""
    origins = pd.DatetimeIndex(origins)
    if freq is not None:
        step = pd.Timedelta(pd.tseries.frequencies.to_offset(freq))
    elif len(origins) >= 2:
        step = (origins[1] - origins[0]) / horizon
    else:
        step = pd.Timedelta(minutes=10)
    return pd.DatetimeIndex([o + k * step for o in origins for k in range(horizon)])


def fan_figure(fc, y, org_index: int = 0, unit: str = "GPUs", freq: str | None = None):
    """Demand forecast on the holdout for one org over time: truth, mean and the q0.9 / q0.95 band."""
    m = np.concatenate(list(fc.mean[:, org_index, :]))
    q9 = np.concatenate(list(fc.quantile(0.9)[:, org_index, :]))
    q95 = np.concatenate(list(fc.quantile(0.95)[:, org_index, :]))
    t = np.concatenate(list(y[:, org_index, :]))
    when = forecast_times(fc.origins, fc.mean.shape[2], freq)
    fig, ax = figure_axes((8, 3.5))
    ax.plot(when, t, color="k", lw=0.8, label="demand")
    ax.plot(when, m, color="C0", lw=1, label="mean")
    ax.fill_between(when, m, q95, color="C0", alpha=0.2, label="to q0.95")
    ax.plot(when, q9, color="C1", lw=0.7, label="q0.9")
    ax.set_title(f"demand forecast, {fc.orgs[org_index]} (holdout)")
    ax.set_xlabel("time (forecast windows of the holdout, one after another)")
    fig.autofmt_xdate()
    ax.set_ylabel(f"demand ({unit})")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def confusion_figure(conf: pd.DataFrame, names: Sequence[str] = PACKING_CLASSES):
    """Confusion matrix (rows: label, columns: prediction), counts in the cells."""
    k = conf.shape[0]
    names = list(names)[:k]
    fig, ax = figure_axes((4, 3.5))
    ax.imshow(conf.to_numpy(), cmap="Blues")
    ax.set_xticks(range(k), names)
    ax.set_yticks(range(k), names)
    for i in range(k):
        for j in range(k):
            ax.text(j, i, int(conf.iloc[i, j]), ha="center", va="center")
    ax.set_xlabel("predicted class")
    ax.set_ylabel("label (jobs)")
    ax.set_title("packing: leave-one-model-out")
    fig.tight_layout()
    return fig


def tree_figure(tree, features: Sequence[str], classes: Sequence[int]):
    """The packing decision tree with feature and class names (tiny / medium / jumbo)."""
    from sklearn.tree import plot_tree

    fig, ax = figure_axes((10, 6))
    names = [PACKING_CLASSES[int(c)] if 0 <= int(c) < len(PACKING_CLASSES) else str(c) for c in classes]
    plot_tree(tree, feature_names=list(features), class_names=names, filled=True, ax=ax, fontsize=8)
    ax.set_title("packing tree: sharing class from profiled utilisation")
    fig.tight_layout()
    return fig


def close(figures: dict[str, Any]) -> None:
    """Release the figures' drawing state now (their artists and canvases), rather than when collected."""
    for fig in figures.values():
        fig.clear()
