"""Lucid's job-name bucketing: Levenshtein similarity + affinity propagation.

Names are normalised (digits and separators dropped), the most frequent ``max_names`` distinct names are
clustered by affinity propagation on their normalised Levenshtein similarity, and every name is then
assigned to the exemplar it is most similar to. Capping the clustered set keeps the O(n^2) similarity
matrix small on traces with 10^5 distinct names.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from features.duration import normalise_name


class NameBucketer:
    """fit(names) learns exemplars; transform(names) -> bucket labels ('b<k>'; '<unknown>' for nulls)."""

    def __init__(self, max_names: int = 1000, damping: float = 0.9, preference: float | str = "min",
                 random_state: int = 0):
        """``preference``: affinity propagation's self-similarity; 'min' (the smallest similarity, few and
        broad buckets), 'median' (scikit-learn's default, more buckets) or a number."""
        self.max_names, self.damping, self.random_state = max_names, damping, random_state
        self.preference = preference

    def fit(self, names: pd.Series) -> "NameBucketer":
        from rapidfuzz.distance import Levenshtein
        from rapidfuzz.process import cdist
        from sklearn.cluster import AffinityPropagation

        norm = pd.Series(names).map(normalise_name).dropna()
        if norm.empty:
            self.exemplars_ = []
            return self
        top = norm.value_counts().index[: self.max_names].tolist()
        if len(top) == 1:
            self.exemplars_ = top
            return self
        sim = cdist(top, top, scorer=Levenshtein.normalized_similarity, dtype=np.float32)
        pref = {"min": float(sim.min()), "median": None}.get(self.preference, self.preference) \
            if isinstance(self.preference, str) else float(self.preference)
        ap = AffinityPropagation(affinity="precomputed", damping=self.damping, random_state=self.random_state,
                                 max_iter=500, preference=pref)
        ap.fit(sim.astype(float))
        idx = ap.cluster_centers_indices_
        self.exemplars_ = [top[i] for i in idx] if idx is not None and len(idx) else top
        return self

    def transform(self, names: pd.Series) -> pd.Series:
        from rapidfuzz.distance import Levenshtein
        from rapidfuzz.process import extractOne

        names = pd.Series(names)
        norm = names.map(normalise_name)
        cache: dict[str, str] = {}
        out = []
        for n in norm:
            if n is None or not self.exemplars_:
                out.append("<unknown>")
                continue
            if n not in cache:
                _, _, k = extractOne(n, self.exemplars_, scorer=Levenshtein.normalized_similarity)
                cache[n] = f"b{k}"
            out.append(cache[n])
        return pd.Series(out, index=names.index, dtype="string")

    def fit_transform(self, names: pd.Series) -> pd.Series:
        return self.fit(names).transform(names)
