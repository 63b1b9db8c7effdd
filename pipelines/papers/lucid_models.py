"""Lucid's three learned models scored as Table 7 and §4.6 score them (lucid.txt:428-429, 444):

- the Workload Estimate Model (GA2M duration model) on Philly's test week, trained on the weeks after it
  (the paper's split, lucid.txt:312) or before it (causal), beside a LightGBM trained the same way;
- the Throughput Predict Model (GA2M on the 10-minute submission series) on Venus, trained on April-July
  2020 and tested on August (the paper tests on September, which the shared data holds back), beside a
  LightGBM;
- the Packing Analyze Model (decision tree, ternary sharing score) by cross-validation on Lucid's profiles.

Each gives per-seed samples or a bootstrap interval for the ledger; fits are cached (features.traces.cache).
"""
from __future__ import annotations

from typing import Any

import numpy as np

BOOT = 400  # bootstrap resamples of the test rows for an interval of a deterministic fit's score


def _r2(y: np.ndarray, p: np.ndarray) -> float:
    ss = float(np.sum((y - y.mean()) ** 2))
    return 1.0 - float(np.sum((y - p) ** 2)) / ss if ss > 0 else float("nan")


def bootstrap(y: np.ndarray, preds: dict[str, np.ndarray], score, seed: int = 0,
              n: int = BOOT) -> dict[str, Any]:
    """``score(y, p)`` of each prediction on the test rows, with a 95 % percentile interval over ``n``
    resamples of the rows (the same resamples for every model, so differences pair)."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(y), size=(n, len(y)))
    out: dict[str, Any] = {name: {"value": float(score(y, p))} for name, p in preds.items()}
    boots = {name: np.array([score(y[i], p[i]) for i in idx]) for name, p in preds.items()}
    for name, b in boots.items():
        out[name]["interval"] = (float(np.percentile(b, 2.5)), float(np.percentile(b, 97.5)))
    out["_boots"] = boots
    return out


def duration_accuracy(split: str = "later") -> dict[str, Any]:
    """R^2 (seconds) of the GA2M and of a LightGBM duration model on Philly Oct 1-7 2017, both trained on
    the ``split`` weeks; a bootstrap interval for each and for their difference (GA2M - LightGBM)."""
    from features.traces import load_trace
    from features.paths import resolve_data_path
    from features.traces.lucid_synthetic import PHILLY_TRACE, philly_window_rows, PHILLY_TEST
    from sim.policies.lucid.pretrained import LucidPretrained

    frame = load_trace(resolve_data_path(PHILLY_TRACE), "philly").frame
    test = frame[philly_window_rows(frame, *PHILLY_TEST)]
    y = test["duration"].to_numpy(dtype=float)
    models = {algo: LucidPretrained(split=split, algo=algo) for algo in ("ebm", "lightgbm")}
    preds = {algo: m.predict(test) for algo, m in models.items()}
    out = bootstrap(y, preds, _r2)
    diff = out["_boots"]["ebm"] - out["_boots"]["lightgbm"]
    out["diff"] = {"value": out["ebm"]["value"] - out["lightgbm"]["value"],
                   "interval": (float(np.percentile(diff, 2.5)), float(np.percentile(diff, 97.5)))}
    out["info"] = {algo: m.describe() for algo, m in models.items()}
    out["n"] = len(y)
    out.pop("_boots")
    return out


def throughput_accuracy(test_days: float = 31.0) -> dict[str, Any]:
    """MAE (GPU jobs per 10 min) of the GA2M and a LightGBM Throughput Predict Model on Venus' last
    ``test_days`` days (August 2020), trained on the months before; bootstrap intervals and the ratio
    LightGBM / GA2M."""
    from features.series import load_throughput, throughput_features, time_split
    from features.traces import cache
    from models.tabular import make_throughput_model

    key = cache.value_key("lucid-throughput", test_days, cache.code_digest(
        "pipelines/papers/lucid_models.py", "features/series.py", "models/tabular.py"))
    stored = cache.get_value(key)
    if isinstance(stored, dict) and "ebm" in stored:
        return stored
    series = load_throughput()
    X, y = throughput_features(series)
    train, test = time_split(X.index, test_days=test_days)
    preds = {}
    for algo, params in (("ebm", {"interactions": 10, "outer_bags": 2}), ("lightgbm", {})):
        model = make_throughput_model(algo, fast=False, **params)
        preds[algo] = np.asarray(model.fit(X[train], y[train]).predict(X[test]), dtype=float)
    yt = y[test].to_numpy(dtype=float)
    out = bootstrap(yt, preds, lambda a, b: float(np.mean(np.abs(a - b))))
    ratio = out["_boots"]["lightgbm"] / out["_boots"]["ebm"]
    out["ratio"] = {"value": out["lightgbm"]["value"] / out["ebm"]["value"],
                    "interval": (float(np.percentile(ratio, 2.5)), float(np.percentile(ratio, 97.5)))}
    out.pop("_boots")
    out["n"] = int(len(yt))
    out["train"] = f"{X.index[train].min()} .. {X.index[train].max()}"
    out["test"] = f"{X.index[test].min()} .. {X.index[test].max()}"
    cache.put_value(key, out)
    return out


def packing_accuracy(seeds: list[int], folds: int = 5) -> dict[str, Any]:
    """Accuracy of the packing tree (PackingClassifier, its pruning chosen by inner cross-validation) on
    held-out profiles: one stratified ``folds``-fold outer cross-validation per seed (its shuffle)."""
    from sklearn.model_selection import StratifiedKFold

    from features.packing import packing_dataset
    from features.paths import resolve_data_path
    from models.packing import PackingClassifier

    data = packing_dataset(resolve_data_path("profiles/lucid").parents[1], labels="solo")
    X, y = data, data["target"].to_numpy(dtype=int)
    folds = max(2, min(folds, int(np.bincount(y).min())))
    samples = []
    for seed in seeds:
        right = 0
        for train, test in StratifiedKFold(folds, shuffle=True, random_state=seed).split(X, y):
            clf = PackingClassifier(random_state=seed).fit(X.iloc[train], y[train])
            right += int(np.sum(clf.predict(X.iloc[test]) == y[test]))
        samples.append(right / len(y))
    return {"samples": samples, "rows": int(len(y)), "classes": int(len(np.unique(y))), "folds": folds}
