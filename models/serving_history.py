"""The per-key job history of a served duration model (:mod:`models.serving`), as incremental state.

Why it exists: a request must not re-read the training history. For each history key of
:data:`features.duration.HISTORY_KEYS` (user, org, GPU count, user x GPUs, org x GPUs, recurring group)
and key value, the finished jobs are kept in training's order with the statistics after each, so a query
is one binary search per key and a finished job one O(1) append per key, with pandas' own floating-point
steps (bit-identical features; tests/test_serving_model.py checks it against pandas). A finished job that
ends before jobs already known is an O(log n) insert; the exact statistics after it are repaired in
bounded steps (:meth:`_History.repair`), see :class:`_Series`.
"""
from __future__ import annotations

import array
import bisect
import math
from collections import deque

from features.duration import COUNT_KEYS, ROLL

#: The statistics of one history key, in the order a _Series stores them.
STATS = ("count", "mean", "roll_mean", "roll_median", "last")


class _Accumulator:
    """The running statistics of one key value's finished jobs, updated in O(1) per job with the same
    floating-point steps as pandas (2.x): groupby ``cumsum`` (Kahan) / ``cumcount``, ``rolling(ROLL,
    min_periods=1).mean()`` (Kahan add / remove sums, the run-of-equal-values rule, the sign clamps) and
    ``.median()`` (middle of the sorted window, mean of the two middle values). Bit-identity with those
    is what tests/test_serving_model.py checks (also against pandas directly, on random series)."""

    __slots__ = ("count", "cum", "cum_c", "window", "nobs", "sum_x", "neg", "c_add", "c_rem", "same", "prev")

    def __init__(self) -> None:
        self.count, self.cum, self.cum_c, self.window = 0, 0.0, 0.0, deque()
        self.nobs, self.sum_x, self.neg, self.c_add, self.c_rem, self.same, self.prev = 0, 0.0, 0, 0.0, 0.0, 0, math.nan

    def copy(self) -> "_Accumulator":
        out = _Accumulator.__new__(_Accumulator)
        for name in self.__slots__:
            setattr(out, name, getattr(self, name))
        out.window = deque(self.window)
        return out

    def add(self, d: float) -> tuple[float, float, float, float]:
        """Append one finished job's duration; (count, mean, rolling mean, rolling median) after it."""
        self.count += 1
        y = d - self.cum_c
        t = self.cum + y
        self.cum_c = t - self.cum - y
        self.cum = t
        mean = t / self.count
        if len(self.window) == ROLL:  # the oldest value leaves the window
            v = self.window.popleft()
            self.nobs -= 1
            y = -v - self.c_rem
            t = self.sum_x + y
            self.c_rem = t - self.sum_x - y
            self.sum_x = t
            if math.copysign(1.0, v) < 0:
                self.neg -= 1
        self.window.append(d)
        self.nobs += 1
        y = d - self.c_add
        t = self.sum_x + y
        self.c_add = t - self.sum_x - y
        self.sum_x = t
        if math.copysign(1.0, d) < 0:
            self.neg += 1
        self.same = self.same + 1 if d == self.prev else 1
        self.prev = d
        if self.same >= self.nobs:
            roll_mean = d
        else:
            roll_mean = self.sum_x / self.nobs
            if (self.neg == 0 and roll_mean < 0) or (self.neg == self.nobs and roll_mean > 0):
                roll_mean = 0.0
        w = sorted(self.window)
        n = len(w)
        median = w[n // 2] if n % 2 else (w[n // 2] + w[n // 2 - 1]) / 2
        return float(self.count), mean, roll_mean, median


class _Series:
    """One key value's finished jobs in training's order (end time, then submission, then arrival), each
    with the statistics after it. Compact arrays: Philly's history is ~100k jobs x 5 keys.

    The statistics are exact (pandas' own floating-point steps) for the first ``valid`` entries; the
    accumulator ``acc`` is the one after entry ``valid``. A job reported in end-time order is one O(1)
    append (the usual case: finished jobs reported as they end). A job that ends before jobs already here
    (or a replaced / removed one) is a binary search and an array insert / delete (a C memmove): O(log n)
    Python steps; it only lowers ``valid`` to the entry's position. The statistics after it are brought
    back by :meth:`repair` in bounded steps: each request that reported finished jobs repairs up to a
    budget proportional to its records (models.serving: _REPAIR_PER_RECORD per record, at least
    _REPAIR_MIN), releasing the model's lock between steps, so a concurrent query never waits for a whole
    replay and the work per record stays O(log n) + O(1) amortised.
    A query that reads an entry past ``valid`` before it is repaired gets the statistics computed
    directly from the durations (:meth:`stats_at`): count, last and the rolling median are exact, the
    mean and rolling mean equal up to rounding (pandas' Kahan running sums may differ in the last bits).
    Every CHECKPOINT entries a copy of the accumulator is kept, so a repair starts at most CHECKPOINT
    entries before ``valid``."""

    __slots__ = ("ends", "submits", "seqs", "durations", "stats", "acc", "checkpoints", "valid")
    CHECKPOINT = 64

    def __init__(self) -> None:
        self.ends, self.submits, self.durations = array.array("d"), array.array("d"), array.array("d")
        self.seqs, self.stats, self.acc = array.array("q"), array.array("d"), _Accumulator()
        self.checkpoints: list[_Accumulator] = []
        self.valid = 0

    def _advance(self) -> None:
        """Exact statistics for entry ``valid`` (the accumulator steps over it)."""
        k = self.valid
        if k % self.CHECKPOINT == 0:
            self.checkpoints.append(self.acc.copy())
        self.stats.extend(self.acc.add(self.durations[k]))
        self.valid = k + 1

    def _invalidate(self, pos: int) -> None:
        """Entries from ``pos`` on changed: statistics are kept up to the checkpoint at or before it."""
        if pos >= self.valid:
            return
        start = (pos // self.CHECKPOINT) * self.CHECKPOINT
        self.acc = self.checkpoints[start // self.CHECKPOINT].copy()
        del self.checkpoints[start // self.CHECKPOINT:]
        del self.stats[4 * start:]
        self.valid = start

    def _position(self, end: float, submit: float, seq: int) -> int:
        pos = bisect.bisect_left(self.ends, end)
        n = len(self.ends)
        while pos < n and self.ends[pos] == end and (self.submits[pos], self.seqs[pos]) < (submit, seq):
            pos += 1
        return pos

    def add(self, end: float, submit: float, seq: int, duration: float) -> None:
        """O(1) when the job sorts after every job already here; otherwise O(log n) (an insert)."""
        n = len(self.ends)
        if n == 0 or (end, submit, seq) > (self.ends[-1], self.submits[-1], self.seqs[-1]):
            pos = n
            self.ends.append(end)
            self.submits.append(submit)
            self.seqs.append(seq)
            self.durations.append(duration)
        else:
            pos = self._position(end, submit, seq)
            self.ends.insert(pos, end)
            self.submits.insert(pos, submit)
            self.seqs.insert(pos, seq)
            self.durations.insert(pos, duration)
            self._invalidate(pos)
        if self.valid == pos:  # in order (and nothing pending): the exact statistics at once
            self._advance()

    def remove(self, seq: int, end: float | None = None, submit: float | None = None) -> None:
        """Drop the job ``seq`` (found by binary search when its end and submission are given)."""
        pos = self._position(end, submit, seq) if end is not None else -1
        if not (0 <= pos < len(self.seqs) and self.seqs[pos] == seq):
            pos = self.seqs.index(seq)
        for arr in (self.ends, self.submits, self.seqs, self.durations):
            del arr[pos]
        if pos < self.valid:
            self._invalidate(pos)
        elif self.valid == len(self.ends) and self.valid % self.CHECKPOINT == 0 and \
                len(self.checkpoints) > self.valid // self.CHECKPOINT:
            del self.checkpoints[self.valid // self.CHECKPOINT:]

    def pending(self) -> int:
        """Entries whose exact statistics are still to be computed."""
        return len(self.ends) - self.valid

    def repair(self, budget: int) -> int:
        """Exact statistics for up to ``budget`` more entries; how many were done."""
        todo = min(budget, len(self.ends) - self.valid)
        for _ in range(todo):
            self._advance()
        return todo

    def stats_at(self, i: int) -> tuple[float, float, float, float]:
        """(count, mean, rolling mean, rolling median) after the first ``i`` entries (i >= 1)."""
        if i <= self.valid:
            b = 4 * i - 4
            st = self.stats
            return st[b], st[b + 1], st[b + 2], st[b + 3]
        d = self.durations
        window = d[max(0, i - ROLL):i]
        w = sorted(window)
        m = len(w)
        median = w[m // 2] if m % 2 else (w[m // 2] + w[m // 2 - 1]) / 2
        if w[0] == w[-1]:
            roll_mean = w[0]
        else:
            roll_mean = math.fsum(window) / m
            if (w[0] >= 0 and roll_mean < 0) or (w[-1] < 0 and roll_mean > 0):
                roll_mean = 0.0
        if self.valid:  # the exact running sum up to ``valid``, the rest summed exactly
            head = self.stats[4 * self.valid - 3] * self.valid
            mean = (head + math.fsum(d[self.valid:i])) / i
        else:
            mean = math.fsum(d[:i]) / i
        return float(i), mean, roll_mean, median

    def __len__(self) -> int:
        return len(self.ends)


class _History:
    """Per history key (features.duration.HISTORY_KEYS) and key value: a :class:`_Series`; plus which
    key columns have ever held a value (training gives NaN for a key whose column is empty throughout)
    and the finished jobs by id (a finished record with a known id replaces that job)."""

    def __init__(self, keys: dict[str, tuple[str, ...]]):
        self.keys = keys
        self.series: dict[str, dict[str, _Series]] = {name: {} for name in keys}
        self.seen: dict[str, bool] = {c: False for cols in keys.values() for c in cols}
        #: job id -> (seq, key strings, end, submit, duration) of the jobs that have one
        self.by_id: dict[str, tuple] = {}
        self.next_seq = 0
        #: the series with entries whose exact statistics are pending (out-of-order finished jobs)
        self.dirty: set[_Series] = set()

    def add(self, job: "_Job") -> None:
        end = job.t + job.queue + job.duration
        if job.job_id is not None and job.job_id in self.by_id:
            if self.by_id[job.job_id][1:] == (job.keys(self.keys), end, job.t, job.duration):
                return  # the same job resent: nothing changes
            self.remove(job.job_id)
        seq, self.next_seq = self.next_seq, self.next_seq + 1
        keys = job.keys(self.keys)
        for (name, series), key in zip(self.series.items(), keys):
            if key is not None:
                s = series.get(key)
                if s is None:
                    s = series[key] = _Series()
                s.add(end, job.t, seq, job.duration)
                if s.valid < len(s.ends):
                    self.dirty.add(s)
        for col in self.seen:
            self.seen[col] = self.seen[col] or job.has(col)
        if job.job_id is not None:
            self.by_id[job.job_id] = (seq, keys, end, job.t, job.duration)

    def remove(self, job_id: str) -> None:
        seq, keys, end, submit, _ = self.by_id.pop(job_id)
        for series, key in zip(self.series.values(), keys):
            if key is not None:
                s = series[key]
                s.remove(seq, end, submit)
                if s.pending():
                    self.dirty.add(s)

    def repair(self, budget: int) -> int:
        """Exact statistics again for up to ``budget`` entries of the series that out-of-order finished jobs
        changed (see :class:`_Series`); how many entries were repaired."""
        done = 0
        while self.dirty and done < budget:
            s = next(iter(self.dirty))
            done += s.repair(budget - done)
            if not s.pending():
                self.dirty.discard(s)
        return done

    def pending(self) -> int:
        """Entries whose exact statistics are still to be computed."""
        return sum(s.pending() for s in self.dirty)

    def layout(self, columns: list[str]) -> list[tuple[tuple[str, ...], tuple[int, ...]]]:
        """Per history key: its columns and the row index of each of its statistics (-1: not a feature)."""
        index = {c: i for i, c in enumerate(columns)}
        return [(cols, tuple(index.get(f"hist_{name}_{stat}", -1) if stat != "count" or name in COUNT_KEYS else -1
                             for stat in STATS)) for name, cols in self.keys.items()]

    def column_features(self, keys: list[list[str | None]], t: list[float], present: list[bool],
                        layout: list) -> dict[int, list[float]]:
        """The hist_* features of a batch of queries, column by column: {feature index: values}, as
        :meth:`features` gives them record by record (``keys``: per history key, each record's key
        string; ``t``: each record's time). Features not in the result are NaN throughout."""
        out: dict[int, list[float]] = {}
        n, nan, find = len(t), math.nan, bisect.bisect_left
        for series, kstr, ok, (_, idx) in zip(self.series.values(), keys, present, layout):
            if not ok:
                continue
            count, mean, roll_mean, roll_median, last = [nan] * n, [nan] * n, [nan] * n, [nan] * n, [nan] * n
            get = series.get
            for r, key in enumerate(kstr):
                if key is None:
                    continue  # a missing key part: NaN, count included
                s = get(key)
                i = 0 if s is None else find(s.ends, t[r])
                if i == 0:
                    count[r] = 0.0
                    continue
                if i <= s.valid:
                    b, stats = 4 * i - 4, s.stats
                    count[r], mean[r], roll_mean[r], roll_median[r] = stats[b], stats[b + 1], stats[b + 2], stats[b + 3]
                else:
                    count[r], mean[r], roll_mean[r], roll_median[r] = s.stats_at(i)
                last[r] = s.durations[i - 1]
            for j, values in zip(idx, (count, mean, roll_mean, roll_median, last)):
                if j >= 0:
                    out[j] = values
        return out

    def features(self, job: "_Job", present: list[bool], layout: list, row: list[float]) -> None:
        """The hist_* features of a query (not finished), written into ``row`` (pre-filled with NaN).
        ``present[k]``: every column of key k has held a value (else training's features are NaN)."""
        for (series, key, ok, (_, idx)) in zip(self.series.values(), job.keys(self.keys), present, layout):
            if not ok:
                continue
            if key is None:
                continue  # a missing key part: NaN, count included
            s = series.get(key)
            i = 0 if s is None else bisect.bisect_left(s.ends, job.t)
            if i == 0:
                if idx[0] >= 0:
                    row[idx[0]] = 0.0
                continue
            stats = s.stats_at(i)
            for j, v in zip(idx[:4], stats):
                if j >= 0:
                    row[j] = v
            if i:
                if idx[4] >= 0:
                    row[idx[4]] = s.durations[i - 1]

