"""The per-key job history of a served duration model (:mod:`models.serving`), as incremental state.

Why it exists: a request must not re-read the training history. For each history key of
:data:`features.duration.HISTORY_KEYS` (user, org, GPU count, user x GPUs, org x GPUs, recurring group)
and key value, the finished jobs are kept in training's order with the statistics after each, so a query
is one binary search per key and a finished job one O(1) append per key, with pandas' own floating-point
steps (bit-identical features; tests/test_serving_model.py checks it against pandas).
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
    with the statistics after it, and the accumulator after the last. Compact arrays: Philly's history
    is ~100k jobs x 5 keys. Every CHECKPOINT entries a copy of the accumulator is kept, so a job that
    ends before jobs already here (or a replaced one) costs a replay of the entries after it (plus at
    most CHECKPOINT), not of the whole key."""

    __slots__ = ("ends", "submits", "seqs", "durations", "stats", "acc", "checkpoints")
    CHECKPOINT = 64

    def __init__(self) -> None:
        self.ends, self.submits, self.durations = array.array("d"), array.array("d"), array.array("d")
        self.seqs, self.stats, self.acc = array.array("q"), array.array("d"), _Accumulator()
        self.checkpoints: list[_Accumulator] = []

    def _append(self, end: float, submit: float, seq: int, duration: float) -> None:
        if len(self.ends) % self.CHECKPOINT == 0:
            self.checkpoints.append(self.acc.copy())
        self.ends.append(end)
        self.submits.append(submit)
        self.seqs.append(seq)
        self.durations.append(duration)
        self.stats.extend(self.acc.add(duration))

    def add(self, end: float, submit: float, seq: int, duration: float) -> None:
        """O(1) when the job sorts after every job already here (finished jobs reported as they end);
        otherwise the entries after it are replayed."""
        n = len(self.ends)
        if n == 0 or (end, submit, seq) > (self.ends[-1], self.submits[-1], self.seqs[-1]):
            self._append(end, submit, seq, duration)
            return
        pos = bisect.bisect_left(self.ends, end)
        while pos < n and (self.ends[pos], self.submits[pos], self.seqs[pos]) < (end, submit, seq):
            pos += 1
        self._replay(pos, [(end, submit, seq, duration)], skip=None)

    def remove(self, seq: int) -> None:
        self._replay(self.seqs.index(seq), [], skip=seq)

    def _replay(self, pos: int, insert: list[tuple[float, float, int, float]], skip: int | None) -> None:
        """Entries from ``pos`` on again, after the ``insert`` ones, without the job ``skip``."""
        start = (pos // self.CHECKPOINT) * self.CHECKPOINT
        tail = insert + [r for r in zip(self.ends[start:], self.submits[start:], self.seqs[start:],
                                        self.durations[start:]) if r[2] != skip]
        tail.sort()
        self.acc = self.checkpoints[start // self.CHECKPOINT].copy()
        del self.checkpoints[start // self.CHECKPOINT:]
        for arr in (self.ends, self.submits, self.seqs, self.durations):
            del arr[start:]
        del self.stats[4 * start:]
        for row in tail:
            self._append(*row)

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
        for col in self.seen:
            self.seen[col] = self.seen[col] or job.has(col)
        if job.job_id is not None:
            self.by_id[job.job_id] = (seq, keys, end, job.t, job.duration)

    def remove(self, job_id: str) -> None:
        seq, keys = self.by_id.pop(job_id)[:2]
        for series, key in zip(self.series.values(), keys):
            if key is not None:
                series[key].remove(seq)

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
                b, stats = 4 * i - 4, s.stats
                count[r], mean[r], roll_mean[r], roll_median[r] = stats[b], stats[b + 1], stats[b + 2], stats[b + 3]
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
            if idx[0] >= 0:
                row[idx[0]] = float(i) if i == 0 else s.stats[4 * i - 4]
            if i:
                base = 4 * i - 4
                stats = s.stats
                if idx[1] >= 0:
                    row[idx[1]] = stats[base + 1]
                if idx[2] >= 0:
                    row[idx[2]] = stats[base + 2]
                if idx[3] >= 0:
                    row[idx[3]] = stats[base + 3]
                if idx[4] >= 0:
                    row[idx[4]] = s.durations[i - 1]

