"""Raw job records of a served model (:mod:`models.serving`) validated as the trace loaders validate rows.

Why a module of its own: the record rules (features.jobtable's GPU-count rule and reasons, the loaders'
time parser and bounds) are the serving contract a scheduler meets; they are kept apart from the model
and its history state so that they can be read and tested as one table of rules.
"""
from __future__ import annotations

import functools
import math
import re
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pandas as pd

from features.duration import group_key, normalise_name
from features.jobtable import (MAX_CLOCK_S, MAX_DURATION_S, MAX_GPUS_PER_JOB, MAX_SUBMIT_TS, MIN_SUBMIT_TS, REASONS,
                               LoadReport, as_number, gpu_rejects)

_NS = 1_000_000_000
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
#: ISO-8601 times that Python parses exactly as pandas does (at most microseconds); others go through
#: the loaders' parser.
_ISO = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}:\d{2})?")


def _missing(v: Any) -> bool:
    return v is None or (type(v) is float and v != v) or v is pd.NA or v is pd.NaT or (isinstance(v, float) and v != v)


def _series(v: Any) -> pd.Series:
    return pd.Series([v], dtype=object)


def _report():
    return LoadReport("<request>", "records")


def _gpus(v: Any) -> tuple[int | None, str | None]:
    """The loaders' GPU-count rule (features.jobtable.gpu_rejects, its reasons): whole numbers in
    [1, MAX_GPUS_PER_JOB]; JSON booleans are not counts. Plain ints / whole floats in range skip pandas."""
    if isinstance(v, bool):
        return None, REASONS["gpu_text"] + " (a JSON boolean)"
    if isinstance(v, (int, float)) and 1 <= v <= MAX_GPUS_PER_JOB and float(v).is_integer():
        return int(v), None
    rep = _report()
    if bool(gpu_rejects(_series(v), rep).iloc[0]):
        return int(as_number(_series(v))[0].iloc[0]), None
    return None, next(iter(rep.rejected), "invalid GPU count")


def _number(v: Any, low: float, high: float) -> float | None:
    """A finite number in [low, high] (features.jobtable.as_number for anything but plain numbers)."""
    if isinstance(v, bool):
        return None
    if not isinstance(v, (int, float)):
        num, text = as_number(_series(v))
        if bool(text.iloc[0]):
            return None
        v = float(num.iloc[0])
    v = float(v)
    return v if low <= v <= high else None


def _timestamp_ns(v: Any) -> tuple[int | None, str | None]:
    """A submit_ts as ns since the epoch (UTC; no offset = UTC): plain ISO-8601 by Python, anything else
    by the loaders' parser (features.traces._io.parse_datetimes); the loaders' 2000..2100 bound."""
    ns = None
    if isinstance(v, str) and _ISO.fullmatch(v.strip()):
        try:
            dt = datetime.fromisoformat(v.strip())
            if dt.tzinfo is None:
                dt = dt.replace(tzinfo=timezone.utc)
            delta = dt - _EPOCH
            ns = (delta.days * 86400 + delta.seconds) * _NS + delta.microseconds * 1000
        except ValueError:
            ns = None
    if ns is None and not isinstance(v, (bool, int, float)):
        from features.traces._io import parse_datetimes

        times, oor = parse_datetimes(_series(v), _report(), tz="UTC", column="submit_ts")
        if bool(oor.iloc[0]):
            return None, f"submit_ts {v!r}: {REASONS['submit_range']}"
        if pd.notna(times.iloc[0]):
            ns = int(times.iloc[0].value)
    if ns is None:
        return None, f"submit_ts {v!r} is not a time"
    if not MIN_SUBMIT_TS.value <= ns < MAX_SUBMIT_TS.value:
        return None, f"submit_ts {v!r}: {REASONS['submit_range']}"
    return ns, None


def _seconds_to_ns(t: float) -> int:
    """pandas.to_timedelta(t, unit="s") in ns (its float cast: whole part, then the fraction rounded to
    9 decimals as numpy rounds), so calendar features derived from seconds match training's."""
    base = int(t)
    frac = float(round((t - base) * 1e9)) / 1e9
    return base * _NS + int(frac * _NS)


def _text(v: Any) -> str | None:
    if v is None or type(v) is str:
        return v
    if _missing(v):
        return None
    if isinstance(v, (dict, list, tuple, set)):
        raise TypeError
    return str(v)


_TRUE, _FALSE = ("true", "1", "yes", "y", "t"), ("false", "0", "no", "n", "f", "")


def _flag(v: Any) -> bool | None:
    """A 'finished' value: True, 1, 'true', 'yes' (and the like) are True; False, 0, 'false', 'no' and
    nulls are False; anything else (``"maybe"``, 2, a list) is None: the record is refused, not taken as
    a query."""
    if _missing(v):
        return False
    if isinstance(v, str):
        text = v.strip().lower()
        return True if text in _TRUE else False if text in _FALSE else None
    if isinstance(v, (bool, int, float, np.bool_, np.integer, np.floating)) and v in (0, 1):
        return bool(v)
    return None


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


class _Job:
    """One validated record: its trace-clock time, calendar, raw fields and (finished) duration."""

    __slots__ = ("job_id", "t", "hour", "weekday", "num_gpus", "num_nodes", "user", "org", "group_id",
                 "finished", "duration", "queue", "_keys")
    f_name = "<unknown>"  # training fits no name bucketer (pipelines.train)

    @property
    def f_gpus(self) -> float:
        return float(self.num_gpus)

    @property
    def f_org(self) -> str:
        return "<unknown>" if self.org is None else self.org

    @property
    def f_user(self) -> str:
        return "<unknown>" if self.user is None else self.user

    def has(self, col: str) -> bool:
        return col == "num_gpus" or (col != "name_bucket" and getattr(self, col) is not None)

    def keys(self, keys: dict[str, tuple[str, ...]]) -> tuple[str | None, ...]:
        """features.duration.history_features' key string per history key (None where a part is missing)."""
        if self._keys is None:
            gpus = str(self.num_gpus)
            out = []
            for cols in keys.values():
                if len(cols) == 1:
                    c = cols[0]
                    out.append(gpus if c == "num_gpus" else None if c == "name_bucket" else getattr(self, c))
                else:
                    parts = [gpus if c == "num_gpus" else None if c == "name_bucket" else getattr(self, c)
                             for c in cols]
                    out.append(None if None in parts else "|".join(parts))
            self._keys = tuple(out)
        return self._keys


@functools.lru_cache(maxsize=1 << 16)
def _group(name: str | None, user: str | None, org: str | None, gpus: int) -> str:
    """features.duration's recurring-group id of a record (cached: schedulers resubmit the same jobs)."""
    return group_key(normalise_name(name), user, org, gpus)


class _Clock:
    """How a model turns submit_ts / submit_time into training's clock and calendar."""

    def __init__(self, clock: str, origin_ns: int | None):
        self.clock, self.origin_ns = clock, origin_ns

    def parse(self, rec: dict[str, Any]) -> _Job | str:
        """A record as a _Job, or the reason it is refused (the first that applies)."""
        if not isinstance(rec, dict):
            return "not a JSON object of job fields"
        job = _Job()
        job._keys = None
        gpus = rec.get("num_gpus")
        if type(gpus) is int and 1 <= gpus <= MAX_GPUS_PER_JOB:
            job.num_gpus = gpus
        elif _missing(gpus) or (isinstance(gpus, str) and not gpus.strip()):
            return f"num_gpus: {REASONS['gpu_missing']}"
        else:
            job.num_gpus, why = _gpus(gpus)
            if why:
                return f"num_gpus {gpus!r}: {why}"
        nodes = rec.get("num_nodes")
        if type(nodes) is int and 1 <= nodes <= MAX_GPUS_PER_JOB:
            job.num_nodes = float(nodes)
        elif _missing(nodes):
            job.num_nodes = math.nan
        else:
            n = _number(nodes, 1, MAX_GPUS_PER_JOB)
            if n is None or not n.is_integer():
                return f"num_nodes {nodes!r}: not a whole number in [1, {MAX_GPUS_PER_JOB}]"
            job.num_nodes = n
        try:
            get = rec.get
            job.job_id, job.user, job.group_id = _text(get("job_id")), _text(get("user")), _text(get("group_id"))
            org = get("org")
            job.org = _text(org) if org is not None else _text(get("vc"))
            if job.org is None and org is not None:
                job.org = _text(get("vc"))
            name = _text(get("job_name"))
        except TypeError:
            bad = next(k for k in ("job_id", "user", "group_id", "org", "vc", "job_name")
                       if isinstance(rec.get(k), (dict, list, tuple, set)))
            return f"{bad} must be text, got {type(rec[bad]).__name__}"
        ts, secs = rec.get("submit_ts"), rec.get("submit_time")
        ns = None
        if not _missing(ts):
            ns, why = _timestamp_ns(ts)
            if why:
                return why
        if ns is not None and self.origin_ns is not None:  # a timestamp wins: seconds only on training's clock
            job.t = float(ns - self.origin_ns) / _NS
        elif not _missing(secs):
            t = _number(secs, 0.0, MAX_CLOCK_S)
            if t is None:
                return f"submit_time {secs!r}: " + (REASONS["clock_range"] if _number(secs, -math.inf, math.inf)
                                                    is not None else REASONS["submit_text"])
            job.t = t
        elif ns is not None:
            return ("this model's history has no clock: send submit_time (seconds on the training trace's "
                    "clock) instead of submit_ts")
        else:
            return f"{REASONS['missing_submit']}: send submit_ts (ISO-8601) or submit_time (seconds)"
        if self.clock == "ts":
            if ns is None:
                ns = self.origin_ns + _seconds_to_ns(job.t)
            job.hour, job.weekday = float(ns // (3600 * _NS) % 24), float((ns // (86400 * _NS) + 3) % 7)
        else:  # training's calendar used the seconds clock
            job.hour, job.weekday = float(int(job.t // 3600 % 24)), float(int(job.t // 86400 % 7))
        if job.group_id is None:
            job.group_id = _group(name, job.user, job.org, job.num_gpus)
        flag = _flag(rec.get("finished"))
        if flag is None:
            return f"finished {_short(rec.get('finished'))}: not true or false"
        job.finished = flag
        job.duration, job.queue = math.inf, 0.0
        if job.finished:
            d = rec.get("duration")
            if _missing(d):
                return f"finished record: duration: {REASONS['duration_missing']}"
            job.duration = _number(d, 0.0, MAX_DURATION_S)
            if job.duration is None:
                num = _number(d, -math.inf, math.inf)
                why = REASONS["duration_text"] if num is None else REASONS["duration_missing"] if num < 0 \
                    else REASONS["duration_huge"]
                return f"finished record: duration {d!r}: {why}"
            q = rec.get("queue_time")
            if not _missing(q):
                job.queue = _number(q, 0.0, MAX_DURATION_S)
                if job.queue is None:
                    return f"finished record: queue_time {q!r}: not a number of seconds in [0, {MAX_DURATION_S:.0f}]"
        return job


# -- a batch as columns ----------------------------------------------------------------------------------
#: A run of timestamps numpy parses exactly as the per-record path does (date, hours, minutes, optional
#: seconds and up to 6 fraction digits, optional Z), one per line; anything else goes record by record.
_ISO_RUN = re.compile(r"(?:\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?Z?\n)*")
_TEXT_FIELDS = ("job_id", "user", "group_id", "org", "vc", "job_name")


class _Columns:
    """A request's query records (none finished) as columns, with exactly the values _Clock.parse gives
    each record. Why: a 1,000-job batch validated and featurised record by record spent most of its time
    in per-record Python calls and attribute look-ups; a column is one comprehension or one numpy call."""

    __slots__ = ("n", "t", "hour", "weekday", "num_gpus", "num_nodes", "user", "org", "group_id")

    def __init__(self, n: int):
        self.n = n
        self.t: list[float] = []
        self.hour: Any = None
        self.weekday: Any = None
        self.num_gpus: list[int] = []
        self.num_nodes: Any = None
        self.user: list[str | None] = []
        self.org: list[str | None] = []
        self.group_id: list[str] = []

    def has(self, col: str) -> bool:
        """Some record has a value for ``col`` (_Job.has over the batch)."""
        if col == "num_gpus":
            return True
        if col == "name_bucket":
            return False
        return any(v is not None for v in getattr(self, col))

    def keys(self, keys: dict[str, tuple[str, ...]]) -> list[list[str | None]]:
        """Per history key, each record's key string (_Job.keys, column by column)."""
        gpus = [str(g) for g in self.num_gpus]
        none = [None] * self.n
        out = []
        for cols in keys.values():
            parts = [gpus if c == "num_gpus" else none if c == "name_bucket" else getattr(self, c) for c in cols]
            if len(parts) == 1:
                out.append(parts[0])
            elif len(parts) == 2:
                out.append([None if a is None or b is None else a + "|" + b for a, b in zip(*parts)])
            else:
                out.append([None if None in p else "|".join(p) for p in zip(*parts)])
        return out


def _plain_numbers(values: list[Any]) -> np.ndarray | None:
    """JSON numbers (no booleans) as floats, None as NaN; None when some value is anything else."""
    if not all(v is None or type(v) is int or type(v) is float for v in values):
        return None
    return np.array([math.nan if v is None else v for v in values], dtype=float)


def parse_columns(records: list[Any], clock: Any) -> _Columns | None:
    """The batch as :class:`_Columns` when every record is a plain query (a dict, not finished, JSON
    numbers and text of the usual types, ISO times numpy reads as Python does) and valid; otherwise None,
    and the caller takes the per-record path (which also words any refusal, one line per bad record)."""
    n = len(records)
    if not n or not all(type(r) is dict for r in records):
        return None

    def col(name: str) -> list[Any]:
        return [r.get(name) for r in records]

    if any(v is not None and v is not False for v in col("finished")):
        return None
    out = _Columns(n)
    gpus = col("num_gpus")
    if all(type(v) is int for v in gpus):
        if min(gpus) < 1 or max(gpus) > MAX_GPUS_PER_JOB:
            return None
        out.num_gpus = gpus
    else:
        a = _plain_numbers(gpus)
        if a is None or not bool(np.all((a >= 1) & (a <= MAX_GPUS_PER_JOB) & (a == np.floor(a)))):
            return None  # NaN fails every comparison
        out.num_gpus = [int(v) for v in gpus]
    nodes = _plain_numbers(col("num_nodes"))
    if nodes is None or not bool(np.all(np.isnan(nodes) | ((nodes >= 1) & (nodes <= MAX_GPUS_PER_JOB)
                                                           & (nodes == np.floor(nodes))))):
        return None
    out.num_nodes = nodes
    text = {}
    for name in _TEXT_FIELDS:
        values = col(name)
        if not all(v is None or type(v) is str for v in values):
            return None
        text[name] = values
    out.user = text["user"]
    out.org = [o if o is not None else v for o, v in zip(text["org"], text["vc"])]
    if not _column_times(out, col("submit_ts"), col("submit_time"), clock):
        return None
    out.group_id = [g if g is not None else _group(nm, u, o, k) for g, nm, u, o, k in
                    zip(text["group_id"], text["job_name"], out.user, out.org, out.num_gpus)]
    return out


def _column_times(out: _Columns, ts: list[Any], secs: list[Any], clock: Any) -> bool:
    """Fill t / hour / weekday as _Clock.parse does; False where the batch needs the per-record path."""
    origin = clock.origin_ns
    if all(type(v) is str for v in ts) and origin is not None:
        if not _ISO_RUN.fullmatch("\n".join(ts) + "\n"):
            return False
        try:
            ns = np.array([v[:-1] if v[-1] == "Z" else v for v in ts], dtype="datetime64[us]").astype(np.int64)
        except ValueError:  # a day or hour out of range: the per-record path words it
            return False
        ns = ns * 1000
        if not bool(np.all((ns >= MIN_SUBMIT_TS.value) & (ns < MAX_SUBMIT_TS.value))):
            return False
        out.t = ((ns - origin).astype(float) / _NS).tolist()
    elif all(v is None for v in ts):
        a = _plain_numbers(secs)
        if a is None or not bool(np.all((a >= 0.0) & (a <= MAX_CLOCK_S))):
            return False
        out.t = [float(v) for v in secs]
        if clock.clock == "ts":
            ns = np.array([origin + _seconds_to_ns(t) for t in out.t], dtype=np.int64)
    else:
        return False
    if clock.clock == "ts":
        out.hour = (ns // (3600 * _NS) % 24).astype(float)
        out.weekday = ((ns // (86400 * _NS) + 3) % 7).astype(float)
    else:
        out.hour = np.array([float(int(t // 3600 % 24)) for t in out.t])
        out.weekday = np.array([float(int(t // 86400 % 7)) for t in out.t])
    return True
