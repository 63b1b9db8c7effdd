"""SchedMate's Scheduling Advisor: duration and GPU-utilisation advice from similar finished jobs.

A job is described by the canonical text of its metadata (`JobMetadata.canonical_text()`); texts are
embedded (MiniLM by default, or the hash embedder); a new job's advice is the mean duration (and GPU
utilisation) of the top-k historical jobs whose cosine similarity is at least `t_score` and that
finished no later than `now` (retrieval never sees the future). No match -> None, and the host
scheduler keeps its own estimate.

Observations are grouped by text: jobs of a recurring group usually share one text, so a query scores
each distinct text once (a (texts x dim) product) and then takes the most recently finished jobs of
the best texts.
"""
from __future__ import annotations

import bisect
import math
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

import numpy as np

from models.schedmate.embed import Embedder, get_embedder

DEFAULT_T_SCORE = 0.9


#: query texts whose similarity rows are kept (least recently used dropped)
SCORE_CACHE_TEXTS = 256


@dataclass(frozen=True)
class Advice:
    """What the Advisor says about a job: mean duration (s) and GPU utilisation of its matches."""

    duration: float
    gpu_util: float | None
    matches: tuple[str, ...]
    score: float  # best cosine similarity among the matches
    scores: tuple[float, ...] = ()


@dataclass(frozen=True)
class HistoryRecord:
    """One finished job for calibration: submit and finish times (s) let calibration replay time."""

    key: str
    text: str
    duration: float
    finished_at: float
    submitted_at: float | None = None
    gpu_util: float | None = None


@dataclass
class _TextEntry:
    finished: list[float] = field(default_factory=list)   # sorted finish times
    records: list[tuple[float, str, float, float | None]] = field(default_factory=list)  # same order


class SchedulingAdvisor:
    """Top-k cosine retrieval over finished jobs (k = 3, threshold `t_score`), by canonical text."""

    def __init__(self, t_score: float = DEFAULT_T_SCORE, k: int = 3, embedder: str | Embedder = "minilm") -> None:
        if not -1.0 <= float(t_score) <= 1.0:
            raise ValueError(f"t_score must be a cosine in [-1, 1], got {t_score}")
        if int(k) < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        self.t_score = float(t_score)
        self.k = int(k)
        self.embedder = get_embedder(embedder)
        self._text_index: dict[str, int] = {}
        self._entries: list[_TextEntry] = []
        self._first_finish = np.zeros(0)  # per text: when its first job finished (inf: none yet)
        self._matrix = np.zeros((0, 0), dtype=np.float32)
        self._rows = 0
        self._score_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self.n_observed = 0
        self.n_advised = 0
        self.n_matched = 0

    # -- history ---------------------------------------------------------------------------------
    def observe(self, key: str, text: str, duration: float, finished_at: float,
                gpu_util: float | None = None) -> None:
        """Record a finished job (its key, canonical text, duration s, finish time s, GPU util)."""
        duration = float(duration)
        if not math.isfinite(duration) or duration < 0:
            raise ValueError(f"duration of {key!r} must be a finite number >= 0, got {duration}")
        idx = self._text_index.get(text)
        if idx is None:
            idx = self._add_text(text)
        entry = self._entries[idx]
        at = bisect.bisect_right(entry.finished, float(finished_at))
        entry.finished.insert(at, float(finished_at))
        entry.records.insert(at, (float(finished_at), str(key), duration,
                                  None if gpu_util is None else float(gpu_util)))
        self._first_finish[idx] = entry.finished[0]
        self.n_observed += 1

    def _add_text(self, text: str) -> int:
        vec = self.embedder.encode(text)
        if self._matrix.shape[1] == 0:
            self._matrix = np.zeros((16, vec.shape[0]), dtype=np.float32)
            self._first_finish = np.full(16, math.inf)
        if self._rows == self._matrix.shape[0]:
            grown = np.zeros((self._rows * 2, self._matrix.shape[1]), dtype=np.float32)
            grown[: self._rows] = self._matrix[: self._rows]
            self._matrix = grown
            first = np.full(self._rows * 2, math.inf)
            first[: self._rows] = self._first_finish[: self._rows]
            self._first_finish = first
        self._matrix[self._rows] = vec
        idx = self._rows
        self._rows += 1
        self._text_index[text] = idx
        self._entries.append(_TextEntry())
        self._first_finish[idx] = math.inf
        return idx

    def warm(self, texts: Iterable[str]) -> int:
        """Embed many texts in batches ahead of a replay (MiniLM: far cheaper per text than one by
        one); later observe/advise calls hit the cache. Returns the number of distinct texts."""
        unique = list(dict.fromkeys(texts))
        if unique:
            self.embedder.encode(unique)
        return len(unique)

    def __len__(self) -> int:
        return self.n_observed

    # -- advice ----------------------------------------------------------------------------------
    def advise(self, text: str, now: float, exclude_key: str | None = None) -> Advice | None:
        """Mean duration / GPU utilisation of the top-k jobs finished by `now` with cosine >= t_score;
        None when there is none (the host scheduler's estimate stands)."""
        self.n_advised += 1
        if self._rows == 0:
            return None
        scores = self._scores(text)
        ok = np.flatnonzero((scores >= self.t_score - 1e-6) & (self._first_finish[: self._rows] <= now))
        if ok.size == 0:
            return None
        order = ok[np.argsort(-scores[ok], kind="stable")]
        picked: list[tuple[float, float, str, float, float | None]] = []
        for idx in order:
            entry = self._entries[idx]
            hi = bisect.bisect_right(entry.finished, now)
            s = float(scores[idx])
            # most recently finished first: recurring jobs drift, the latest runs say most
            for j in range(hi - 1, -1, -1):
                fin, key, dur, util = entry.records[j]
                if key == exclude_key:
                    continue
                picked.append((s, fin, key, dur, util))
                if len(picked) == self.k:
                    break
            if len(picked) == self.k:
                break
        if not picked:
            return None
        self.n_matched += 1
        utils = [u for *_, u in picked if u is not None]
        return Advice(duration=sum(p[3] for p in picked) / len(picked),
                      gpu_util=sum(utils) / len(utils) if utils else None,
                      matches=tuple(p[2] for p in picked), score=float(picked[0][0]),
                      scores=tuple(float(p[0]) for p in picked))

    def _scores(self, text: str) -> np.ndarray:
        """Cosine of ``text`` with every known text. Recurring jobs ask with the same text again and again,
        so each query's row is kept and only texts added since its last use are scored (O(new texts)
        instead of O(all texts) per advice)."""
        cache = self._score_cache
        cached = cache.get(text)
        seen = 0 if cached is None else len(cached)
        if cached is not None:
            cache.move_to_end(text)
            if seen == self._rows:
                return cached
        fresh = self._matrix[seen: self._rows] @ self.embedder.encode(text)
        scores = fresh if cached is None else np.concatenate([cached, fresh])
        cache[text] = scores
        if len(cache) > SCORE_CACHE_TEXTS:  # bounded: memory ~ texts kept x known texts x 4 bytes
            cache.popitem(last=False)
        return scores

    @property
    def coverage(self) -> float:
        """Share of advise() calls that found a match."""
        return self.n_matched / self.n_advised if self.n_advised else 0.0

    # -- calibration -----------------------------------------------------------------------------
    def calibrate(self, history: Iterable[HistoryRecord | Mapping | Sequence],
                  grid: Sequence[float] | None = None, cap: float = 2.0) -> float:
        """Choose t_score on history and set it: replay the records in time order (each job advised
        at its submit time, or its start = finish - duration, from jobs finished before), and pick the
        threshold with the lowest mean capped relative error, where a job without a match is charged
        the error of the history's running median (a stand-in for the host's estimate). Ties go to
        the higher threshold. Returns the chosen threshold; `self.calibration` keeps the table."""
        records = [_as_record(r) for r in history]
        if len(records) < 2:
            raise ValueError("calibration needs at least 2 finished jobs")
        grid = list(grid) if grid is not None else [round(x, 3) for x in np.arange(0.50, 0.995, 0.01)]
        texts = sorted({r.text for r in records})
        tix = {t: i for i, t in enumerate(texts)}
        tmat = self.embedder.encode(texts)
        sims_text = tmat @ tmat.T
        starts = np.array([r.submitted_at if r.submitted_at is not None else r.finished_at - r.duration
                           for r in records])
        fins = np.array([r.finished_at for r in records])
        durs = np.array([r.duration for r in records])
        tid = np.array([tix[r.text] for r in records])
        order_f = np.argsort(fins, kind="stable")
        # per query: candidate jobs finished before its start, their similarity, recency order
        queries = []
        for q in np.argsort(starts, kind="stable"):
            n_before = int(np.searchsorted(fins[order_f], starts[q], side="right"))
            if n_before == 0:
                continue
            prev = order_f[:n_before][::-1]  # most recent first
            sims = sims_text[tid[q], tid[prev]]
            host = float(np.median(durs[prev]))
            queries.append((q, prev, sims, host))
        if not queries:
            raise ValueError("calibration needs jobs that start after others finished")
        table = []
        for t in grid:
            errs, hits = [], 0
            for q, prev, sims, host in queries:
                ok = np.flatnonzero(sims >= t - 1e-6)
                if ok.size:
                    # best score first, then most recent (stable sort keeps recency among ties)
                    top = ok[np.argsort(-sims[ok], kind="stable")][: self.k]
                    est = float(durs[prev[top]].mean())
                    hits += 1
                else:
                    est = host
                errs.append(min(abs(est - durs[q]) / max(durs[q], 1e-9), cap))
            table.append((float(t), float(np.mean(errs)), hits / len(queries)))
        best = min(table, key=lambda row: (round(row[1], 6), -row[0]))
        self.t_score = best[0]
        self.calibration = table
        return self.t_score


def _as_record(r: HistoryRecord | Mapping | Sequence) -> HistoryRecord:
    if isinstance(r, HistoryRecord):
        return r
    if isinstance(r, Mapping):
        return HistoryRecord(key=str(r["key"]), text=str(r["text"]), duration=float(r["duration"]),
                             finished_at=float(r["finished_at"]),
                             submitted_at=None if r.get("submitted_at") is None else float(r["submitted_at"]),
                             gpu_util=None if r.get("gpu_util") is None else float(r["gpu_util"]))
    key, text, duration, finished_at, *rest = r
    return HistoryRecord(str(key), str(text), float(duration), float(finished_at),
                         float(rest[0]) if rest and rest[0] is not None else None,
                         float(rest[1]) if len(rest) > 1 and rest[1] is not None else None)
