"""SchedMate's Scheduling Advisor: duration and GPU-utilisation advice from similar finished jobs.

A job is described by the canonical text of its metadata (`JobMetadata.canonical_text()`); texts are
embedded (MiniLM by default, or the hash embedder); a new job's advice is the mean duration (and GPU
utilisation) of the top-k historical jobs whose cosine similarity is at least `t_score` and that
finished no later than `now` (retrieval never sees the future). No match -> None, and the host
scheduler keeps its own estimate.

Why it is fast. Jobs of a recurring group share one text and a replay knows every job's text up front,
so the work is per distinct text, not per job:

- ``warm(texts)`` embeds the distinct texts in one batch and scores them against each other in one
  blocked matrix product; each text keeps its *candidate list*: the texts with cosine >= t_score, best
  first (``CANDIDATES`` of them, whole tie runs; longer lists are cut and the cut is remembered).
- ``advise`` walks the query's candidate list, skipping texts with no job finished by ``now``, and
  takes the most recently finished jobs of the best texts; only when a cut list cannot fill k matches
  does it fall back to scoring every known text (``advise_plain``, the reference definition).
- An answer is kept per query text until a job finishes in a candidate text ranked at or above the
  text its k-th match came from (a job of a lower text cannot enter the top k), a new text arrives or
  the threshold changes; it is reused only when ``now`` is at or after every observed finish, so a
  kept answer never holds a job finished after the asker's ``now``. Calls with ``exclude_key`` or an
  earlier ``now`` are answered afresh.

A fresh advisor warmed with the same distinct texts (same embedder instance, threshold and list length)
as one earlier in the process installs that warm-up (``_WARM_CACHE``, keyed by a content hash and checked
text by text): the replays of one workload under several policies embed and score their texts once.

Texts never seen by ``warm`` are added on first use and scored against the known texts then.
``n_scored`` counts similarity computations (text pairs scored) so tests can bound the work.
Similarities are computed in float64 from the embedder's float32 unit vectors and rounded to float32,
so a pair's score does not depend on how the product was blocked; ties go to the text observed first.
"""
from __future__ import annotations

import bisect
import hashlib
import math
from dataclasses import dataclass
from typing import Iterable, Mapping, NamedTuple, Sequence

import numpy as np

from models.schedmate.embed import Embedder, get_embedder

DEFAULT_T_SCORE = 0.9

#: candidates kept per text (whole tie runs); beyond that a query that cannot fill k scores everything
CANDIDATES = 64
#: similarities per block in warm(): bounds the temporary (block x texts) matrix (float64: 32 MB)
BLOCK_ELEMENTS = 1 << 22
_EPS = 1e-6  # scores within this of t_score count as matches (float rounding)
#: warmed text sets kept per process (see ``warm``): the replays of one workload share one
WARM_CACHE_SIZE = 4
# content hash -> (embedder, threshold, texts, unit rows, candidate lists, reverse lists, pairs scored)
_WARM_CACHE: dict[str, tuple] = {}


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosines of unit rows: ``a @ b.T`` in float64, rounded to float32 so that the same pair gets
    the same score whichever product (matrix or vector, any blocking) computed it; exact ties stay
    ties and are broken by observation order."""
    return (a @ b.T).astype(np.float32).astype(np.float64)


class Advice(NamedTuple):
    """What the Advisor says about a job: mean duration (s) and GPU utilisation of its matches.
    (An immutable tuple: a replay makes one per advice, and a tuple is the cheapest record to make.)"""

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


class _TextEntry:
    """The finished jobs of one text, in finish order, as parallel lists (no object per job: a long
    replay keeps thousands, and fewer tracked objects mean cheaper garbage collections)."""

    __slots__ = ("finished", "keys", "durations", "utils", "seq")

    def __init__(self) -> None:
        self.finished: list[float] = []
        self.keys: list[str] = []
        self.durations: list[float] = []
        self.utils: list[float | None] = []
        self.seq: float = math.inf  # order of its first observation (ties in score go to the earlier)


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
        self._matrix = np.zeros((0, 0))  # float64 unit rows, one per known text
        self._rows = 0
        self._seq = 0
        self._last = (-math.inf, -math.inf)  # rank (score, seq) of the text the last k-th match came from
        self._latest = -math.inf  # latest finish time observed
        self._reset_candidates()
        self.n_observed = 0
        self.n_advised = 0
        self.n_matched = 0
        self.n_scored = 0  # text pairs scored (similarity computations)
        self.n_embedded = 0  # texts added (each embedded once)
        self.n_fallbacks = 0  # queries answered by scoring every known text
        self.n_kept = 0  # queries answered from the kept answer of their text
        self.n_warm_cached = 0  # warm-ups installed from an earlier advisor's (same texts, embedder, threshold)

    def _reset_candidates(self) -> None:
        self._cand_t = self.t_score
        # query text -> (scores best first, texts, rows covered, whole (not cut), has tied scores)
        self._cands: dict[int, tuple[list[float], list[int], int, bool, bool]] = {}
        self._rev: dict[int, dict[int, float]] = {}  # text -> {query text whose list holds it: score}
        # query text -> (answer, score and observation order of the text its k-th match came from;
        # -inf when it has fewer than k): a job finishing in a text ranked below that cannot change it
        self._memo: dict[int, tuple[Advice | None, float, float]] = {}

    # -- texts -----------------------------------------------------------------------------------
    def _add_texts(self, texts: list[str]) -> list[int]:
        """Register new distinct texts (one batch embedding); their rows join the matrix."""
        vecs = np.asarray(self.embedder.encode(texts), dtype=np.float64).reshape(len(texts), -1)
        need = self._rows + len(texts)
        if self._matrix.shape[1] == 0:
            self._matrix = np.zeros((max(16, need), vecs.shape[1]))
            self._first_finish = np.full(max(16, need), math.inf)
        elif need > self._matrix.shape[0]:
            size = max(need, 2 * self._matrix.shape[0])
            grown = np.zeros((size, self._matrix.shape[1]))
            grown[: self._rows] = self._matrix[: self._rows]
            self._matrix = grown
            first = np.full(size, math.inf)
            first[: self._rows] = self._first_finish[: self._rows]
            self._first_finish = first
        self._matrix[self._rows: need] = vecs
        out = list(range(self._rows, need))
        for t, i in zip(texts, out):
            self._text_index[t] = i
            self._entries.append(_TextEntry())
        self._rows = need
        self.n_embedded += len(texts)
        self._memo.clear()  # candidate lists now miss the new rows: answers are recomputed
        return out

    def warm(self, texts: Iterable[str]) -> int:
        """Prepare a replay whose job texts are known up front: embed the distinct texts in one batch
        and build every candidate list in one blocked product (per distinct text, not per job).
        Returns the number of distinct texts."""
        unique = list(dict.fromkeys(texts))
        fresh = self._rows == 0 and not self._cands and self._cand_t == self.t_score
        if fresh and self._from_warm_cache(unique):
            return len(unique)
        new = [t for t in unique if t not in self._text_index]
        if new:
            self._add_texts(new)
        self._check_threshold()
        rows, m = self._rows, self._matrix[: self._rows]
        cands = self._cands
        todo = sorted(i for i in (self._text_index[t] for t in unique) if i not in cands or cands[i][2] < rows)
        step = max(1, BLOCK_ELEMENTS // max(rows, 1))
        for b in range(0, len(todo), step):
            block = todo[b: b + step]
            sims = _cos(m if len(block) == rows else m[block], m)  # sorted, distinct: all rows in order
            self.n_scored += sims.size
            r, c = np.nonzero(sims >= self.t_score - _EPS)
            v = sims[r, c]
            order = np.lexsort((-v, r))  # by query row, best first; equal scores keep text order
            r, cl, vl = r[order], c[order].tolist(), v[order].tolist()
            bounds = np.searchsorted(r, np.arange(len(block) + 1)).tolist()
            for i, q in enumerate(block):
                lo, hi = bounds[i], bounds[i + 1]
                self._keep(q, vl[lo:hi], cl[lo:hi], rows, True)
        if fresh and self._rows == len(unique):
            self._to_warm_cache(unique, scored_before=0)
        return len(unique)

    # -- the process-wide cache of warmed text sets ------------------------------------------------
    def _warm_key(self, unique: list[str]) -> str:
        """Content hash of a warm-up: the embedder (this instance: its vectors), the threshold, the list
        cut and the distinct texts in order."""
        h = hashlib.sha1(f"{id(self.embedder)}|{self.embedder.name}|{self.t_score!r}|{CANDIDATES}|{len(unique)}".encode())
        for t in unique:
            h.update(t.encode())
            h.update(b"\x1e")
        return h.hexdigest()

    def _to_warm_cache(self, unique: list[str], scored_before: int) -> None:
        if WARM_CACHE_SIZE <= 0:
            return
        while len(_WARM_CACHE) >= WARM_CACHE_SIZE:
            _WARM_CACHE.pop(next(iter(_WARM_CACHE)))
        rows = self._rows
        _WARM_CACHE[self._warm_key(unique)] = (
            self.embedder, self.t_score, tuple(unique), self._matrix[:rows].copy(), dict(self._cands),
            {c: dict(h) for c, h in self._rev.items()}, self.n_scored - scored_before)

    def _from_warm_cache(self, unique: list[str]) -> bool:
        """Install a fresh advisor's warm-up from a replay of the same texts earlier in this process
        (the same vectors and candidate lists that scoring them again would give: the lists are a
        function of the texts, the embedder and the threshold only). False: not cached."""
        got = _WARM_CACHE.get(self._warm_key(unique))
        if got is None:
            return False
        emb, t_score, texts, matrix, cands, rev, _ = got
        if emb is not self.embedder or t_score != self.t_score or list(texts) != unique:
            return False  # a hash collision or another embedder: score them
        rows = len(texts)
        self._matrix = np.zeros((max(16, rows), matrix.shape[1]))
        self._matrix[:rows] = matrix
        self._first_finish = np.full(max(16, rows), math.inf)
        self._text_index = {t: i for i, t in enumerate(texts)}
        self._entries = [_TextEntry() for _ in range(rows)]
        self._rows = rows
        self._cands = dict(cands)  # values are never changed in place (a longer list replaces them)
        self._rev = {c: dict(h) for c, h in rev.items()}
        self._memo.clear()
        self.n_embedded += rows
        self.n_warm_cached += 1
        return True

    prepare = warm

    def __len__(self) -> int:
        return self.n_observed

    # -- history ---------------------------------------------------------------------------------
    def observe(self, key: str, text: str, duration: float, finished_at: float,
                gpu_util: float | None = None) -> None:
        """Record a finished job (its key, canonical text, duration s, finish time s, GPU util)."""
        duration = float(duration)
        if not math.isfinite(duration) or duration < 0:
            raise ValueError(f"duration of {key!r} must be a finite number >= 0, got {duration}")
        idx = self._text_index.get(text)
        if idx is None:
            idx = self._add_texts([text])[0]
        entry = self._entries[idx]
        fin = float(finished_at)
        util = None if gpu_util is None else float(gpu_util)
        finished = entry.finished
        at = len(finished)
        if not at:
            entry.seq = self._seq
            self._seq += 1
        if at and fin < finished[-1]:  # out of time order (the replay observes in order)
            at = bisect.bisect_right(finished, fin)
            finished.insert(at, fin)
            entry.keys.insert(at, str(key))
            entry.durations.insert(at, duration)
            entry.utils.insert(at, util)
        else:
            finished.append(fin)
            entry.keys.append(str(key))
            entry.durations.append(duration)
            entry.utils.append(util)
        if at == 0:
            self._first_finish[idx] = fin
        if fin > self._latest:
            self._latest = fin
        memo = self._memo
        if memo:
            holders = self._rev.get(idx)
            if holders:
                newest = at == len(finished) - 1
                seq = entry.seq
                for q, sc in holders.items():
                    m = memo.get(q)
                    # the new job is its text's most recent: it enters q's top k unless the text ranks
                    # below the one q's k-th match came from
                    if m is not None and (not newest or sc > m[1] or (sc == m[1] and seq <= m[2])):
                        del memo[q]
        self.n_observed += 1

    # -- candidate lists -------------------------------------------------------------------------
    def _check_threshold(self) -> None:
        if self._cand_t != self.t_score:  # calibrate() or a user moved the threshold
            self._reset_candidates()

    def _set_candidates(self, q: int, row: np.ndarray, rows: int) -> None:
        """Candidate list of text ``q`` from its similarity row over the first ``rows`` texts."""
        ok = np.flatnonzero(row[:rows] >= self.t_score - _EPS)
        self._store(q, ok, row[ok], rows)

    def _store(self, q: int, idx: np.ndarray, scores: np.ndarray, rows: int, whole: bool = True) -> None:
        order = np.argsort(-scores, kind="stable")
        self._keep(q, scores[order].tolist(), idx[order].tolist(), rows, whole)

    def _keep(self, q: int, scores: list[float], texts: list[int], rows: int, whole: bool) -> None:
        """Keep a candidate list (sorted best first), cut after CANDIDATES at the end of a tie run."""
        n = len(texts)
        if n > CANDIDATES:
            cut, last = CANDIDATES, scores[CANDIDATES - 1]
            while cut < n and scores[cut] == last:
                cut += 1
            if cut < n:
                scores, texts, whole = scores[:cut], texts[:cut], False
        ties = len(set(scores)) < len(scores)
        self._cands[q] = (scores, texts, rows, whole, ties)
        rev = self._rev
        for c, sc in zip(texts, scores):
            holders = rev.get(c)
            if holders is None:
                rev[c] = {q: sc}
            else:
                holders[q] = sc

    def _candidates(self, q: int) -> tuple[list[float], list[int], int, bool, bool]:
        """Text ``q``'s candidate list over every known text (new rows scored and merged):
        scores, texts, rows covered, whole (not cut), has ties."""
        got = self._cands.get(q)
        rows = self._rows
        if got is None:
            row = _cos(self._matrix[q], self._matrix[:rows])
            self.n_scored += rows
            self._set_candidates(q, row, rows)
        elif got[2] < rows:
            old_scores, old_texts, seen, whole, _ = got
            fresh = _cos(self._matrix[q], self._matrix[seen:rows])
            self.n_scored += rows - seen
            floor = self.t_score - _EPS if whole else old_scores[-1]
            add = np.flatnonzero(fresh >= floor)
            idx = np.concatenate([np.asarray(old_texts, dtype=np.int64), add + seen])
            sc = np.concatenate([np.asarray(old_scores, dtype=np.float64), fresh[add]])
            self._store(q, idx, sc, rows, whole)
        return self._cands[q]

    # -- advice ----------------------------------------------------------------------------------
    def advise(self, text: str, now: float, exclude_key: str | None = None) -> Advice | None:
        """Mean duration / GPU utilisation of the top-k jobs finished by `now` with cosine >= t_score;
        None when there is none (the host scheduler's estimate stands)."""
        self.n_advised += 1
        if self._cand_t != self.t_score:
            self._reset_candidates()
        q = self._text_index.get(text)
        keep = exclude_key is None and now >= self._latest
        if keep and q is not None:
            m = self._memo.get(q)
            if m is not None:
                self.n_kept += 1
                adv = m[0]
                if adv is not None:
                    self.n_matched += 1
                return adv
        if not self.n_observed:
            return None
        if q is None:
            q = self._add_texts([text])[0]
        got = self._cands.get(q)
        if got is None or got[2] < self._rows:
            got = self._candidates(q)
        scores, texts, _, whole, ties = got
        adv = None
        if texts and exclude_key is None and (not ties or len(texts) == 1 or scores[1] != scores[0]):
            adv = self._answer_one(scores[0], texts[0], now)
        if adv is None:
            adv = self._answer(self._walk(scores, texts) if ties else zip(scores, texts), now, exclude_key)
        if not whole and (adv is None or len(adv.matches) < self.k):  # the cut list ran dry
            self.n_fallbacks += 1
            keep = False
            adv = self._answer(self._ranked(q, now), now, exclude_key)
        if keep:
            self._memo[q] = (adv, *self._last) if adv is not None and len(adv.matches) == self.k \
                else (adv, -math.inf, -math.inf)
        if adv is not None:
            self.n_matched += 1
        return adv

    def advise_plain(self, text: str, now: float, exclude_key: str | None = None) -> Advice | None:
        """The reference retrieval: score ``text`` against every known text, keep those with a job
        finished by ``now`` and cosine >= t_score, best first. No lists, no memo, no counters; the
        fast path of `advise` must answer the same."""
        if self.n_observed == 0:
            return None
        q = self._text_index.get(text)
        if q is None:
            vec = np.asarray(self.embedder.encode(text), dtype=np.float64)
            sims = _cos(vec, self._matrix[: self._rows])
        else:
            sims = _cos(self._matrix[q], self._matrix[: self._rows])
        return self._answer(self._ranked_from(sims, now), now, exclude_key)

    def _ranked(self, q: int, now: float) -> list[tuple[float, int]]:
        sims = _cos(self._matrix[q], self._matrix[: self._rows])
        self.n_scored += self._rows
        return self._ranked_from(sims, now)

    def _ranked_from(self, sims: np.ndarray, now: float) -> list[tuple[float, int]]:
        ok = np.flatnonzero((sims >= self.t_score - _EPS) & (self._first_finish[: self._rows] <= now))
        if ok.size == 0:
            return []
        entries = self._entries
        s = sims[ok].tolist()
        return sorted(zip(s, ok.tolist()), key=lambda p: (-p[0], entries[p[1]].seq))

    def _walk(self, scores: list[float], texts: list[int]) -> Iterable[tuple[float, int]]:
        """A candidate list in order: best score first, ties by first observation."""
        n = len(texts)
        i = 0
        entries = self._entries
        while i < n:
            s = scores[i]
            j = i + 1
            while j < n and scores[j] == s:
                j += 1
            if j == i + 1:
                yield s, texts[i]
            else:
                for c in sorted(texts[i:j], key=lambda c: entries[c].seq):
                    yield s, c
            i = j

    def _answer_one(self, s: float, c: int, now: float) -> Advice | None:
        """The common case, short: the best text alone has k jobs, all finished by ``now``; the same
        answer as `_answer` (the same sums in the same order). None: not the case."""
        e = self._entries[c]
        fin = e.finished
        k = self.k
        if len(fin) < k or fin[-1] > now:
            return None
        keys = e.keys[-k:]
        keys.reverse()
        ds = e.durations[-k:]
        us = e.utils[-k:]
        total = usum = 0.0
        un = 0
        for j in range(k - 1, -1, -1):
            total += ds[j]
            u = us[j]
            if u is not None:
                usum += u
                un += 1
        self._last = (s, e.seq)
        return Advice(total / k, usum / un if un else None, tuple(keys), s, (s,) * k)

    def _answer(self, ranked: Iterable[tuple[float, int]], now: float, exclude_key: str | None) -> Advice | None:
        """Mean of the top-k jobs: texts in ranked order, within a text the most recently finished
        first (recurring jobs drift, the latest runs say most); only jobs finished by ``now``."""
        k = self.k
        entries = self._entries
        keys: list[str] = []
        scores: list[float] = []
        total = usum = 0.0
        un = 0
        for s, c in ranked:
            e = entries[c]
            fin = e.finished
            if not fin or fin[0] > now:
                continue
            j = len(fin) - 1 if fin[-1] <= now else bisect.bisect_right(fin, now) - 1
            ks, ds, us = e.keys, e.durations, e.utils
            while j >= 0:
                key = ks[j]
                if key != exclude_key:
                    keys.append(key)
                    scores.append(s)
                    total += ds[j]
                    u = us[j]
                    if u is not None:
                        usum += u
                        un += 1
                    if len(keys) == k:
                        break
                j -= 1
            if len(keys) == k:
                self._last = (s, e.seq)
                break
        if not keys:
            return None
        return Advice(duration=total / len(keys), gpu_util=usum / un if un else None, matches=tuple(keys),
                      score=scores[0], scores=tuple(scores))

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
