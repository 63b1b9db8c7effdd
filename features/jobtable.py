"""The canonical job table every trace loader returns, and the load report that goes with it.

One row per job, seconds and SI units, missing values as nulls (never sentinels). Loaders never drop a
row silently: every row that does not make it into the table is counted under a reason in the report,
and the report balances: rows read = kept + rejected (by reason) + duplicates dropped.

Errors versus rejects. A problem with the file as a whole (missing, a directory, unreadable, a broken
or truncated compressed stream, not UTF-8, not CSV / JSON, a missing column, a JSON value of the wrong
type) raises TraceError naming the file and, where there is one, the row and field; the CLI prints it on
one line and exits 2. A problem with one row (wrong number of fields, unparseable or out-of-bounds
value) rejects that row under a named reason. A trace with no job rows, or whose rows are all rejected,
is an error in every format (finalize(require_jobs=True)). The plausibility bounds are documented
beside MAX_DURATION_S below.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

#: The dtype of every text column of a JobTable: pandas' string dtype stored as a pyarrow array (what the
#: fast CSV reader gives; keeping it costs nothing, turning 1.75 M ids into Python strings costs seconds).
#: Its semantics are those of ``"string"`` (pd.NA for missing, nullable boolean comparisons, ``== "string"``).
TEXT_DTYPE = pd.StringDtype("pyarrow")

#: Columns every JobTable has, in this order, with their pandas dtypes ("string": TEXT_DTYPE).
REQUIRED_COLUMNS: dict[str, str] = {
    "job_id": "string",
    "submit_time": "float64",  # seconds from trace start (first submission = 0)
    "submit_ts": "datetime64[ns, UTC]",  # absolute, tz-aware (null where the trace has no clock)
    "duration": "float64",  # seconds of exclusive run
    "num_gpus": "Int64",
}
#: Optional canonical columns; loaders add the ones their trace has (nulls elsewhere).
OPTIONAL_COLUMNS: dict[str, str] = {
    "num_nodes": "Int64",
    "user": "string",
    "org": "string",  # virtual cluster / tenant / organisation
    "job_name": "string",
    "group_id": "string",
    "status": "string",
    "gpu_type": "string",
    "job_class": "string",  # e.g. hp / spot
    "model": "string",
}


class TraceError(ValueError):
    """A trace that cannot be read: the message names the file, the row and the field."""

    def __init__(self, path: str | Path, message: str, row: int | None = None, column: str | None = None):
        where = f"{path}"
        if row is not None:
            where += f", row {row}"
        if column is not None:
            where += f", field '{column}'"
        super().__init__(f"{where}: {message}")
        self.path, self.row, self.column = str(path), row, column


@dataclass
class LoadReport:
    """What happened to every row of a trace: read, kept, rejected by reason, duplicates."""

    source: str
    format: str
    rows_read: int = 0
    rows_kept: int = 0
    rejected: dict[str, int] = field(default_factory=dict)
    duplicates_found: int = 0
    duplicates_action: str = "none found"
    notes: list[str] = field(default_factory=list)
    synthetic: bool = False

    def reject(self, reason: str, count: int) -> None:
        if count:
            self.rejected[reason] = self.rejected.get(reason, 0) + int(count)

    @property
    def rows_rejected(self) -> int:
        return sum(self.rejected.values())

    def check_balance(self) -> None:
        """Every row read is either kept, rejected or a removed duplicate."""
        removed = self.duplicates_found if self.duplicates_action.startswith("dropped") else 0
        if self.rows_read != self.rows_kept + self.rows_rejected + removed:
            raise AssertionError(
                f"load report does not balance: read {self.rows_read} != kept {self.rows_kept} + "
                f"rejected {self.rows_rejected} + duplicates removed {removed}"
            )

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "format": self.format,
            "synthetic": self.synthetic,
            "rows_read": self.rows_read,
            "rows_kept": self.rows_kept,
            "rows_rejected": self.rows_rejected,
            "rejected_by_reason": dict(self.rejected),
            "duplicates_found": self.duplicates_found,
            "duplicates_action": self.duplicates_action,
            "notes": list(self.notes),
        }

    def render(self) -> str:
        lines = [
            f"source:     {self.source}" + ("  (SYNTHETIC: generated, not a real trace)" if self.synthetic else ""),
            f"format:     {self.format}",
            f"rows read:  {self.rows_read}",
            f"rows kept:  {self.rows_kept}",
            f"rejected:   {self.rows_rejected}",
        ]
        for reason, n in sorted(self.rejected.items(), key=lambda kv: -kv[1]):
            lines.append(f"  - {reason}: {n}")
        lines.append(f"duplicates: {self.duplicates_found} ({self.duplicates_action})")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


@dataclass
class JobTable:
    """A validated canonical job table plus its load report."""

    frame: pd.DataFrame
    report: LoadReport

    def __len__(self) -> int:
        return len(self.frame)

    @property
    def synthetic(self) -> bool:
        return self.report.synthetic


#: Plausibility bounds every loader enforces (via :func:`finalize`). A row outside them is not an error
#: of the whole file: it is rejected and counted under the reason named in REASONS.
#:
#: * duration: a finite number of seconds in [0, MAX_DURATION_S] (366 days; the longest job in the real
#:   Philly trace runs 54 days);
#: * absolute submit times (formats with a calendar clock: philly, philly-json, helios, acme) lie in
#:   [MIN_SUBMIT_TS, MAX_SUBMIT_TS) = [2000-01-01, 2100-01-01) UTC;
#: * trace-clock times (formats without a date: pai, alibaba-v2023 count seconds from their own origin)
#:   lie in [0, MAX_CLOCK_S] (4.1e9 s: 2100-01-01 read as a Unix time, so both "seconds since trace
#:   start" and "Unix seconds" fit);
#: * GPU counts are whole numbers in [1, MAX_GPUS_PER_JOB]; text, missing (where the format has a GPU
#:   column), negative, zero (CPU-only), fractional and larger counts each have their own reason.
MAX_DURATION_S = 366 * 86400.0
MIN_SUBMIT_TS = pd.Timestamp("2000-01-01", tz="UTC")
MAX_SUBMIT_TS = pd.Timestamp("2100-01-01", tz="UTC")
MAX_CLOCK_S = float((MAX_SUBMIT_TS - pd.Timestamp("1970-01-01", tz="UTC")).total_seconds())
MAX_GPUS_PER_JOB = 100_000

#: Reject reasons shared by all loaders (the load report counts rows under these names).
REASONS = {
    "fields": "wrong number of fields",
    "missing_id": "missing job id",
    "missing_submit": "missing submit time",
    "submit_text": "submit time not a number",
    "submit_range": "submit time outside 2000-01-01..2100-01-01",
    "clock_range": f"trace-clock time outside 0..{MAX_CLOCK_S:.4g} s",
    "duration_text": "duration not a number",
    "duration_missing": "missing or negative duration",
    "duration_huge": f"implausible duration (> {MAX_DURATION_S / 86400:.0f} days)",
    "gpu_text": "GPU count not a number",
    "gpu_missing": "missing GPU count",
    "gpu_negative": "negative GPU count",
    "gpu_zero": "no GPU requested (CPU-only job)",
    "gpu_huge": f"implausible GPU count (> {MAX_GPUS_PER_JOB})",
    "gpu_fraction": "fractional GPU count",
}


#: Text a fast path parses: plain decimals of at most 15 characters (so at most 15 digits: exact in a
#: float64 mantissa, divided once by an exact power of ten, hence the same double as pandas' parser gives),
#: no exponent, no spaces, no hexadecimal. Anything else takes pandas' own path.
_PLAIN_INT = r"^[+-]?[0-9]+$"
_PLAIN_DECIMAL = r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)$"
_FAST_MAX_CHARS = 15


def as_text(values: pd.Series) -> pd.Series:
    """``values`` as TEXT_DTYPE: pyarrow-backed text as it is (no copy), anything else converted once."""
    if is_arrow_text(values):
        return values
    return values.astype(TEXT_DTYPE)


def null_text(index: pd.Index) -> pd.Series:
    """A TEXT_DTYPE column of nulls only, made without repeating pd.NA per row."""
    import pyarrow as pa

    return pd.Series(pd.arrays.ArrowStringArray(pa.nulls(len(index), pa.large_string())), index=index)


def is_arrow_text(values: pd.Series) -> bool:
    """Whether ``values`` holds pyarrow-backed strings (what the fast CSV reader gives)."""
    dtype = values.dtype
    return isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow"


def as_object_text(values: pd.Series) -> pd.Series:
    """Text as the pandas CSV parser gives it (object dtype, NaN where missing), whatever its storage."""
    if not is_arrow_text(values):
        return values
    return pd.Series(values.to_numpy(dtype=object, na_value=np.nan), index=values.index, name=values.name)


#: _plain_numbers' last answers, by the identity of the (immutable) pyarrow array they were computed on (kept,
#: so that its id cannot be reused): a loader asks up to three times about one column (the GPU count).
_PLAIN: dict[int, tuple[Any, tuple[np.ndarray, bool] | None]] = {}


def _plain_numbers(values: pd.Series) -> tuple[np.ndarray, bool] | None:
    """:func:`_parse_plain` of ``values``, remembered for the last few columns (a copy of the numbers each
    time: callers may write into theirs)."""
    if not is_arrow_text(values):
        return None
    arr = values.array.__arrow_array__()
    hit = _PLAIN.get(id(arr))
    if hit is None or hit[0] is not arr:
        if len(_PLAIN) >= 8:
            _PLAIN.clear()
        hit = _PLAIN[id(arr)] = (arr, _parse_plain(values))
    return None if hit[1] is None else (hit[1][0].copy(), hit[1][1])


def _parse_plain(values: pd.Series) -> tuple[np.ndarray, bool] | None:
    """(float64 values with NaN for nulls, whether every value is a whole number) of pyarrow-backed text
    when every present value is a plain number (see _PLAIN_DECIMAL), else None.

    Why: pandas parses object text one Python string at a time (4 s per column of a 1.75 M-row trace on
    a loaded machine); pyarrow's cast is vectorised and, for these plain values, gives the same doubles."""
    if not is_arrow_text(values):
        return None
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = values.array.__arrow_array__()
    present = arr.drop_null()
    if not len(present):
        return None
    if pc.max(pc.utf8_length(present)).as_py() > _FAST_MAX_CHARS:
        return None
    try:
        ints = _int_cast(arr)
        if ints is not None:
            return ints.to_numpy(zero_copy_only=False).astype(float), True
        if pc.all(pc.match_substring_regex(present, _PLAIN_INT)).as_py():
            return pc.cast(arr, pa.int64()).to_numpy(zero_copy_only=False).astype(float), True
        if not pc.all(pc.match_substring_regex(present, _PLAIN_DECIMAL)).as_py():
            return None
        num = pc.cast(arr, pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    # "-0.0": pandas' parser and pyarrow may disagree on the sign of a zero; let pandas decide
    if pc.any(pc.and_(pc.equal(num, 0.0), pc.starts_with(arr, "-"))).as_py():
        return None
    return num.to_numpy(zero_copy_only=False).astype(float), False


def _int_cast(arr):
    """``arr`` (pyarrow text) cast to int64 when that cast reads exactly the _PLAIN_INT values, else None.

    pyarrow's integer parser accepts ``-?[0-9]+`` (within int64; _parse_plain allows 15 characters) and
    hexadecimal ``0x1F`` / ``0X1F``, and refuses everything else (signs '+', spaces, exponents, other
    digits); so a successful cast of text without an 'x' or 'X' byte is a column of _PLAIN_INT values.
    Why: the pattern test costs more than the cast itself (1.75 M rows: 0.08 s against 0.05 s per column);
    the byte test is a few milliseconds. A column the cast refuses takes the pattern path as before."""
    import pyarrow as pa
    import pyarrow.compute as pc

    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    for chunk in chunks:
        data = chunk.buffers()[2]
        if data is not None and len(data) and bool(np.any((np.frombuffer(data, dtype=np.uint8) | 0x20) == 0x78)):
            return None  # an 'x' or 'X' somewhere in the buffer: perhaps hexadecimal
    try:
        return pc.cast(arr, pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


#: all_distinct's last answers, by the identity of the (immutable) pyarrow array they were computed on;
#: the array is kept so that its id cannot be reused. A loader asks three times about one job-id column.
_DISTINCT: dict[int, tuple[Any, bool]] = {}


def all_distinct(values: pd.Series) -> bool:
    """True when pyarrow-backed text holds no value twice (a missing value counts as one value); False
    when it does, or when ``values`` is not pyarrow-backed (unknown: the caller checks the slow way)."""
    if not is_arrow_text(values):
        return False
    import pyarrow.compute as pc

    arr = values.array.__arrow_array__()
    hit = _DISTINCT.get(id(arr))
    if hit is not None and hit[0] is arr:
        return hit[1]
    answer = _distinct_numbered(arr)
    if answer is None:
        answer = len(pc.unique(arr)) == len(arr)  # null counts once, as count_distinct(mode="all"); twice as fast
    _DISTINCT.clear()
    _DISTINCT[id(arr)] = (arr, answer)
    return answer


#: 10 ** 1 .. 10 ** 18: a whole number v >= 0 has 1 + (how many of these are <= v) decimal digits.
_POWERS_OF_TEN = 10 ** np.arange(1, 19, dtype=np.int64)


def arrow_numpy(values) -> np.ndarray:
    """A pyarrow Array or ChunkedArray (the result of a compute function on either) as a numpy array."""
    import pyarrow as pa

    return values.to_numpy(zero_copy_only=False) if isinstance(values, pa.Array) else values.to_numpy()


def _distinct_numbered(arr) -> bool | None:
    """Whether the ids of a pyarrow text array are all distinct, answered from integers when every id is
    one shared prefix followed by a canonical whole number (``ref-17``, ``job_42``, ``6141214``: no sign, no
    leading zero); None when they are not (or hold a null): the caller hashes the strings.

    Exact: the prefix is common and a canonical number has one spelling, so two ids are equal exactly when
    their numbers are. A number is canonical when its text is as long as its decimal digits (a sign, a
    leading zero or a space makes the text longer; arrow's cast refuses other text). Why: hashing 1.75 M
    strings costs 0.5-0.7 s on a loaded machine; here the prefix is cut as bytes, the rest cast once, and
    the numbers checked with one pass over a bitmap (or a sort when they are spread wide)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(arr)
    if n < 2 or arr.null_count:
        return None
    first = arr[0].as_py()
    prefix = first.rstrip("0123456789")
    if prefix == first:
        return None
    try:
        if prefix:
            if not pc.all(pc.starts_with(arr, prefix)).as_py():
                return None
            large = pa.types.is_large_string(arr.type)
            raw = pc.cast(arr, pa.large_binary() if large else pa.binary())  # the same bytes, cut as bytes
            arr = pc.cast(pc.binary_slice(raw, len(prefix.encode()), 1 << 30),
                          pa.large_string() if large else pa.string())
        ints = pc.cast(arr, pa.int64())
        lengths = pc.binary_length(arr)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    ints, lengths = arrow_numpy(ints), arrow_numpy(lengths)
    lo, hi = int(ints.min()), int(ints.max())
    if lo < 0:
        return None
    digits = np.ones(n, dtype=np.int64)
    for power in _POWERS_OF_TEN[_POWERS_OF_TEN <= hi]:
        digits += ints >= power
    if not np.array_equal(digits, lengths):
        return None
    if hi - lo < 8 * n:  # dense numbers (a counter): one bitmap
        seen = np.zeros(hi - lo + 1, dtype=bool)
        seen[ints - lo] = True
        return int(np.count_nonzero(seen)) == n
    ints = np.sort(ints)
    return not bool((ints[1:] == ints[:-1]).any())


def to_numeric(values: pd.Series) -> pd.Series:
    """``pd.to_numeric(values, errors="coerce")`` of CSV text, with the same result (dtype included: int64
    when every value is a whole number and none is missing) for pyarrow-backed text, computed fast."""
    fast = _plain_numbers(values)
    if fast is None:
        return pd.to_numeric(as_object_text(values), errors="coerce")
    num, whole = fast
    if whole and not np.isnan(num).any():
        return pd.Series(num.astype(np.int64), index=values.index, name=values.name)
    return pd.Series(num, index=values.index, name=values.name)


def as_number(values: pd.Series) -> tuple[pd.Series, pd.Series]:
    """Float values (NaN where missing or not a number) and a mask of present values that are text.

    Why: ``pd.to_numeric(errors="coerce")`` alone turns ``"two"`` into NaN, which would then be
    counted as *missing*; the report must say the value was there but is not a number.
    """
    if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
        num = pd.Series(values.to_numpy(dtype=float, na_value=np.nan), index=values.index)
        return num, pd.Series(False, index=values.index)
    fast = _plain_numbers(values)
    if fast is not None:  # every present value is a number: nothing is text
        return pd.Series(fast[0], index=values.index), pd.Series(False, index=values.index)
    obj = as_object_text(values).astype(object)
    num = pd.Series(np.asarray(pd.to_numeric(obj, errors="coerce"), dtype=float), index=values.index)
    text = np.zeros(len(obj), dtype=bool)
    candidates = (num.isna() & obj.notna()).to_numpy()
    if candidates.any():
        text[candidates] = (obj[candidates].astype(str).str.strip() != "").to_numpy(dtype=bool)
    return num, pd.Series(text, index=values.index)


class _Rejecter:
    """Applies masks in order; a row is counted once, under the first reason that applies."""

    def __init__(self, index: pd.Index, report: LoadReport):
        self.keep = pd.Series(True, index=index)
        self.report = report

    def __call__(self, mask: pd.Series, reason: str) -> None:
        mask = pd.Series(np.asarray(pd.Series(mask).fillna(False), dtype=bool), index=self.keep.index)
        hit = mask & self.keep
        self.report.reject(reason, int(hit.sum()))
        self.keep &= ~hit


def gpu_rejects(values: pd.Series, report: LoadReport, *, required: bool = True) -> pd.Series:
    """Count invalid GPU counts by reason; return the mask of rows to keep.

    ``required=False`` keeps missing counts (PAI without a task table: the workload layer fills them).
    """
    r = _Rejecter(values.index, report)
    _gpu_checks(values, r, required=required)
    return r.keep


def _gpu_checks(values: pd.Series, r: _Rejecter, *, required: bool) -> pd.Series:
    gpus, text = as_number(values)
    r(text, REASONS["gpu_text"])
    if required:
        r(gpus.isna(), REASONS["gpu_missing"])
    r(gpus < 0, REASONS["gpu_negative"])
    r(gpus == 0, REASONS["gpu_zero"])
    r(gpus > MAX_GPUS_PER_JOB, REASONS["gpu_huge"])
    r(gpus.notna() & (gpus % 1 != 0), REASONS["gpu_fraction"])
    return gpus


def _whole_to_int64(num: pd.Series) -> pd.Series:
    """``num.astype("Int64")`` for floats known to be whole numbers or NaN, built directly (the same
    values, mask and fill); pandas' cast re-checks every value (1.5 s for 1.75 M rows, loaded machine)."""
    values = num.to_numpy(dtype=float)
    mask = np.isnan(values)
    data = np.where(mask, 1.0, values).astype(np.int64)  # 1 where missing, as pandas' cast fills
    return pd.Series(pd.arrays.IntegerArray(data, mask), index=num.index, name=num.name)


def _to_int64(values: pd.Series, column: str, report: LoadReport, *, low: float = 0) -> pd.Series:
    """Nullable integers; values that are text, fractional or out of [low, MAX_GPUS_PER_JOB] become null
    (noted in the report) instead of failing the cast."""
    num, text = as_number(values)
    bad = text | (num.notna() & ((num % 1 != 0) | (num < low) | (num > MAX_GPUS_PER_JOB)))
    if bad.any():
        report.notes.append(f"{int(bad.sum())} invalid '{column}' value(s) (text, fractional or out of "
                            f"[{low:g}, {MAX_GPUS_PER_JOB}]) set to null")
        num = num.where(~bad)
    return _whole_to_int64(num)


def finalize(frame: pd.DataFrame, report: LoadReport, *, path: str | Path, sort: bool = True,
             gpus_required: bool = True, require_jobs: bool = False) -> JobTable:
    """Coerce to canonical dtypes, reject invalid rows (counted), rebase time zero, sort, validate.

    Rows are rejected, each under the first reason of REASONS that applies: missing job id, missing /
    non-numeric / out-of-bounds submit time, non-numeric / missing / negative / implausible duration,
    and invalid GPU counts (see the bounds above). The submit clock is absolute when any row has a
    ``submit_ts`` and the trace's own clock otherwise. Time zero is the earliest kept submission; ties
    keep file order. ``require_jobs`` (set by the file loaders) turns an empty trace, or one whose rows
    are all rejected, into a TraceError: every format treats "no job to replay" as an error.
    """
    frame = frame.copy(deep=False)  # columns are replaced below, never written into: the caller's frame stays as it is
    for col in REQUIRED_COLUMNS:
        if col not in frame:
            raise TraceError(path, f"loader produced no '{col}' column (internal error)")
    if require_jobs and report.rows_read == 0:
        raise TraceError(path, "no job rows (the trace is empty or holds only a header)")
    r = _Rejecter(frame.index, report)
    job_id = frame["job_id"]
    unique = all_distinct(job_id)  # pyarrow-backed ids are checked here, fast, instead of in validate
    job_id = frame["job_id"] = as_text(job_id)
    r(job_id.isna() | (job_id == ""), REASONS["missing_id"])

    ts = frame["submit_ts"]
    if not (isinstance(ts.dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_dtype(ts)):
        ts = pd.to_datetime(ts, errors="coerce", utc=True)
    elif ts.dt.tz is None:
        ts = ts.dt.tz_localize("UTC")
    else:
        ts = ts.dt.tz_convert("UTC")
    submit, submit_text = as_number(frame["submit_time"])
    if ts.notna().any():  # calendar clock
        r(ts.isna(), REASONS["missing_submit"])
        r((ts < MIN_SUBMIT_TS) | (ts >= MAX_SUBMIT_TS), REASONS["submit_range"])
        derived = (ts - ts[r.keep].min()).dt.total_seconds()
        submit = submit.where(submit.notna(), derived)
    else:  # the trace's own clock
        r(submit_text, REASONS["submit_text"])
        r(submit.isna(), REASONS["missing_submit"])
        r(~((submit >= 0) & (submit <= MAX_CLOCK_S)), REASONS["clock_range"])
    duration, duration_text = as_number(frame["duration"])
    r(duration_text, REASONS["duration_text"])
    r(duration.isna() | (duration < 0), REASONS["duration_missing"])
    r(duration > MAX_DURATION_S, REASONS["duration_huge"])
    gpus = _gpu_checks(frame["num_gpus"], r, required=gpus_required)
    keep = r.keep
    if keep.all():  # the common case: no row rejected, no row copied
        frame["submit_ts"], frame["submit_time"], frame["duration"] = ts, submit, duration
        frame["num_gpus"] = _whole_to_int64(gpus)  # validated: whole numbers in [1, MAX_GPUS_PER_JOB]
    else:
        frame = frame[keep]
        frame["submit_ts"] = ts[keep]
        frame["submit_time"] = submit[keep]
        frame["duration"] = duration[keep]
        frame["num_gpus"] = _whole_to_int64(gpus[keep])

    for col, dtype in REQUIRED_COLUMNS.items():
        if dtype == "string":
            frame[col] = as_text(frame[col])
        elif dtype == "float64" and frame[col].dtype != np.float64:
            frame[col] = frame[col].astype(float)
    for col, dtype in OPTIONAL_COLUMNS.items():
        if col not in frame:
            frame[col] = (null_text(frame.index) if dtype == "string"
                          else pd.Series(pd.NA, index=frame.index, dtype=dtype))
        elif dtype == "Int64":
            frame[col] = _to_int64(frame[col], col, report, low=1 if col == "num_nodes" else 0)
        else:
            frame[col] = as_text(frame[col])
    if sort and not frame["submit_time"].is_monotonic_increasing:  # a sorted trace stays as it is (stable)
        frame = frame.sort_values("submit_time", kind="stable")
    if len(frame):
        frame["submit_time"] = frame["submit_time"] - frame["submit_time"].iloc[0 if sort else frame["submit_time"].argmin()]
    extras = [c for c in frame.columns if c not in REQUIRED_COLUMNS and c not in OPTIONAL_COLUMNS]
    # the canonical order on a fresh 0..n-1 index, sharing the columns built above (frame[cols] and
    # reset_index would each copy all of them: seconds for 1.75 M rows)
    index = pd.RangeIndex(len(frame))
    frame = pd.DataFrame({c: frame[c].set_axis(index, copy=False)
                          for c in list(REQUIRED_COLUMNS) + list(OPTIONAL_COLUMNS) + extras}, index=index, copy=False)
    report.rows_kept = len(frame)
    report.check_balance()
    if require_jobs and report.rows_kept == 0:
        reasons = "; ".join(f"{k}: {v}" for k, v in sorted(report.rejected.items(), key=lambda kv: -kv[1]))
        raise TraceError(path, f"no usable job: all {report.rows_read} row(s) rejected or duplicate"
                         + (f" ({reasons})" if reasons else ""))
    validate(frame, path=path, ids_unique=unique)
    return JobTable(frame, report)


def validate(frame: pd.DataFrame, *, path: str | Path = "<table>", ids_unique: bool = False) -> None:
    """Raise TraceError naming the first offending row if the frame breaks the canonical contract.

    ``ids_unique``: the caller already knows the job ids are distinct (finalize checks pyarrow-backed ids
    before converting them; hashing 1.75 M Python strings again costs seconds)."""
    for col in REQUIRED_COLUMNS:
        if col not in frame:
            raise TraceError(path, f"missing required column '{col}'")
    if frame["job_id"].isna().any():
        row = int(np.flatnonzero(frame["job_id"].isna().to_numpy())[0])
        raise TraceError(path, "job_id is null", row=row, column="job_id")
    dup = None if ids_unique else frame["job_id"].duplicated()
    if dup is not None and dup.any():
        row = int(np.flatnonzero(dup.to_numpy())[0])
        raise TraceError(path, f"job_id {frame['job_id'].iloc[row]!r} is not unique", row=row, column="job_id")
    for col in ("submit_time", "duration"):
        values = frame[col].to_numpy(dtype=float)
        bad = ~np.isfinite(values) | (values < 0)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise TraceError(path, f"{col} must be a finite number >= 0, got {values[row]!r}", row=row, column=col)
