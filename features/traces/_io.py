"""Small helpers shared by the trace loaders: reading with clear errors, parsing with counted rejects."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

import pandas as pd

from features.jobtable import LoadReport, TraceError


def read_csv(path: str | Path, *, required: Iterable[str] = (), header: bool = True,
             names: list[str] | None = None, **kwargs) -> pd.DataFrame:
    """Read a CSV (optionally gzip) and check its columns, turning parser failures into TraceError."""
    path = Path(path)
    if not path.exists():
        raise TraceError(path, "file not found")
    try:
        frame = pd.read_csv(path, header=0 if header else None, names=names, low_memory=False, **kwargs)
    except pd.errors.EmptyDataError:
        raise TraceError(path, "file is empty") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        raise TraceError(path, f"not a readable CSV: {exc}") from None
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise TraceError(path, f"missing column(s) {missing}; found {list(frame.columns)}")
    return frame


def parse_datetimes(frame: pd.DataFrame, column: str, report: LoadReport, *, tz: str,
                    reason: str | None = None, unit: str | None = None) -> pd.Series:
    """Parse a time column to tz-aware UTC; unparseable non-empty values are counted as rejects later.

    Returns the parsed series (NaT where missing or unparseable). Callers decide whether NaT rejects
    the row; this function records how many non-empty values failed to parse.
    """
    raw = frame[column]
    if unit is not None:
        parsed = pd.to_datetime(pd.to_numeric(raw, errors="coerce"), unit=unit, utc=True)
    else:
        parsed = pd.to_datetime(raw, errors="coerce", format="mixed")
        if parsed.dt.tz is None:
            parsed = parsed.dt.tz_localize(tz, ambiguous="NaT", nonexistent="NaT")
        parsed = parsed.dt.tz_convert("UTC")
    failed = raw.notna() & parsed.isna()
    if failed.any() and reason:
        report.notes.append(f"{int(failed.sum())} value(s) of '{column}' could not be parsed as times")
    return parsed


def numeric(frame: pd.DataFrame, column: str) -> pd.Series:
    return pd.to_numeric(frame[column], errors="coerce")


def reject_where(frame: pd.DataFrame, mask: pd.Series, reason: str, report: LoadReport) -> pd.DataFrame:
    """Drop rows where mask holds, counting them under reason."""
    mask = mask.fillna(False).astype(bool)
    report.reject(reason, int(mask.sum()))
    return frame[~mask]


def drop_exact_duplicates(frame: pd.DataFrame, report: LoadReport) -> pd.DataFrame:
    dup = frame.duplicated(keep="first")
    report.duplicates_found = int(dup.sum())
    if report.duplicates_found:
        report.duplicates_action = "dropped (exact duplicate rows; first kept)"
    return frame[~dup]


def seconds_since_start(ts: pd.Series) -> pd.Series:
    """Seconds from the earliest timestamp (finalize rebases again after rejects)."""
    return (ts - ts.min()).dt.total_seconds()
