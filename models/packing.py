"""Lucid's packing classifier (§3.5.1): a decision tree over (gpu_util, gmem_util, gmem, amp) predicting
the sharing score (0 tiny, 1 medium, 2 jumbo), pruned by minimal cost-complexity pruning, and its
leave-one-model-out evaluation (every profile of one model is held out at a time: the classifier never
saw that architecture, which is the situation of a new job)."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from models.base import Estimator

FEATURES = ("gpu_util", "gmem_util", "gmem", "amp")


class PackingClassifier(Estimator):
    """Decision tree with ccp_alpha chosen by cross-validation on the training data ('cv') or given."""

    def __init__(self, ccp_alpha: float | str = "cv", max_depth: int | None = None, cv: int = 5,
                 random_state: int = 0, features: Sequence[str] = FEATURES):
        self.ccp_alpha, self.max_depth, self.cv = ccp_alpha, max_depth, cv
        self.random_state, self.features = random_state, tuple(features)

    def _tree(self, alpha: float):
        from sklearn.tree import DecisionTreeClassifier

        return DecisionTreeClassifier(ccp_alpha=alpha, max_depth=self.max_depth, random_state=self.random_state)

    def fit(self, X: pd.DataFrame, y) -> "PackingClassifier":
        X = X[list(self.features)].astype(float)
        y = np.asarray(y, dtype=int)
        alpha = self.ccp_alpha
        if alpha == "cv":
            path = self._tree(0.0).cost_complexity_pruning_path(X, y)
            alphas = np.unique(np.round(path.ccp_alphas[:-1], 6)) if len(path.ccp_alphas) > 1 else np.array([0.0])
            folds = max(2, min(self.cv, int(np.bincount(y).min()) if len(np.unique(y)) > 1 else 2))
            scores = self._cv_accuracies(X.to_numpy(), y, alphas, folds)
            best = max(scores)
            # The largest alpha within one point of the best score: the simplest tree that does as well.
            alpha = float(max(a for a, s in zip(alphas, scores) if s >= best - 0.01))
        self.alpha_ = float(alpha)
        self.model_ = self._tree(self.alpha_).fit(X, y)
        self.classes_ = self.model_.classes_
        return self

    def _cv_accuracies(self, X: np.ndarray, y: np.ndarray, alphas: np.ndarray, folds: int) -> list[float]:
        """Mean k-fold accuracy of the tree at each alpha: what ``cross_val_score(tree, X, y, cv=
        StratifiedKFold(folds, shuffle=True, random_state))`` gives (the same splits, fits and accuracy), without
        its per-call cloning, validation and parallel dispatch. The profile tables are small (66 rows), so that
        overhead was nearly all of a fit: ~8 s of CPU for `train packing`'s leave-one-model-out study, paid again
        by every Lucid replay that fits its packing tree (tests/test_models_ml.py checks the equality)."""
        from sklearn.model_selection import StratifiedKFold

        splits = list(StratifiedKFold(folds, shuffle=True, random_state=self.random_state).split(X, y))
        out = []
        for a in alphas:
            accuracy = [float(np.mean(self._tree(a).fit(X[train], y[train]).predict(X[test]) == y[test]))
                        for train, test in splits]
            out.append(float(np.asarray(accuracy).mean()))
        return out

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        self.check_is_fitted()
        return self.model_.predict(X[list(self.features)].astype(float))

    def predict_proba(self, X: pd.DataFrame) -> np.ndarray:
        self.check_is_fitted()
        return self.model_.predict_proba(X[list(self.features)].astype(float))

    def rules(self) -> str:
        from sklearn.tree import export_text

        return export_text(self.model_, feature_names=list(self.features))

    def plot(self, path) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from sklearn.tree import plot_tree

        fig, ax = plt.subplots(figsize=(10, 6))
        plot_tree(self.model_, feature_names=list(self.features), class_names=["tiny", "medium", "jumbo"][: len(
            self.classes_)], filled=True, ax=ax, fontsize=8)
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)


def leave_one_model_out(data: pd.DataFrame, target: str = "target", group: str = "model",
                        **params) -> tuple[np.ndarray, np.ndarray]:
    """Predictions for every row from a classifier trained without that row's model. Returns (y, pred)."""
    y = data[target].to_numpy(dtype=int)
    pred = np.empty_like(y)
    for g in data[group].unique():
        held = (data[group] == g).to_numpy()
        clf = PackingClassifier(**params).fit(data[~held], y[~held])
        pred[held] = clf.predict(data[held])
    return y, pred
